"""The HTTP front against a hostile client and a hostile issuer: what
each finding of the second hostile review did, done again through the
binary. Each request is judged by its own token's scopes; answers from
the issuer are read only to their caps; tokens with extensions mcp-chain
does not understand are refused; the metrics endpoint answers only the
hosts the front does."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import harness
from oauth_fixture import OAuthFixture
from test_front_oauth import STATIC, Front, good, initialize, issuer, rpc  # noqa: F401 (issuer is a fixture)

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
        # The same scopes in another order, or with one no rule reads (a
        # refresh, a step-up): the same layers, so the session goes on.
        for scope in ("mcp:admin mcp:read", "mcp:admin mcp:read mcp:write"):
            again = good(issuer, front, scope=scope, jti=scope)
            status, _, body = front.request("POST", call, again, headers={"Mcp-Session-Id": admins})
            assert status == 200 and "result" in rpc(body), (scope, body)


def pid_running(config: Path) -> int:
    """The pid of the mcp-chain serving `config` (its path is unique to the test)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(config).encode() in argv and argv[0].endswith(b"mcp-chain"):
                return int(proc.name)
    raise AssertionError(f"no mcp-chain serving {config}")


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_an_introspection_answer_is_read_only_to_its_cap(issuer: OAuthFixture, tmp_path: Path):  # noqa: F811
    """A hostile introspection endpoint answers 200 MB: the front reads
    64 KiB of it, refuses the token as the issuer unavailable (503), and
    its memory does not grow by the answer's size."""
    front = Front(tmp_path, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front hostile]"):
        pid = pid_running(Path(front.argv[2]))
        before = peak_rss_mib(pid)
        issuer.state.introspect_bytes = 200 << 20
        for n in range(3):
            status, _, body = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, f"opaque-token-{n}")
            assert status == 503, (status, body)
        grown = peak_rss_mib(pid) - before
        initialize(front, STATIC)  # and the front still serves
    assert grown < 32, f"peak RSS grew {grown:.0f} MiB reading a 200 MB answer"


def test_a_failing_key_fetch_is_tried_once_a_minute_whatever_the_key_ids(issuer: OAuthFixture, tmp_path: Path):  # noqa: F811
    front = Front(tmp_path, issuer)
    issuer.state.jwks_status = 500
    with harness.listening(front.argv, front.port, "mcp-chain[front hostile]"):
        for n in range(8):
            token = issuer.state.mint({"sub": "mallory", "aud": front.url, "scope": "mcp:read"}, kid=f"made-up-{n}")
            status, _, body = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token)
            assert status == 503, (status, body)
    assert issuer.state.jwks_fetches == 1, f"{issuer.state.jwks_fetches} fetches of a failing key set"


def test_a_token_with_a_critical_extension_is_refused(issuer: OAuthFixture, tmp_path: Path):  # noqa: F811
    """RFC 7515 §4.1.11: an extension named in `crit` that the recipient
    does not understand makes the token invalid, however good the rest."""
    import jwt

    front = Front(tmp_path, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front hostile]"):
        claims = {"iss": issuer.state.base, "sub": "alice", "aud": front.url, "scope": "mcp:read",
                  "exp": int(time.time()) + 300}
        for crit in (["x-only-after-approval"], ["b64"], []):
            headers = {"kid": "k1", "crit": crit, **({crit[0]: True} if crit else {})}
            token = jwt.encode(claims, issuer.state.key(), algorithm="RS256", headers=headers)
            status, _, body = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token)
            assert status == 401, (crit, status, body)
        assert initialize(front, good(issuer, front))  # the same token without crit is good


def test_an_hmac_secret_shorter_than_its_hash_is_refused_by_check(tmp_path: Path):
    config = tmp_path / "c.toml"
    config.write_text('[upstream]\ncommand = "x"\n[front]\nlisten = "127.0.0.1:0"\npublic_url = "http://127.0.0.1:1/mcp"\n'
                      '[front.oauth]\nissuer = "http://127.0.0.1:1"\nhmac_secret = "sixteen-byte-key"\n')
    checked = subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(config)],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode != 0, checked.stdout
    said = checked.stdout + checked.stderr
    assert "hmac_secret: 16 bytes is too short" in said, said
    assert "sixteen-byte-key" not in said


def test_connections_past_max_connections_are_refused_and_the_front_goes_on(tmp_path: Path):
    """A client that opens connections and holds them: past
    `[front] max_connections` each new one is told 503 at once and
    closed; once some close, new ones are served again."""
    import socket

    harness.require_proxy_binary()
    port = harness.free_port()
    config = tmp_path / "front.toml"
    config.write_text(f'[upstream]\ncommand = "{harness.REPO / "target" / "debug" / "mcp-chain-demo-server"}"\n'
                      f'[front]\nlisten = "127.0.0.1:{port}"\nmax_connections = 4\n')
    argv = [str(harness.MCP_CHAIN), "--config", str(config)]
    with harness.listening(argv, port, "mcp-chain[front cap]") as stderr:
        # Connections are held until one is refused: harness.listening's
        # own probe may still hold a slot, so how many get in first is
        # the cap give or take that one; that the next is refused at once
        # is what is checked. A held one sends nothing (no answer comes);
        # a refused one is answered before it sends anything.
        held: list[socket.socket] = []
        reply = b""
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.settimeout(1.0)
            try:
                reply = s.recv(4096)
            except socket.timeout:
                held.append(s)
                continue
            s.close()
            if reply:
                break
        assert reply.startswith(b"HTTP/1.1 503"), reply
        assert b"too many connections" in reply and b"Retry-After: 1" in reply, reply
        # On a slow machine a refusal may have come after the second we
        # waited: accepted in order, every earlier one has its answer by now.
        late = []
        for s in held:
            s.settimeout(0.2)
            try:
                if s.recv(4096).startswith(b"HTTP/1.1 503"):
                    late.append(s)
            except socket.timeout:
                pass
        held = [s for s in held if s not in late]
        assert 3 <= len(held) <= 4, f"{len(held)} held under max_connections = 4"
        for s in held:
            s.close()

        def served() -> bool:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
            reply = s.recv(4096)
            s.close()
            return not reply.startswith(b"HTTP/1.1 503")

        assert harness.wait_until(served, 10, 0.1), "the front serves again once connections close"
        assert "connections past the cap are refused" in stderr.read_text()
