"""mcp-chain's OAuth client against a hostile server and authorization
server: what each finding of the second hostile review did, done again
through the binary. The login opens only web pages; credentials and
registrations go only to the issuer they belong to; a server that refuses
every token does not open page after page; a login slower than the client
waits answers the request in time while the login stays open."""

from __future__ import annotations

import base64
import os
import stat
import sys
from pathlib import Path

import pytest

from oauth_fixture import OAuthFixture
from test_oauth import HERE, config, env, text, token_files  # noqa: F401 (env is a fixture)
from test_remote import Proxy


def recording_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MCP_CHAIN_OPEN_URL as a browser that only writes down what it was
    asked to open; the file it writes to."""
    opened = tmp_path / "opened.txt"
    hook = tmp_path / "record.py"
    hook.write_text(f"import sys\nopen({str(opened)!r}, 'a').write(sys.argv[-1] + '\\n')\n")
    monkeypatch.setenv("MCP_CHAIN_OPEN_URL", f"{sys.executable} {hook}")
    return opened


@pytest.mark.parametrize("endpoint", [
    "file:///C:/Windows/System32/calc.exe",
    "smb://attacker.example/share/payload.exe",
    "javascript:alert(document.cookie)",
    "vscode://vscode.git/clone?url=x",
    "http://attacker.example/authorize",
])
def test_the_login_never_opens_what_is_not_a_web_page(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, endpoint: str  # noqa: F811
):
    opened = recording_hook(tmp_path, monkeypatch)
    with OAuthFixture(authorization_endpoint=endpoint) as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        error = proxy.initialize()["error"]
        log = proxy.close()
        assert server.state.registered == [] and server.state.token == [], "nothing sent to a hostile endpoint"
    assert error["data"]["reason"] == "login_needed", error
    assert "must be https" in error["message"], error
    assert not opened.exists(), f"the opener ran: {opened.read_text()}"
    assert "to log in to" not in log, "no URL offered to open by hand"


def wait_for(check, what: str, seconds: float = 30.0) -> None:
    """Polls `check` (a state reached, not a time taken) up to a bound."""
    import time

    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds}s: {what}"
        time.sleep(0.05)


def test_a_registration_is_used_only_at_the_issuer_that_made_it(
    env: dict[str, str], tmp_path: Path  # noqa: F811
):
    """The server logs mcp-chain in at its own authorization server (a
    dynamic registration with a secret), then names another one: the
    other gets a registration of its own, never the first one's secret."""
    with OAuthFixture(register_secret=True) as server, OAuthFixture(register_secret=True) as other:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        proxy.initialize()
        assert proxy.call(1, "whoami")["result"]
        assert [r["client_name"] for r in server.state.registered] == ["mcp-chain"]
        # Now the server names another authorization server, and forgets every token.
        server.state.issuer = other.state.base
        with server.state.lock:
            server.state.access.clear()
            server.state.refresh.clear()
        proxy.call(2, "whoami")
        proxy.close()
    assert len(other.state.registered) == 1, "registered anew at the other issuer"
    first = f"dyn-{server.server.server_address[1]}-1"
    sent = [base64.b64decode(a.split()[1]).decode() for a in other.state.token_auth if a]
    assert sent and all(not s.startswith(first + ":") for s in sent), f"the first issuer's secret went to the other: {sent}"
    assert all(s.startswith(f"dyn-{other.server.server_address[1]}-1:") for s in sent), sent


def test_a_configured_secret_goes_only_to_its_issuer(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
):
    """client_credentials (no person, no page): the secret was first used
    at the server's own authorization server; when the server names
    another, mcp-chain refuses with a clear message and sends nothing."""
    monkeypatch.setenv("SVC_SECRET", "svc-s3cret")
    oauth = 'grant = "client_credentials"\nclient_id = "svc"\nclient_secret = "${SVC_SECRET}"'
    with OAuthFixture(client_secret="svc-s3cret") as server, OAuthFixture(client_secret="svc-s3cret") as other:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url, oauth)))
        proxy.initialize()
        assert proxy.call(1, "whoami")["result"]
        server.state.issuer = other.state.base
        with server.state.lock:
            server.state.access.clear()
        error = proxy.call(2, "whoami")["error"]
        proxy.close()
    assert other.state.token == [] and other.state.token_auth == [], "the secret went to another issuer"
    assert "belongs to" in error["message"] and "upstream.oauth.issuer" in error["message"], error
    assert "svc-s3cret" not in error["message"]


def test_upstream_oauth_issuer_names_the_only_authorization_server(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
):
    monkeypatch.setenv("SVC_SECRET", "svc-s3cret")
    with OAuthFixture(client_secret="svc-s3cret") as server, OAuthFixture() as trusted:
        oauth = (f'grant = "client_credentials"\nclient_id = "svc"\nclient_secret = "${{SVC_SECRET}}"\n'
                 f'issuer = "{trusted.state.base}"')
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url, oauth)))
        error = proxy.initialize()["error"]
        proxy.close()
        assert server.state.token == [], "the secret went to an issuer other than the configured one"
    assert "upstream.oauth.issuer" in error["message"], error


@pytest.mark.parametrize("refresh", ["refreshable", "revoked"])
def test_a_server_that_refuses_every_token_gets_one_login_not_a_loop(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refresh: str  # noqa: F811
):
    """Each refused request gets at most one renewal (a refresh, or a login
    when there is nothing to refresh) and one retry; a token a login just
    got that is refused opens no second page: the request fails
    `unauthorized`."""
    opened = tmp_path / "opened.txt"
    hook = tmp_path / "browser.py"
    hook.write_text(
        f"import subprocess, sys\nopen({str(opened)!r}, 'a').write(sys.argv[-1] + '\\n')\n"
        f"sys.exit(subprocess.call([sys.executable, {str(HERE / 'open_url.py')!r}, sys.argv[-1]]))\n")
    monkeypatch.setenv("MCP_CHAIN_OPEN_URL", f"{sys.executable} {hook}")
    with OAuthFixture(refuse_all=True) as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        errors = []
        for rid in range(1, 5):
            before = (len(server.state.mcp_auth), len(server.state.token))
            if refresh == "revoked":
                with server.state.lock:
                    server.state.refresh.clear()
            proxy.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "whoami", "arguments": {}}})
            errors.append(proxy.answer(rid)["error"])
            posts = len(server.state.mcp_auth) - before[0]
            refreshes = [t for t in server.state.token[before[1]:] if t.get("grant_type") == "refresh_token"]
            assert posts <= 2, f"request {rid}: {posts} POSTs (one, and one retry)"
            assert len(refreshes) <= 1, f"request {rid}: {len(refreshes)} refreshes"
        proxy.close()
        assert len(server.state.authorize) == 1, "one login page, not one per request"
    assert len(opened.read_text().splitlines()) == 1
    for error in errors:
        assert error["data"]["reason"] == "unauthorized", error


def test_a_login_slower_than_the_client_answers_in_time_and_serves_the_next_request(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
):
    """The person takes longer than `login_wait`: the waiting request is
    answered `login_needed` saying a login waits in the browser (not a
    client-side timeout), the login stays open, and once it is done the
    next request is served with no second page."""
    go = tmp_path / "go"
    opened = tmp_path / "opened.txt"
    hook = tmp_path / "slow_person.py"
    hook.write_text(
        "import os, subprocess, sys, time\n"
        f"open({str(opened)!r}, 'a').write(sys.argv[-1] + '\\n')\n"
        f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\n"
        f"sys.exit(subprocess.call([sys.executable, {str(HERE / 'open_url.py')!r}, sys.argv[-1]]))\n")
    monkeypatch.setenv("MCP_CHAIN_OPEN_URL", f"{sys.executable} {hook}")
    with OAuthFixture() as server:
        path = config(tmp_path, server.url, 'login_wait = "1s"')
        path.write_text(path.read_text().replace('"15s"', '"120s"'))
        proxy = Proxy(server.url, "--config", str(path))
        first = proxy.initialize()["error"]
        assert first["data"]["reason"] == "login_needed", first
        assert "waiting in the browser" in first["message"] and "mcp-chain login" in first["message"], first
        second = proxy.call(2, "whoami")["error"]
        assert "waiting in the browser" in second["message"], second
        go.touch()
        wait_for(lambda: server.state.access, "the login finished")
        wait_for(lambda: token_files(tmp_path), "the tokens were stored")
        assert text(proxy.call(3, "whoami")) == "read"
        proxy.close()
        assert len(server.state.authorize) == 1
    assert len(opened.read_text().splitlines()) == 1, "the requests that waited opened no page"


@pytest.mark.skipif(os.name != "posix", reason="Unix modes")
def test_a_token_directory_others_may_enter_is_made_private(env: dict[str, str], tmp_path: Path):  # noqa: F811
    shared = tmp_path / "state" / "oauth"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    with OAuthFixture() as server:
        proxy = Proxy(server.url, "--config", str(config(tmp_path, server.url)))
        proxy.initialize()
        assert text(proxy.call(1, "whoami")) == "read"
        proxy.close()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o700
    [stored] = token_files(tmp_path)
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
