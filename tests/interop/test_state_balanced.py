"""Three replicas behind nginx (docs/deploy.md's block, as in
test_replicas.py, with a third replica added the same way) sharing
`[state]` on Debian's redis-server: one caller's 600 calls spread over
the replicas by the balancer, against a limit of 100/min, are let
through as one replica would let them (the bucket's 100, plus what it
earned while the test ran), the rest refused with `retryAfterMs`."""

from __future__ import annotations

import contextlib
import math
import secrets
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness
from test_replicas import nginx
from test_state import DEMO, TOKEN, post, redis


def test_one_callers_calls_over_three_replicas_behind_nginx_meet_one_limit():
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    ports = {"a": harness.free_port(), "b": harness.free_port(), "c": harness.free_port()}
    listen = harness.free_port()
    with redis() as rport, contextlib.ExitStack() as stack:
        for name, port in ports.items():
            config = Path(tempfile.mkdtemp()) / f"replica-{name}.toml"
            config.write_text(f"""
[front]
listen = "127.0.0.1:{port}"
replica = "{name}"
tokens = ["{TOKEN}"]

[state]
url = "redis://127.0.0.1:{rport}/0"
prefix = "{prefix}"
timeout = "2s"

[[middleware]]
type = "rate_limit"
scope = "principal"
rules = [ {{ tool = "add", rate = "100/min" }} ]
""")
            argv = [str(harness.MCP_CHAIN), "--config", str(config), "--log-level", "info", "--",
                    str(DEMO), harness.RUN_MARKER]
            stack.enter_context(harness.listening(argv, port, f"replica {name}"))
        stack.enter_context(nginx(ports, listen))

        def session() -> str:
            status, sid, _ = post(listen, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
            assert status == 200 and sid, status
            assert post(listen, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)[0] == 202
            return sid

        sessions = [session() for _ in range(12)]
        assert {s[:2] for s in sessions} == {"a-", "b-", "c-"}, "the balancer spread the sessions"

        def call(n: int) -> dict:
            sid = sessions[n % len(sessions)]
            _, _, answer = post(listen, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                         "params": {"name": "add", "arguments": {"a": n, "b": 1}}}, sid)
            assert answer is not None and answer.get("id") == n, answer
            return answer

        began = time.monotonic()
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(call, range(600)))
        elapsed = time.monotonic() - began
        allowed = [a for a in answers if "result" in a]
        refused = [a for a in answers if "error" in a]
        # The bucket holds 100 and earns 100/min: what the test's own
        # duration earned is the only tolerance (one replica would let as
        # many through).
        earned = math.ceil(elapsed * 100 / 60)
        assert 100 <= len(allowed) <= 100 + earned, (len(allowed), elapsed)
        assert len(allowed) + len(refused) == 600
        for answer in refused:
            data = answer["error"]["data"]
            assert data["reason"] == "rate_limited" and data["retryAfterMs"] > 0, answer
