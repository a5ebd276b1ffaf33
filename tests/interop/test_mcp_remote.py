"""mcp-remote, the most used stdio bridge, in front of mcp-chain's HTTP
front: a client that pipelines its first lines (initialize, then at once
notifications/initialized and tools/list) through it gets its answers, with
a server that takes its time to start (server-everything on node, one per
session). The front sends a new session's id on the headers of the
initialize answer's event stream at once, before its server has started,
so the lines that follow go out with it."""

from __future__ import annotations

import json
import subprocess
import threading

import harness

MCP_REMOTE = harness.NODE_MODULES / "mcp-remote/dist/proxy.js"

LINES = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def test_a_pipelined_session_through_mcp_remote_gets_its_answers():
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--", *harness.everything_argv()]
    with harness.listening(argv, port, "mcp-chain --listen"):
        stderr = harness.new_stderr_file("mcp-remote")
        with open(stderr, "w") as errlog:
            bridge = subprocess.Popen(
                [harness.NODE, str(MCP_REMOTE), f"http://127.0.0.1:{port}/mcp", "--transport", "http-only"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errlog,
            )
        assert bridge.stdin is not None and bridge.stdout is not None
        bridge.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in LINES))
        bridge.stdin.flush()
        answers: dict = {}
        # Every wait bounded: a bridge that hangs is ended, and the test fails.
        watchdog = threading.Timer(30, bridge.kill)
        watchdog.start()
        try:
            for raw in bridge.stdout:
                message = json.loads(raw)
                if message.get("id") in (1, 2):
                    answers[message["id"]] = message
                if len(answers) == 2:
                    break
        finally:
            watchdog.cancel()
            bridge.stdin.close()
            try:
                bridge.wait(10)
            except subprocess.TimeoutExpired:
                bridge.kill()
        assert answers[1]["result"]["serverInfo"]["name"] == "mcp-servers/everything", answers
        assert any(t["name"] == "echo" for t in answers[2]["result"]["tools"]), answers[2]
