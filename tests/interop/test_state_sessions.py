"""`[front] max_sessions_per_principal`: how many sessions one caller may
hold, on one replica and, with `[state]` on Debian's redis-server, across
replicas. A caller over its share is refused 429 with `Retry-After`,
another caller is not; a session ended (DELETE, or its replica stopping)
gives its place back at once; the keys name no caller and no session id in
clear; Redis lost: `refuse` refuses new sessions 503 (the open ones go
on), `local` counts on each replica alone; each says the loss (once a
minute)."""

from __future__ import annotations

import contextlib
import http.client
import json
import secrets
import tempfile
from pathlib import Path

import harness
from test_state import redis, redis_keys, replica

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef01"


def config(extra: str = "", state: str = "") -> Path:
    path = Path(tempfile.mkdtemp()) / "replica.toml"
    path.write_text(f"""
[front]
tokens = [{{ name = "alice", token = "{ALICE}" }}, {{ name = "bob", token = "{BOB}" }}]
max_sessions_per_principal = 2
{extra}
{state}
""")
    return path


def state(redis_port: int, prefix: str, on_unavailable: str = "refuse") -> str:
    return f"""
[state]
url = "redis://127.0.0.1:{redis_port}/0"
prefix = "{prefix}"
timeout = "2s"
on_unavailable = "{on_unavailable}"
"""


def request(port: int, token: str, method: str, body: dict | None = None,
            session: str | None = None) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {token}"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request(method, "/mcp", json.dumps(body) if body else None, headers)
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, text


def open_session(port: int, token: str) -> tuple[int, dict[str, str], str]:
    """An initialize: (status, headers, body); the session is in the headers."""
    return request(port, token, "POST", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})


def opened(port: int, token: str) -> str:
    status, headers, body = open_session(port, token)
    assert status == 200, (status, body)
    session = headers["mcp-session-id"]
    assert request(port, token, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    return session


def refused_for_caller(port: int, token: str) -> None:
    status, headers, body = open_session(port, token)
    assert status == 429, (status, body)
    assert headers.get("retry-after") == "5" and "max_sessions_per_principal" in body, (headers, body)


def works(port: int, token: str, session: str) -> bool:
    status, _, body = request(port, token, "POST", {"jsonrpc": "2.0", "id": 9, "method": "ping"}, session)
    return status == 200 and '"result"' in body


def test_one_replica_caps_each_caller_alone():
    """No `[state]`: counted on the replica. Alice's third session is
    refused while Bob opens his; a DELETE gives Alice's place back."""
    with replica(config()) as (port, _):
        first, _ = opened(port, ALICE), opened(port, ALICE)
        refused_for_caller(port, ALICE)
        assert opened(port, BOB), "the cap is each caller's own"
        assert request(port, ALICE, "DELETE", session=first)[0] == 200
        assert opened(port, ALICE), "an ended session's place is given back"
        refused_for_caller(port, ALICE)


def test_replicas_count_one_callers_sessions_as_one():
    """Two replicas on one Redis: Alice's sessions on A and B count
    together; B refuses the one A would; a session ended on A, or A
    stopping, frees her places on B at once (not when the leases end). The
    keys name neither the token nor a session."""
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    with redis() as rport, replica(config(state=state(rport, prefix))) as (b, _):
        with contextlib.ExitStack() as a_up:
            a, _ = a_up.enter_context(replica(config(state=state(rport, prefix))))
            on_a, on_b = opened(a, ALICE), opened(b, ALICE)
            refused_for_caller(a, ALICE)
            refused_for_caller(b, ALICE)
            keys = redis_keys(rport, prefix)
            assert any("sessions:" in k for k in keys), keys
            for clear in ("alice", ALICE, on_a, on_b):
                assert not any(clear in k for k in keys), (clear, keys)
            assert opened(b, BOB) and opened(a, BOB), "Bob's count is his own"
            assert request(a, ALICE, "DELETE", session=on_a)[0] == 200
            # The place comes back with the DELETE's own round trip to
            # Redis, a moment after its answer.
            assert harness.wait_until(lambda: open_session(b, ALICE)[0] == 200, 10, 0.1)
            refused_for_caller(b, ALICE)
            assert works(b, ALICE, on_b)
            a_up.close()
        # A stopped: the Bob session it held is given back, so Bob has
        # room for two on B with the one he holds there.
        assert opened(b, BOB)
        status, _, _ = open_session(b, BOB)
        assert status == 429


def test_redis_lost_refuse_refuses_new_sessions_local_counts_alone():
    """Redis gone: `refuse` answers a new session 503 (fail closed) while
    the open ones keep working; `local` opens it, counted on the replica
    alone, and says so."""
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    rport = harness.free_port()
    with contextlib.ExitStack() as redis_up:
        redis_up.enter_context(redis(rport))
        with replica(config(state=state(rport, prefix))) as (refusing, refusing_log), \
                replica(config(state=state(rport, prefix, "local"))) as (local, local_log):
            held = opened(refusing, ALICE)
            redis_up.close()
            status, headers, body = open_session(refusing, BOB)
            assert status == 503 and headers.get("retry-after") == "5", (status, body)
            assert "[state] is unavailable" in body, body
            assert works(refusing, ALICE, held), "an open session goes on"
            assert "[state] unavailable" in refusing_log.read_text() and "refuse" in refusing_log.read_text()
            first = opened(local, BOB)
            opened(local, BOB)
            refused_for_caller(local, BOB)
            assert works(local, BOB, first)
            assert "[state] unavailable" in local_log.read_text() and '"local"' in local_log.read_text()
