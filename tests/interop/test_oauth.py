"""mcp-chain as the OAuth client of a server that accepts only OAuth: the
first run logs in (the browser is open_url.py, through
MCP_CHAIN_OPEN_URL), tokens are stored private and never shown, refreshed
and stepped up while running, and every way it can go wrong answers the
request with a clear error instead of passing the challenge down or
hanging. The server and its authorization server are oauth_fixture.py."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import harness
from oauth_fixture import OAuthFixture
from test_remote import Proxy

HERE = Path(__file__).resolve().parent
OPEN_URL = f"{sys.executable} {HERE / 'open_url.py'}"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A state directory of the test's own and the headless browser."""
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: these cases test the proxy's own OAuth client")
    monkeypatch.setenv("MCP_CHAIN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MCP_CHAIN_OPEN_URL", OPEN_URL)
    return dict(os.environ)


def config(tmp_path: Path, url: str, oauth: str = "", extra: str = "") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(f'[upstream]\nurl = "{url}"\n[upstream.oauth]\nlogin_timeout = "15s"\n{oauth}\n{extra}')
    return path


def token_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "state" / "oauth").glob("*.json"))


def text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    return answer["result"]["content"][0]["text"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(harness.MCP_CHAIN), *args], capture_output=True, text=True, timeout=60)


def test_the_first_run_logs_in_and_nothing_shows_a_token(env: dict[str, str], tmp_path: Path):
    audit = tmp_path / "audit.jsonl"
    with OAuthFixture() as server:
        extra = f'[[middleware]]\ntype = "audit"\npath = "{audit}"\n'
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url, extra=extra)))
        proxy.initialize()
        assert text(proxy.call(1, "whoami")) == "read"
        log = proxy.close()
        assert len(server.state.authorize) == 1, "one login"
        asked = server.state.authorize[0]
        assert asked["code_challenge_method"] == "S256" and asked["resource"] == server.url
        assert asked["scope"] == "read", "the scope the 401 named"
        tokens = list(server.state.access) + list(server.state.refresh)
    [stored] = token_files(tmp_path)
    if os.name == "posix":
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    status = run("auth", "status")
    assert status.returncode == 0 and server.url in status.stdout and "scopes: read" in status.stdout, status
    seen = log + audit.read_text() + status.stdout + status.stderr
    for token in tokens:
        assert token not in seen, "a token was logged, audited or shown"
    assert "needs a login" not in log


def test_a_token_near_expiry_is_refreshed_and_the_rotated_one_kept(env: dict[str, str], tmp_path: Path):
    with OAuthFixture(access_ttl=1) as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        proxy.initialize()
        assert text(proxy.call(1, "whoami")) == "read"
        assert text(proxy.call(2, "whoami")) == "read"
        proxy.close()
        grants = [t["grant_type"] for t in server.state.token]
        assert grants[0] == "authorization_code" and "refresh_token" in grants[1:], grants
        assert len(server.state.authorize) == 1, "refreshed, not logged in again"
        [live] = server.state.refresh
    stored = json.loads(token_files(tmp_path)[0].read_text())
    assert stored["tokens"]["refresh_token"] == live, "the rotated refresh token is the one kept"


def test_a_revoked_refresh_token_means_a_login_and_a_refused_login_a_clear_error(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    with OAuthFixture(access_ttl=1) as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        proxy.initialize()
        proxy.close()
        server.state.refresh.clear()
        server.state.access.clear()
        monkeypatch.setenv("MCP_CHAIN_OPEN_URL", f"{sys.executable} {HERE / 'open_url.py'} --deny")
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        proxy.initialize()
        error = proxy.call(1, "whoami")["error"]
        proxy.close()
    assert error["data"]["reason"] == "login_needed", error
    assert "access_denied" in error["message"] and f"mcp-chain login {server.url}" in error["message"], error


def test_a_server_that_refuses_resource_needs_resource_false(env: dict[str, str], tmp_path: Path):
    with OAuthFixture(refuse_resource=True) as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        proxy.initialize()
        error = proxy.call(1, "whoami")["error"]
        proxy.close()
        assert "invalid_target" in error["message"], error
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url, "resource = false")))
        proxy.initialize()
        assert text(proxy.call(1, "whoami")) == "read"
        proxy.close()
        assert "resource" not in server.state.authorize[-1] and "resource" not in server.state.token[-1]


def test_insufficient_scope_steps_up_with_the_union_of_scopes(env: dict[str, str], tmp_path: Path):
    with OAuthFixture() as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        proxy.initialize()
        assert text(proxy.call(1, "whoami")) == "read"
        assert text(proxy.call(2, "admin")) == "read admin"
        proxy.close()
        assert [a["scope"] for a in server.state.authorize] == ["read", "read admin"]


def test_a_wrong_iss_is_refused_before_the_code_is_used(env: dict[str, str], tmp_path: Path):
    with OAuthFixture(iss="bad") as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        error = proxy.initialize()["error"]
        proxy.close()
        assert "issuer" in error["message"] and error["data"]["reason"] == "login_needed", error
        assert server.state.token == [], "the code never reached the token endpoint"


def test_resource_metadata_on_another_origin_is_refused(env: dict[str, str], tmp_path: Path):
    with OAuthFixture() as other, OAuthFixture() as server:
        server.state.metadata_elsewhere = other.state.base + "/.well-known/oauth-protected-resource/mcp"
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        error = proxy.initialize()["error"]
        proxy.close()
        assert "another origin" in error["message"], error
        assert other.state.authorize == [] and other.state.token == []


def test_an_authorization_server_that_is_down_is_an_error_not_a_hang(env: dict[str, str], tmp_path: Path):
    with OAuthFixture(dead_as=True) as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        first = proxy.initialize()["error"]
        second = proxy.call(2, "whoami")["error"]
        proxy.close()
    for error in (first, second):
        assert error["data"]["reason"] == "login_needed" and "mcp-chain login" in error["message"], error


def test_a_login_nobody_finishes_is_bounded_and_opens_one_page(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    opened = tmp_path / "opened.txt"
    hook = tmp_path / "ignore.py"
    hook.write_text(f"import sys\nopen({str(opened)!r}, 'a').write(sys.argv[-1] + '\\n')\n")
    monkeypatch.setenv("MCP_CHAIN_OPEN_URL", f"{sys.executable} {hook}")
    with OAuthFixture() as server:
        path = config(tmp_path, server.url)
        path.write_text(path.read_text().replace('"15s"', '"2s"'))
        proxy = Proxy(server.url, "--config", str(path))
        for rid in (1, 2, 3):
            proxy.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}})
        # Answers come in any order (they are matched by id).
        answers = {m["id"]: m for m in (proxy.read() for _ in range(3))}
        assert sorted(answers) == [1, 2, 3], answers
        errors = [answers[rid]["error"] for rid in (1, 2, 3)]
        proxy.close()
    assert all("no login within" in e["message"] for e in errors), errors
    assert len(opened.read_text().splitlines()) == 1, "the requests that waited did not each open a page"


def test_two_processes_share_one_login(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    slow = tmp_path / "slow_open.py"
    slow.write_text(f"import subprocess, sys, time\ntime.sleep(1)\nsys.exit(subprocess.call([sys.executable, {str(HERE / 'open_url.py')!r}, sys.argv[-1]]))\n")
    monkeypatch.setenv("MCP_CHAIN_OPEN_URL", f"{sys.executable} {slow}")
    with OAuthFixture() as server:
        path = config(tmp_path, server.url)
        proxies = [Proxy(server.url, "--config", str(path)) for _ in range(2)]
        answers: list[dict[str, Any]] = []
        threads = [threading.Thread(target=lambda p=p: answers.append(p.initialize())) for p in proxies]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for p in proxies:
            p.close()
        assert len(answers) == 2 and all("result" in a for a in answers), answers
        assert len(server.state.authorize) == 1, "one login for both processes"


def test_processes_refreshing_at_once_refresh_once_and_keep_the_login(env: dict[str, str], tmp_path: Path):
    """Three mcp-chain processes for one server (three Claude Desktop
    windows), an authorization server that rotates refresh tokens and
    revokes the whole login when a rotated one is used again: their tokens
    expire together, all three call at the same moment, and they take
    turns on the token file's lock: one refresh at a time, the others
    adopting what it stored. No refresh token is used twice, the login is
    never revoked, every call is answered."""
    with OAuthFixture(access_ttl=1, revoke_family_on_reuse=True) as server:
        path = config(tmp_path, server.url)
        first = Proxy(server.url, "--config", str(path))
        first.initialize()
        assert text(first.call(1, "whoami")) == "read"
        proxies = [first] + [Proxy(server.url, "--config", str(path)) for _ in range(2)]
        for p in proxies[1:]:
            p.initialize()
        for round_ in range(3):
            time.sleep(1.1)  # every process's access token has expired (the fixture's clock)
            answers: dict[int, dict[str, Any]] = {}
            threads = [threading.Thread(target=lambda n=n, p=p: answers.__setitem__(n, p.call(10 * round_ + n, "whoami")))
                       for n, p in enumerate(proxies)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert [text(answers[n]) for n in range(3)] == ["read"] * 3, answers
        for p in proxies:
            p.close()
        assert server.state.families_revoked == 0, "a rotated refresh token was used twice"
        assert len(server.state.authorize) == 1, "one login, never a second"
        grants = [t["grant_type"] for t in server.state.token]
        assert grants.count("refresh_token") >= 3, grants


def test_login_status_and_logout_commands(env: dict[str, str], tmp_path: Path):
    with OAuthFixture() as server:
        login = run("login", server.url)
        assert login.returncode == 0, login.stderr
        assert "logged in to" in login.stdout and "scopes: read" in login.stdout
        assert "to log in to" in login.stderr and "/authorize?" in login.stderr, "the URL is always printed"
        status = run("auth", "status")
        assert server.url in status.stdout and "refreshable" in status.stdout
        for token in list(server.state.access) + list(server.state.refresh):
            assert token not in login.stdout + login.stderr + status.stdout
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        proxy.initialize()
        assert text(proxy.call(1, "whoami")) == "read"
        proxy.close()
        assert len(server.state.authorize) == 1, "the running proxy used the stored login"
    logout = run("logout", server.url)
    assert logout.returncode == 0 and "logged out" in logout.stdout
    assert token_files(tmp_path) == []
    assert "no server has stored tokens" in run("auth", "status").stdout


def test_client_credentials_need_no_person(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SVC_SECRET", "svc-s3cret")
    oauth = 'grant = "client_credentials"\nclient_id = "svc"\nclient_secret = "${SVC_SECRET}"'
    with OAuthFixture(client_secret="svc-s3cret") as server:
        path = config(tmp_path, server.url, oauth)
        check = run("check", "--config", str(path))
        assert "svc-s3cret" not in check.stdout + check.stderr
        proxy = Proxy(server.url, "--config", str(path))
        proxy.initialize()
        assert text(proxy.call(1, "whoami")) == "read"
        log = proxy.close()
        assert server.state.authorize == [] and server.state.token[0]["grant_type"] == "client_credentials"
        assert "svc-s3cret" not in log


def test_the_front_serves_every_session_with_one_login(env: dict[str, str], tmp_path: Path):
    port = harness.free_port()
    with OAuthFixture() as server:
        path = config(tmp_path, server.url)
        argv = [str(harness.MCP_CHAIN), "--config", str(path), "--listen", f"127.0.0.1:{port}"]
        with harness.listening(argv, port, "mcp-chain[oauth front]") as _:
            import urllib.request

            def post(message: dict[str, Any], session: str | None = None) -> tuple[dict[str, Any], str | None]:
                headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                           "Authorization": "Bearer the-clients-own-token"}
                if session:
                    headers["Mcp-Session-Id"] = session
                request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", json.dumps(message).encode(), headers)
                with urllib.request.urlopen(request, timeout=30) as response:
                    body = response.read().decode()
                    data = body.split("data: ", 1)[1] if body.startswith(("event:", "data:", "id:")) else body
                    return json.loads(data), response.headers.get("Mcp-Session-Id")

            for n in range(2):
                init, session = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": f"c{n}", "version": "1"}}})
                assert "result" in init, init
                answer, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                  "params": {"name": "whoami", "arguments": {}}}, session)
                assert answer["result"]["content"][0]["text"] == "read", answer
        assert len(server.state.authorize) == 1, "one identity for all sessions"
        assert "Bearer the-clients-own-token" not in server.state.mcp_auth, "a client's own token never passes"


def test_a_third_party_authorization_server(env: dict[str, str], tmp_path: Path):
    """oauth2-mock-server issues real RS256 tokens that the resource server
    checks against its JWKS: a pre-registered client logs in with PKCE,
    and a token that expires is refreshed."""
    mock = subprocess.Popen(
        [str(harness.NODE22), str(HERE / "mock_as.mjs")], cwd=HERE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "TOKEN_TTL": "2"},
    )
    try:
        assert mock.stdout is not None
        issuer = mock.stdout.readline().strip()
        assert issuer.startswith("http://"), issuer
        with OAuthFixture(issuer=issuer) as server:
            path = config(tmp_path, server.url, 'client_id = "mcp-chain-test"\nscopes = ["read"]')
            proxy = Proxy(server.url, "--config", str(path))
            proxy.initialize()
            # A result at all means the fixture verified the JWT (it
            # answers 401 otherwise); the text is the token's scope claim.
            assert text(proxy.call(1, "whoami")) == text(proxy.call(2, "whoami")) != ""
            log = proxy.close()
            assert "the access token was refreshed" in log
            assert all(h and h.startswith("Bearer ey") for h in server.state.mcp_auth[1:]), "JWTs"
    finally:
        mock.terminate()
        mock.wait(10)


def test_legacy_sse_logs_in_too(env: dict[str, str], tmp_path: Path):
    with OAuthFixture() as server:
        sse = server.state.base + "/sse"
        path = tmp_path / "c.toml"
        path.write_text(f'[upstream]\nurl = "{sse}"\ntransport = "sse"\n')
        proxy = Proxy(sse, "--config", str(path))
        proxy.initialize()
        assert text(proxy.call(1, "whoami")) == "read"
        proxy.close()
        assert len(server.state.authorize) == 1
        stream_and_posts = [h for h in server.state.mcp_auth if h]
        assert len(stream_and_posts) >= 3, "the stream and each message carried the token"


def test_websocket_sends_the_token_on_the_upgrade(env: dict[str, str], tmp_path: Path):
    port = harness.free_port()
    with OAuthFixture() as server:
        ws = subprocess.Popen([str(harness.NODE22), str(HERE / "ws_oauth.cjs"), str(port), server.state.base],
                              cwd=HERE, stderr=subprocess.PIPE, text=True)
        try:
            assert ws.stderr is not None and "listening" in ws.stderr.readline()
            url = f"ws://127.0.0.1:{port}/mcp"
            proxy = Proxy(url, "--config", str(config(tmp_path, url)))
            proxy.initialize()
            assert text(proxy.call(1, "whoami")) == "over websocket"
            proxy.close()
            assert len(server.state.authorize) == 1
        finally:
            ws.terminate()
            ws.wait(10)


def test_the_callback_port_is_stable_and_a_changed_one_registers_again(env: dict[str, str], tmp_path: Path):
    with OAuthFixture() as server:
        def login_again(extra: str = "") -> None:
            server.state.access.clear()
            server.state.refresh.clear()
            proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url, extra)))
            proxy.initialize()
            assert text(proxy.call(1, "whoami")) == "read"
            proxy.close()

        login_again()
        login_again()
        first, second = server.state.authorize[0], server.state.authorize[-1]
        assert first["redirect_uri"] == second["redirect_uri"], "one port per server, kept"
        assert len(server.state.registered) == 1, "the registration is reused"
        port = harness.free_port()
        login_again(f"callback_port = {port}")
        assert server.state.authorize[-1]["redirect_uri"] == f"http://127.0.0.1:{port}/callback"
        assert len(server.state.registered) == 2, "a changed callback registers again"
        assert server.state.registered[-1]["redirect_uris"] == [f"http://127.0.0.1:{port}/callback"]
