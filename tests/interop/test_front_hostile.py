"""The HTTP front against a hostile client and a hostile issuer: what
each finding of the second hostile review did, done again through the
binary. Each request is judged by its own token's scopes; answers from
the issuer are read only to their caps; tokens with extensions mcp-chain
does not understand are refused; the metrics endpoint answers only the
hosts the front does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import harness
from oauth_fixture import OAuthFixture
from test_front_oauth import Front, good, initialize, issuer, rpc  # noqa: F401 (issuer is a fixture)

POLICY = '\n[[middleware]]\ntype = "filter"\ntools = { deny = ["read_secret"] }\nunless = { scopes = ["mcp:admin"] }\n'
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
ROUTING = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "read_secret"}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "read_secret", "arguments": {}, "_meta": META}}


def guarded(tmp_path: Path, issuer: OAuthFixture) -> Front:  # noqa: F811
    front = Front(tmp_path, issuer)
    config = Path(front.argv[2])
    config.write_text(config.read_text() + POLICY)
    return front


def stateless_call(front: Front, token: str) -> dict[str, Any]:
    status, _, body = front.request("POST", CALL, token, headers=ROUTING)
    assert status == 200, body
    return rpc(body)


def test_each_2026_request_is_judged_by_its_own_tokens_scopes(issuer: OAuthFixture, tmp_path: Path):  # noqa: F811
    """One user, two clients: an admin-scoped one and a read-only one. The
    pool sessions the first fills were chosen for admin scopes; the second
    must never be served by them, in either order."""
    front = guarded(tmp_path, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front hostile]"):
        admin = good(issuer, front, scope="mcp:read mcp:admin")
        reader = good(issuer, front)
        # Admin first: two calls fill the pool (two sessions) with admin chains.
        for _ in range(3):
            assert "result" in stateless_call(front, admin)
        for _ in range(3):
            refused = stateless_call(front, reader)
            assert "error" in refused and "read_secret" in refused["error"]["message"], refused
        # And the admin is still exempt after the reader's pool exists.
        assert "result" in stateless_call(front, admin)
    with_reader_first = tmp_path / "second"
    with_reader_first.mkdir()
    front = guarded(with_reader_first, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front hostile]"):
        admin = good(issuer, front, scope="mcp:admin mcp:read")
        reader = good(issuer, front)
        for _ in range(3):
            assert "error" in stateless_call(front, reader)
        for _ in range(3):
            assert "result" in stateless_call(front, admin), "an admin is not judged by a reader's chain"


def test_a_session_is_not_driven_by_a_token_of_other_scopes(issuer: OAuthFixture, tmp_path: Path):  # noqa: F811
    """A 2025-era session opened by an admin token: the same subject's
    read-only token is told there is no such session (404), so its
    client starts one of its own, judged by its own scopes; and the
    reverse, a step-up, does not widen a reader's session either."""
    front = guarded(tmp_path, issuer)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_secret", "arguments": {}}}
    with harness.listening(front.argv, front.port, "mcp-chain[front hostile]"):
        admin = good(issuer, front, scope="mcp:read mcp:admin")
        reader = good(issuer, front)
        admins = initialize(front, admin)
        status, _, body = front.request("POST", call, admin, headers={"Mcp-Session-Id": admins})
        assert status == 200 and "result" in rpc(body), body
        status, _, body = front.request("POST", call, reader, headers={"Mcp-Session-Id": admins})
        assert status == 404, (status, body)
        readers = initialize(front, reader)
        status, _, body = front.request("POST", call, reader, headers={"Mcp-Session-Id": readers})
        assert status == 200 and "error" in rpc(body), body
        status, _, body = front.request("POST", call, admin, headers={"Mcp-Session-Id": readers})
        assert status == 404, (status, body)
        # The same scopes in another order, from a refreshed token: the session goes on.
        again = good(issuer, front, scope="mcp:admin mcp:read", jti="2")
        status, _, body = front.request("POST", call, again, headers={"Mcp-Session-Id": admins})
        assert status == 200 and "result" in rpc(body), body
