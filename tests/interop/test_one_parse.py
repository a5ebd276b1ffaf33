"""One parse in, one write out, on every HTTP path: the same four-line
session (initialize, initialized, tools/list, a call: seven messages with
the three answers) through mcp-chain as a Streamable HTTP client, as the
HTTP front before a child, and as the front before a Streamable HTTP
server. With MCP_CHAIN_COUNT_LINES set, mcp-chain prints at exit how many
lines it parsed into messages and wrote from them: seven each, on every
path (tests/invariants.rs holds stdio to a child to the same)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import harness

DEMO = harness.REPO / "target/debug/mcp-chain-demo-server"
COUNT = {"MCP_CHAIN_COUNT_LINES": "1"}
SCRIPT = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "count", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
]
MESSAGES = len(SCRIPT) + 3


def counts(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "lines parsed" in line]
    assert lines, f"no counts printed:\n{stderr[-2000:]}"
    return lines[-1].split("mcp-chain: ", 1)[1]


def bridge(url: str, env: dict[str, str] | None = None) -> str:
    """The script through `mcp-chain -- URL` on stdio; its stderr."""
    run = subprocess.run(
        [str(harness.MCP_CHAIN), "--", url],
        input="".join(json.dumps(m) + "\n" for m in SCRIPT),
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2, 3] and all("result" in a for a in answers), run.stdout
    return run.stderr


def front(port: int, upstream: list[str], env: dict[str, str] | None = None):
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--shutdown-grace", "1s", "--", *upstream]
    return harness.listening(argv, port, f"front:{port}", env=env)


def test_a_streamable_http_client_parses_and_writes_each_message_once():
    port = harness.free_port()
    with front(port, [str(DEMO)]):
        stderr = bridge(f"http://127.0.0.1:{port}/mcp", COUNT)
    assert counts(stderr) == f"lines parsed {MESSAGES}, written {MESSAGES}"


def test_the_front_parses_and_writes_each_message_once():
    port = harness.free_port()
    with front(port, [str(DEMO)], COUNT) as stderr_file:
        bridge(f"http://127.0.0.1:{port}/mcp")
    assert counts(Path(stderr_file).read_text()) == f"lines parsed {MESSAGES}, written {MESSAGES}"


def test_the_front_before_a_remote_server_parses_and_writes_each_message_once():
    inner, outer = harness.free_port(), harness.free_port()
    with front(inner, [str(DEMO)]):
        with front(outer, [f"http://127.0.0.1:{inner}/mcp"], COUNT) as stderr_file:
            bridge(f"http://127.0.0.1:{outer}/mcp")
    assert counts(Path(stderr_file).read_text()) == f"lines parsed {MESSAGES}, written {MESSAGES}"
