"""The official MCP conformance suite (server scenarios) against
server-everything through mcp-chain, compared with the same run direct.

The suite speaks Streamable HTTP only, so supergateway turns the stdio command
line into a Streamable HTTP endpoint on 127.0.0.1 (stateful: one child per
session). The suite needs Node >= 22, installed from npm by install.sh.

Which scenarios apply, and why the others do not, is in README.md here; the
lists below are the machine-checked form of that table.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

import harness
from harness import CONFORMANCE, EMPTY, LOOPBACK_SHIM, NODE, NODE22, SUPERGATEWAY, everything_argv, launch_argv

# Scenarios that test generic protocol behaviour any server with these
# features must show; server-everything passes them, so they must pass
# through mcp-chain too.
APPLICABLE = {
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "resources-list",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
}
# Scenarios about the HTTP transport itself: they test supergateway, not the
# stdio relay behind it. Run and compared, not required to pass.
TRANSPORT_ONLY = {"server-sse-multiple-streams", "server-sse-polling", "dns-rebinding-protection"}
# tools-call-simple-text and tools-call-error call tools server-everything
# lacks (`test_simple_text`, `test_error_handling`) and pass only because its
# unknown-tool answer is an isError result with text: compared, not required.
# Every other scenario calls fixtures that exist only in the suite's own
# reference server (tools `test_image_content`, prompts `test_simple_prompt`,
# resources `test://static-text`, …): they fail against server-everything
# direct and through the proxy alike, and the comparison checks exactly that.

SUITE_TIMEOUT_S = 300
PORT_WAIT_S = 20


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    def is_open():
        if proc.poll() is not None:
            raise AssertionError(f"supergateway exited with {proc.returncode}")
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex(("127.0.0.1", port)) == 0

    assert harness.wait_until(is_open, timeout, 0.1), f"supergateway not listening on {port} after {timeout}s"


def run_suite(label: str, server_argv: list[str], tmp: Path) -> dict[str, dict[str, str]]:
    """Expose server_argv over Streamable HTTP and run every server scenario:
    {scenario: {check id: status}}."""
    port = harness.free_port()
    stderr = harness.new_stderr_file(f"supergateway[{label}]")
    gateway = [
        NODE,
        "--require",
        str(LOOPBACK_SHIM),
        str(SUPERGATEWAY),
        "--stdio",
        shlex.join(server_argv),
        "--outputTransport",
        "streamableHttp",
        "--stateful",
        "--port",
        str(port),
        "--logLevel",
        "info",
    ]
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            gateway,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            start_new_session=True,
            env={**os.environ, **harness.chain_env()},
            cwd=harness.REPO,
        )
    try:
        wait_for_port(port, proc, PORT_WAIT_S)
        return suite(label, f"http://127.0.0.1:{port}/mcp", tmp)
    finally:
        with_pgid = proc.pid
        if proc.poll() is None:
            os.killpg(with_pgid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(with_pgid, signal.SIGKILL)
                proc.wait(5)


def suite(label: str, url: str, tmp: Path) -> dict[str, dict[str, str]]:
    """Every server scenario against `url`: {scenario: {check id: status}}."""
    out_dir = tmp / label
    suite_log = harness.new_stderr_file(f"conformance[{label}]")
    with open(suite_log, "w") as log:
        subprocess.run(
            [str(NODE22), str(CONFORMANCE), "server", "--url", url, "-o", str(out_dir)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=SUITE_TIMEOUT_S,
            cwd=tmp,
        )
    results: dict[str, dict[str, str]] = {}
    for checks in sorted(out_dir.glob("server-*/checks.json")):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name).removeprefix("server-")
        results[scenario] = {c["id"]: c["status"] for c in json.loads(checks.read_text())}
    assert results, f"the conformance suite produced no results in {out_dir}"
    return results


def passed(results: dict[str, dict[str, str]]) -> set[str]:
    """Scenarios none of whose checks failed or warned. The suite marks a
    check INFO when the server took an option the specification leaves to
    it (server-sse-multiple-streams: "Server returned JSON for all requests
    - SSE streaming is optional"): that is no failure."""
    ok = {"SUCCESS", "INFO"}
    return {s for s, checks in results.items() if checks and all(v in ok for v in checks.values())}


@pytest.mark.slow
def test_conformance_through_mcp_chain_matches_direct(tmp_path: Path):
    harness.require_chain(EMPTY)
    marker = f"interop-marker-{uuid.uuid4().hex}"
    direct = run_suite("direct", everything_argv(marker), tmp_path)
    missing = APPLICABLE - passed(direct)
    assert not missing, f"server-everything itself fails applicable scenarios: {sorted(missing)}"
    if harness.DIRECT:
        return
    proxied = run_suite("mcp-chain", launch_argv(everything_argv(marker)), tmp_path)
    missing = APPLICABLE - passed(proxied)
    assert not missing, f"applicable scenarios failing through mcp-chain: {sorted(missing)}"
    differences = {
        s: {"direct": direct.get(s), "mcp-chain": proxied.get(s)}
        for s in sorted(set(direct) | set(proxied))
        if direct.get(s) != proxied.get(s)
    }
    assert not differences, "conformance results differ through mcp-chain:\n" + json.dumps(differences, indent=2)
    assert harness.wait_until(lambda: not harness.processes_with(marker), 10), "server processes left running"


@pytest.mark.slow
def test_conformance_directly_against_the_http_front(tmp_path: Path):
    """The suite against `mcp-chain --listen` itself, no bridge, with
    server-everything (stdio) behind it, compared with server-everything's
    own Streamable HTTP mode: every scenario that passes there passes
    through mcp-chain's front."""
    harness.require_chain(EMPTY)
    if harness.DIRECT:
        pytest.skip("the front is mcp-chain's")
    with harness.everything_served("streamableHttp") as url:
        own = suite("server-everything-http", url, tmp_path)
    marker = f"interop-marker-{uuid.uuid4().hex}"
    port = harness.free_port()
    front = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--shutdown-grace", "1s", "--", *everything_argv(marker)]
    with harness.listening(front, port, "mcp-chain --listen"):
        through = suite("mcp-chain-front", f"http://127.0.0.1:{port}/mcp", tmp_path)
    print("scenario | server-everything's HTTP | through mcp-chain --listen")
    for s in sorted(set(own) | set(through)):
        print(s, "|", "pass" if s in passed(own) else "fail", "|", "pass" if s in passed(through) else "fail")
    lost = passed(own) - passed(through)
    assert not lost, f"scenarios passing against server-everything's HTTP but not through the front: {sorted(lost)}"
    assert harness.wait_until(lambda: not harness.processes_with(marker), 10), "server processes left running"
