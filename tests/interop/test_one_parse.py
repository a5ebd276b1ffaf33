"""One parse in, one write out, on every HTTP path: the same four-line
session (initialize, initialized, tools/list, a call: seven messages with
the three answers) through mcp-chain as a Streamable HTTP client, as the
HTTP front before a child, and as the front before a Streamable HTTP
server. With MCP_CHAIN_COUNT_LINES set, mcp-chain prints at exit how many
lines it parsed into messages and wrote from them: seven each, on every
path (tests/invariants.rs holds stdio to a child to the same).

Where mcp-chain sends messages of its own (a gateway learning what its
servers list, a shared pool initializing its servers), the server is run
behind `tee`, and the count is what crossed each pipe: every message
parsed once and written once all the same (a gateway of two servers, the
shared pool, a 2026-07-28 request without a session)."""

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
    assert sorted(a["id"] for a in answers) == [1, 2, 3] and all("result" in a for a in answers), run.stdout
    return run.stderr


def front(port: int, upstream: list[str], env: dict[str, str] | None = None, config: Path | None = None):
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--shutdown-grace", "1s"]
    argv += ["--config", str(config)] if config else []
    return harness.listening(argv + ["--", *upstream], port, f"front:{port}", env=env)


def teed(tap: Path) -> list[str]:
    """The demo server, with every line it reads and writes copied to
    files in `tap` (one pair per process: a pool runs several)."""
    tap.mkdir(exist_ok=True)
    return ["sh", "-c", f'tee -a "{tap}/in.$$" | "{DEMO}" | tee -a "{tap}/out.$$"']


def tapped(tap: Path, side: str) -> list[dict]:
    """What crossed the tapped servers' pipes: `in` (mcp-chain wrote) or
    `out` (mcp-chain parsed)."""
    return [json.loads(line) for f in sorted(tap.glob(f"{side}.*")) for line in f.read_text().splitlines()]


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


def test_a_gateway_parses_and_writes_each_message_once(tmp_path):
    """One client session of four messages, two servers behind a
    gateway: each message the client sent, each the servers said (the
    gateway's own listings included) parsed once; each the client got,
    each the servers got, written once."""
    a, b = tmp_path / "a", tmp_path / "b"
    config = tmp_path / "gateway.toml"
    config.write_text("".join(f"[servers.{n}]\ncommand = {json.dumps(c[0])}\nargs = {json.dumps(c[1:])}\n" for n, c in [("a", teed(a)), ("b", teed(b))]))
    script = [*SCRIPT[:3], {**SCRIPT[3], "params": {"name": "a__add", "arguments": {"a": 1, "b": 2}}}]
    run = subprocess.run(
        [str(harness.MCP_CHAIN), "--config", str(config)],
        input="".join(json.dumps(m) + "\n" for m in script),
        capture_output=True, text=True, timeout=60, env={**os.environ, **COUNT},
    )
    answers = sorted((json.loads(line) for line in run.stdout.splitlines()), key=lambda x: x["id"])
    assert [x["id"] for x in answers] == [1, 2, 3] and answers[2]["result"]["structuredContent"] == {"sum": 3}, run.stdout
    assert [m.get("method") for m in tapped(a, "in")].count("tools/call") == 1
    assert "tools/call" not in [m.get("method") for m in tapped(b, "in")]
    parsed = len(script) + len(tapped(a, "out")) + len(tapped(b, "out"))
    written = len(answers) + len(tapped(a, "in")) + len(tapped(b, "in"))
    assert counts(run.stderr) == f"lines parsed {parsed}, written {written}"


def test_the_shared_pool_parses_and_writes_each_message_once(tmp_path):
    """A session of the front in shared mode: its messages, and each pool
    server's initialize and answers, parsed once and written once (no
    second write on the way through the pool's own relay)."""
    config = tmp_path / "shared.toml"
    config.write_text('[front]\nupstream_sessions = "shared"\n')
    port, tap = harness.free_port(), tmp_path / "pool"
    with front(port, teed(tap), COUNT, config) as stderr_file:
        bridge(f"http://127.0.0.1:{port}/mcp")
    sent = [m.get("method") for m in tapped(tap, "in")]
    assert sent.count("tools/call") == 1 and sent.count("initialize") >= 1, sent
    parsed = MESSAGES - 3 + len(tapped(tap, "out"))
    written = 3 + len(tapped(tap, "in"))
    assert counts(Path(stderr_file).read_text()) == f"lines parsed {parsed}, written {written}"


def test_a_2026_request_without_a_session_is_parsed_and_written_once(tmp_path):
    """Requests of a 2026-07-28 client (no session) go through a pool
    session under ids of the front's: the client's id is put back before
    the answer is written, not by writing it again."""
    import urllib.request

    port, tap = harness.free_port(), tmp_path / "modern"
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    requests = [
        ({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}}, {"Mcp-Method": "tools/list"}),
        ({"jsonrpc": "2.0", "id": "seven", "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {**meta, "progressToken": "p"}}},
         {"Mcp-Method": "tools/call", "Mcp-Name": "add"}),
    ]
    with front(port, teed(tap), COUNT) as stderr_file:
        for body, headers in requests:
            post = urllib.request.Request(
                f"http://127.0.0.1:{port}/mcp", data=json.dumps(body).encode(), method="POST",
                headers={"Content-Type": "application/json", "Accept": "application/json", "MCP-Protocol-Version": "2026-07-28", **headers},
            )
            with urllib.request.urlopen(post, timeout=30) as response:
                answer = json.loads(response.read())
            assert answer["id"] == body["id"] and "result" in answer, answer
    sent = tapped(tap, "in")
    assert [m["id"] for m in sent if "id" in m and m.get("method") in ("tools/list", "tools/call")] != [7, "seven"], "the server saw the client's ids"
    parsed = len(requests) + len(tapped(tap, "out"))
    written = len(requests) + len(sent)
    assert counts(Path(stderr_file).read_text()) == f"lines parsed {parsed}, written {written}"
