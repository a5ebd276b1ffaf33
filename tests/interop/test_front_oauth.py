"""The HTTP front as an OAuth resource server: it publishes its protected
resource metadata, lets in only access tokens its issuer made for it, and
binds each session to the caller the token names. The issuer is
oauth_fixture.py (RS256 keys at /jwks, introspection at /introspect);
each refusal is a request an attacker would try."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import harness
from oauth_fixture import OAuthFixture

DEMO = harness.REPO / "target" / "debug" / "mcp-chain-demo-server"
STATIC = "static-token-of-the-team-0123456789"


class Front:
    """mcp-chain --listen with [front.oauth], its issuer, its audit."""

    def __init__(self, tmp: Path, issuer: OAuthFixture, extra_front: str = "", public: bool = True,
                 upstream: str = f'command = "{DEMO}"') -> None:
        self.port = harness.free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.audit = tmp / "audit.jsonl"
        public_url = f'public_url = "{self.url}"' if public else ""
        audience = "" if public else f'audience = "{self.url}"'
        config = tmp / "front.toml"
        config.write_text(f"""
[upstream]
{upstream}
[front]
listen = "127.0.0.1:{self.port}"
{public_url}
tokens = [{{ name = "team", token = "{STATIC}" }}]
{extra_front}
[front.oauth]
issuer = "{issuer.state.base}"
{audience}
scopes_supported = ["mcp:read", "mcp:admin"]
required_scopes = ["mcp:read"]
introspection = {{ url = "{issuer.state.base}/introspect", client_id = "front" }}
[[middleware]]
type = "audit"
path = "{self.audit}"
""")
        self.argv = [str(harness.MCP_CHAIN), "--config", str(config), "--log-level", "info"]

    def request(self, method: str, body: Any = None, token: str | None = None, path: str = "/mcp",
                headers: dict[str, str] | None = None) -> tuple[int, Any, str]:
        all_headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        all_headers.update(headers or {})
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data, all_headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers, response.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()


def initialize(front: Front, token: str) -> str:
    status, headers, body = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, token)
    assert status == 200, body
    session = headers["mcp-session-id"]
    front.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, token,
                  headers={"Mcp-Session-Id": session})
    return session


def rpc(body: str) -> dict[str, Any]:
    return json.loads(body.split("data: ", 1)[1] if body.startswith(("event:", "id:", "data:")) else body)


@pytest.fixture
def issuer():
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: these cases test the proxy's own front")
    harness.require_proxy_binary()
    with OAuthFixture() as fixture:
        yield fixture


def good(issuer: OAuthFixture, front: Front, **claims: Any) -> str:
    return issuer.state.mint({"sub": "alice", "aud": front.url, "scope": "mcp:read", **claims})


def test_the_metadata_says_where_to_log_in_and_a_401_points_there(issuer: OAuthFixture, tmp_path: Path):
    front = Front(tmp_path, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            status, _, body = front.request("GET", path=path)
            assert status == 200, (path, body)
            doc = json.loads(body)
            assert doc["resource"] == front.url and doc["authorization_servers"] == [issuer.state.base]
            assert doc["scopes_supported"] == ["mcp:read", "mcp:admin"] and doc["bearer_methods_supported"] == ["header"]
        status, headers, _ = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert status == 401
        challenge = headers["WWW-Authenticate"]
        assert f'resource_metadata="http://127.0.0.1:{front.port}/.well-known/oauth-protected-resource/mcp"' in challenge
        assert 'scope="mcp:read"' in challenge


REFUSALS = {
    "malformed": (lambda i, f: "not.a.jwt", 401, "invalid_token"),
    "expired": (lambda i, f: good(i, f, exp=int(time.time()) - 3600), 401, "expired"),
    "not yet valid": (lambda i, f: good(i, f, nbf=int(time.time()) + 3600), 401, "not valid yet"),
    "wrong issuer": (lambda i, f: good(i, f, iss="http://evil.example"), 401, "another issuer"),
    "another resource": (lambda i, f: good(i, f, aud="http://other.example/mcp"), 401, "another resource"),
    "alg none": (lambda i, f: none_token(f), 401, "invalid_token"),
    "hmac with the public key": (lambda i, f: hmac_with_public_key(i, f), 401, "algorithm"),
    "unknown kid": (lambda i, f: i.state.mint({"sub": "x", "aud": f.url, "scope": "mcp:read"}, kid="nope"), 401, "key"),
    "another key": (lambda i, f: other_key_token(i, f), 401, "signature"),
    "missing scope": (lambda i, f: good(i, f, scope="mcp:other"), 403, "insufficient_scope"),
    "revoked opaque": (lambda i, f: "opaque-revoked", 401, "not active"),
}


def none_token(front: Front) -> str:
    import base64

    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return part({"alg": "none", "typ": "JWT"}) + "." + part({"sub": "mallory", "aud": front.url, "scope": "mcp:read",
                                                            "exp": int(time.time()) + 300}) + "."


def hmac_with_public_key(issuer: OAuthFixture, front: Front) -> str:
    import hmac, hashlib, base64
    from cryptography.hazmat.primitives import serialization

    pem = issuer.state.key().public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo)

    def part(obj: dict[str, Any]) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=")

    signing = part({"alg": "HS256", "kid": "k1"}) + b"." + part(
        {"iss": issuer.state.base, "sub": "mallory", "aud": front.url, "scope": "mcp:read", "exp": int(time.time()) + 300})
    mac = base64.urlsafe_b64encode(hmac.new(pem, signing, hashlib.sha256).digest()).rstrip(b"=")
    return (signing + b"." + mac).decode()


def other_key_token(issuer: OAuthFixture, front: Front) -> str:
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return issuer.state.mint({"sub": "mallory", "aud": front.url, "scope": "mcp:read"}, key=other)


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_bad_token_is_refused(issuer: OAuthFixture, tmp_path: Path, case: str):
    make, status, says = REFUSALS[case]
    front = Front(tmp_path, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        token = make(issuer, front)
        got, headers, body = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token)
        assert got == status, (case, got, body)
        challenge = headers.get("WWW-Authenticate", "")
        assert "resource_metadata=" in challenge and (says in challenge or says in body), (case, challenge, body)
        if case == "missing scope":
            assert 'scope="mcp:read"' in challenge
    if case == "unknown kid":
        assert issuer.state.jwks_fetches <= 2, "one refetch for an unknown key, not one per request"


def test_a_token_in_the_query_string_is_refused(issuer: OAuthFixture, tmp_path: Path):
    front = Front(tmp_path, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        token = good(issuer, front)
        status, _, body = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                        path=f"/mcp?access_token={token}")
        assert status == 400 and "query string" in body


def test_a_session_belongs_to_its_principal(issuer: OAuthFixture, tmp_path: Path):
    front = Front(tmp_path, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        alice = good(issuer, front)
        session = initialize(front, alice)
        listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        for other in (good(issuer, front, sub="bob"), STATIC):
            for method, body in (("POST", listed), ("GET", None), ("DELETE", None)):
                status, _, _ = front.request(method, body, other, headers={"Mcp-Session-Id": session})
                assert status == 404, (method, other[:8])
        # Alice again, with a new token (a refresh): her session goes on.
        status, _, body = front.request("POST", listed, good(issuer, front, jti="2"),
                                        headers={"Mcp-Session-Id": session})
        assert status == 200 and rpc(body)["result"]["tools"], body
        # Her token expiring mid-session: 401, then on with a fresh one.
        status, _, _ = front.request("POST", listed, good(issuer, front, exp=int(time.time()) - 600),
                                     headers={"Mcp-Session-Id": session})
        assert status == 401
    lines = harness.jsonl(front.audit)
    assert lines and all(line.get("subject") == "alice" for line in lines), lines
    assert all("mcp:read" in line.get("scopes", "") for line in lines)
    assert alice not in front.audit.read_text()


def test_static_tokens_and_introspected_tokens_work_beside_jwts(issuer: OAuthFixture, tmp_path: Path):
    issuer.state.introspected["opaque-good"] = {"active": True, "sub": "carol", "scope": "mcp:read",
                                                "exp": int(time.time()) + 300}
    front = Front(tmp_path, issuer)
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        for token in (STATIC, "opaque-good"):
            status, _, body = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, token)
            assert status == 200, (token, body)


def test_forwarded_headers_count_only_from_a_trusted_proxy(issuer: OAuthFixture, tmp_path: Path):
    forged = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"}
    front = Front(tmp_path, issuer, public=False)
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        _, _, body = front.request("GET", path="/.well-known/oauth-protected-resource/mcp", headers=forged)
        assert json.loads(body)["resource"] == front.url, "an untrusted peer's X-Forwarded-Host is not believed"
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    front = Front(trusted, issuer, extra_front='trusted_proxies = ["127.0.0.1"]', public=False)
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        _, _, body = front.request("GET", path="/.well-known/oauth-protected-resource/mcp", headers=forged)
        assert json.loads(body)["resource"] == "https://evil.example/mcp", "a trusted proxy's is"


def test_policy_by_caller_scopes_subjects_and_per_caller_limits(issuer: OAuthFixture, tmp_path: Path):
    policy = """
[[middleware]]
type = "filter"
tools = { deny = ["read_secret"] }
unless = { scopes = ["mcp:admin"] }
[[middleware]]
type = "rate_limit"
scope = "principal"
rules = [ { tool = "echo", rate = "2/min" } ]
when = { subjects = ["bob"] }
"""
    front = Front(tmp_path, issuer)
    config = front.argv[2]
    Path(config).write_text(Path(config).read_text() + policy)
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        alice = good(issuer, front, scope="mcp:read mcp:admin")
        bob = good(issuer, front, sub="bob")

        def names(token: str, session: str) -> set[str]:
            _, _, body = front.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, token,
                                       headers={"Mcp-Session-Id": session})
            return {t["name"] for t in rpc(body)["result"]["tools"]}

        def call(token: str, session: str, tool: str, rid: int) -> dict[str, Any]:
            _, _, body = front.request("POST", {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
                "name": tool, "arguments": {"text": "hi"}}}, token, headers={"Mcp-Session-Id": session})
            return rpc(body)

        sa, sb = initialize(front, alice), initialize(front, bob)
        assert "read_secret" in names(alice, sa) and "read_secret" not in names(bob, sb)
        assert "result" in call(alice, sa, "read_secret", 3)
        assert "error" in call(bob, sb, "read_secret", 3), "bob is refused what alice may call"
        # Bob's echo limit is his across his sessions; alice has none.
        sb2 = initialize(front, bob)
        answers = [call(bob, s, "echo", 10 + n) for n, s in enumerate((sb, sb2, sb))]
        assert ["error" in a for a in answers] == [False, False, True], answers
        assert answers[2]["error"]["code"] == 429
        assert all("result" in call(alice, sa, "echo", 20 + n) for n in range(4))
    subjects = {line.get("subject") for line in harness.jsonl(front.audit)}
    assert subjects == {"alice", "bob"}, subjects


def test_the_callers_token_never_reaches_the_server(issuer: OAuthFixture, tmp_path: Path):
    from http_fixture import Fixture

    with Fixture() as server:
        front = Front(tmp_path, issuer, upstream=f'url = "{server.url}"')
        with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
            token = good(issuer, front)
            session = initialize(front, token)
            status, _, body = front.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "json", "arguments": {}}}, token, headers={"Mcp-Session-Id": session})
            assert status == 200, body
        seen = server.state.posts()
        assert len(seen) >= 3, "initialize, initialized and the call reached the server"
        for request in seen:
            assert token not in json.dumps(request.headers) and "authorization" not in request.headers, request.headers


def test_the_typescript_sdk_logs_in_from_the_fronts_metadata(tmp_path: Path):
    """A third-party identity provider (oauth2-mock-server) and the official
    TypeScript SDK client with its own OAuth: it finds the provider through
    mcp-chain's metadata, gets a token and uses the front."""
    import subprocess

    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: these cases test the proxy's own front")
    harness.require_proxy_binary()
    here = Path(__file__).resolve().parent
    mock = subprocess.Popen([str(harness.NODE22), str(here / "mock_as.mjs")], cwd=here, stdout=subprocess.PIPE, text=True)
    try:
        assert mock.stdout is not None
        issuer_url = mock.stdout.readline().strip()

        class External:
            class state:
                base = issuer_url

        front = Front(tmp_path, External)  # type: ignore[arg-type]
        config = Path(front.argv[2])
        config.write_text(config.read_text().replace('introspection = {', '# introspection = {'))
        with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
            done = subprocess.run([str(harness.NODE22), str(here / "ts_oauth_client.cjs"), front.url, "interop-ts"],
                                  cwd=here, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            seen = json.loads(done.stdout)
        assert seen["authorizationServer"] == issuer_url.rstrip("/"), seen
        assert seen["resource"] == front.url and "mcp:read" in (seen["scope"] or ""), seen
        assert "echo" in seen["tools"] and "with a token" in seen["echo"], seen
        subjects = {line.get("subject") for line in harness.jsonl(front.audit)}
        assert subjects == {"johndoe"}, "the provider's subject reached the audit"
    finally:
        mock.terminate()
        mock.wait(10)


def test_2026_requests_without_a_session_are_judged_as_their_caller(issuer: OAuthFixture, tmp_path: Path):
    """A 2026-07-28 request has no session: it is served by a pool of
    shared sessions of its own caller, so `unless` and the audit know who
    calls, and one caller's requests never meet another's chain."""
    policy = '\n[[middleware]]\ntype = "filter"\ntools = { deny = ["read_secret"] }\nunless = { scopes = ["mcp:admin"] }\n'
    front = Front(tmp_path, issuer)
    config = Path(front.argv[2])
    config.write_text(config.read_text() + policy)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
    routing = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "read_secret"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read_secret", "arguments": {}, "_meta": meta}}
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        alice = good(issuer, front, scope="mcp:read mcp:admin")
        bob = good(issuer, front, sub="bob")
        answers = {}
        for who, token in (("alice", alice), ("bob", bob), ("alice again", alice)):
            status, _, body = front.request("POST", call, token, headers=routing)
            assert status == 200, (who, body)
            answers[who] = rpc(body)
        assert "result" in answers["alice"] and "result" in answers["alice again"], answers
        assert "error" in answers["bob"], "bob's stateless call is judged as bob's"
    subjects = {line.get("subject") for line in harness.jsonl(front.audit)}
    assert subjects == {"alice", "bob"}, subjects


def test_an_issuer_that_cannot_be_reached_is_503_not_a_pass(issuer: OAuthFixture, tmp_path: Path):
    class Down:
        class state:
            base = "http://127.0.0.1:9"

    front = Front(tmp_path, Down)  # type: ignore[arg-type]
    config = Path(front.argv[2])
    config.write_text(config.read_text().replace("introspection = {", "# introspection = {"))
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth]"):
        token = issuer.state.mint({"iss": "http://127.0.0.1:9", "sub": "x", "aud": front.url, "scope": "mcp:read"})
        status, headers, body = front.request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token)
        assert status == 503 and headers.get("Retry-After") == "5", (status, body)
        initialize(front, STATIC)  # a static token still works


def test_a_reload_changes_the_oauth_checks_for_the_requests_after(issuer: OAuthFixture, tmp_path: Path):
    """[front.oauth] applies live: a stricter scope refuses the next request
    of a session opened before it (the session goes on with a token that
    has the scope), and OAuth taken away lets no access token in while
    the static token still works."""
    front = Front(tmp_path, issuer)
    config = Path(front.argv[2])
    config.write_text("[proxy]\nwatch_config = true\n" + config.read_text())

    def reloads() -> list[dict[str, Any]]:
        lines = harness.jsonl(front.audit)
        return [line for line in lines if line.get("event") == "config_reload"]

    def edit(old: str, new: str, count: int) -> None:
        text = config.read_text()
        assert old in text, old
        config.write_text(text.replace(old, new))
        assert harness.wait_until(lambda: len(reloads()) >= count, timeout=10), "no reload"
        assert reloads()[-1]["outcome"] == "applied", reloads()[-1]

    listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    with harness.listening(front.argv, front.port, "mcp-chain[front oauth reload]"):
        reader = good(issuer, front)
        admin = good(issuer, front, scope="mcp:read mcp:admin", jti="admin")
        session = initialize(front, reader)
        assert front.request("POST", listed, reader, headers={"Mcp-Session-Id": session})[0] == 200

        edit('required_scopes = ["mcp:read"]', 'required_scopes = ["mcp:admin"]', 1)
        status, headers, _ = front.request("POST", listed, reader, headers={"Mcp-Session-Id": session})
        assert status == 403 and 'scope="mcp:admin"' in headers["WWW-Authenticate"], (status, dict(headers))
        status, _, body = front.request("POST", listed, admin, headers={"Mcp-Session-Id": session})
        assert status == 200 and rpc(body)["result"]["tools"], body

        oauth = config.read_text().split("[front.oauth]", 1)[1].split("[[middleware]]", 1)[0]
        edit("[front.oauth]" + oauth, "", 2)
        status, _, _ = front.request("POST", listed, admin, headers={"Mcp-Session-Id": session})
        assert status == 401, "no access token counts once OAuth is off"
        assert front.request("GET", path="/.well-known/oauth-protected-resource/mcp")[0] == 404
        initialize(front, STATIC)
