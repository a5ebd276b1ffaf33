"""The console behind a sign-in at the front's authorization server
(`[console] client_id` with `[front.oauth]`): Debian's Chromium signs in
as a person would (redirected to the issuer, oauth_fixture.py, which
approves at once, and back), and what an attacker would try without a
sign-in, with another person's state, a token for another resource or
one without the scope mcp-chain:admin."""

from __future__ import annotations

import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import harness
from oauth_fixture import OAuthFixture
from test_console import browser  # noqa: F401 (the fixture)

DEMO = harness.REPO / "target" / "debug" / "mcp-chain-demo-server"


class Signed:
    """mcp-chain --listen with [front.oauth] and a console behind a sign-in."""

    def __init__(self, tmp: Path, issuer: OAuthFixture, console: str = "") -> None:
        self.port, self.console_port = harness.free_port(), harness.free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.config = tmp / "signed.toml"
        self.config.write_text(f"""
[upstream]
command = "{DEMO}"
[front]
listen = "127.0.0.1:{self.port}"
public_url = "{self.url}"
[front.oauth]
issuer = "{issuer.state.base}"
scopes_supported = ["mcp:read", "mcp-chain:admin"]
required_scopes = ["mcp:read"]
[console]
open = "never"
{console or f'listen = "127.0.0.1:{self.console_port}"'}
client_id = "console"
""")
        self.argv = [str(harness.MCP_CHAIN), "--config", str(self.config)]
        self.env = {"MCP_CHAIN_STATE_DIR": str(tmp / "state")}

    def page(self, stderr: Path) -> str:
        """The console's address: its public URL (the pages are under a
        secret path it sends a person to once signed in)."""
        found = harness.wait_until(lambda: re.search(r"the approval page is at (\S+)", stderr.read_text()), 10)
        return found.group(1)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
        return None


def fetch(url: str, method: str = "GET", data: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, Any, str]:
    """One request, redirects not followed."""
    opener = urllib.request.build_opener(NoRedirects)
    request = urllib.request.Request(url, data, headers or {}, method=method)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


@pytest.fixture
def issuer():
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: these cases test the proxy's own console")
    harness.require_proxy_binary()
    with OAuthFixture() as fixture:
        yield fixture


def test_a_person_signs_in_with_the_admin_scope_and_sees_the_console(browser, issuer: OAuthFixture, tmp_path: Path):
    from selenium.webdriver.common.by import By

    signed = Signed(tmp_path, issuer)
    issuer.state.jwt_for = signed.url
    with harness.listening(signed.argv, signed.port, "mcp-chain console sign-in", env=signed.env) as stderr:
        root = signed.page(stderr)
        assert root == f"http://127.0.0.1:{signed.console_port}/"
        browser.delete_all_cookies()
        browser.get(root)
        assert harness.wait_until(lambda: browser.find_elements(By.TAG_NAME, "h1"), 20, 0.2)
        assert browser.find_element(By.TAG_NAME, "h1").text == "Calls waiting for your approval"
        page = browser.current_url
        assert re.fullmatch(re.escape(root) + "[0-9a-f]{32}/", page), page
        browser.get(page + "activity")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Activity"
        # What the console asked the issuer for.
        asked = issuer.state.authorize[-1]
        assert asked["client_id"] == "console" and asked["code_challenge_method"] == "S256"
        assert set(asked["scope"].split()) == {"mcp-chain:admin", "mcp:read"}
        assert asked["resource"] == signed.url
        assert asked["redirect_uri"] == root + "callback"
        cookie = browser.get_cookie("mcp-chain-console")
        assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Lax" and cookie["path"] == "/"
        # Signed in, the console's address leads to the pages at once.
        browser.get(root)
        assert browser.current_url == page


def test_without_a_sign_in_nothing_is_shown_or_decided(issuer: OAuthFixture, tmp_path: Path):
    signed = Signed(tmp_path, issuer)
    issuer.state.jwt_for = signed.url
    with harness.listening(signed.argv, signed.port, "mcp-chain console sign-in", env=signed.env) as stderr:
        root = signed.page(stderr)
        # The console's address: sent to sign in, nothing of the page.
        status, headers, body = fetch(root)
        assert status == 303 and headers["Location"].startswith(issuer.state.base + "/authorize?"), (status, headers)
        assert "approval" not in body
        # Someone signs in; the attacker learns the pages' secret path,
        # not the cookie.
        status, headers, _ = sign_in_by_hand(root, issuer)
        assert status == 303
        page = headers["Location"]
        status, headers, body = fetch(page)
        assert status == 303 and headers["Location"].startswith(issuer.state.base + "/authorize?")
        assert "approval" not in body
        state = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(headers["Location"]).query))["state"]
        origin = root.rstrip("/")
        for path, data in (("decide", b"id=1&choice=allow_once&token=x"), ("switch", b"tool=echo&to=off&token=x")):
            status, _, _ = fetch(page + path, "POST", data, {"Origin": origin, "Content-Type": "application/x-www-form-urlencoded"})
            assert status == 401, path
        assert fetch(page + "events")[0] == 401
        assert fetch(page + "activity/events")[0] == 401
        # A guessed cookie is no sign-in.
        assert fetch(page, headers={"Cookie": "mcp-chain-console=" + "0" * 32})[0] == 303
        # A callback with a state this console never made, or none.
        assert fetch(root + "callback?code=x&state=forged")[0] == 400
        assert fetch(root + "callback?code=x")[0] == 400
        # The real state with a code the issuer never gave: refused, and
        # the state is spent (a replay is refused too).
        status, _, _ = fetch(root + f"callback?code=forged&state={state}&iss={urllib.parse.quote(issuer.state.base)}")
        assert status == 403
        assert fetch(root + f"callback?code=forged&state={state}")[0] == 400


def sign_in_by_hand(page: str, issuer: OAuthFixture) -> tuple[int, Any, str]:
    """Follows the sign-in as a browser would, one hop at a time; the
    callback's answer."""
    status, headers, _ = fetch(page)
    assert status == 303
    status, headers, _ = fetch(headers["Location"])  # the issuer approves at once
    assert status == 302
    return fetch(headers["Location"])


def test_a_token_without_the_scope_or_for_another_resource_signs_no_one_in(issuer: OAuthFixture, tmp_path: Path):
    signed = Signed(tmp_path, issuer)
    with harness.listening(signed.argv, signed.port, "mcp-chain console sign-in", env=signed.env) as stderr:
        root = signed.page(stderr)
        issuer.state.jwt_for = signed.url
        issuer.state.grant_scopes = ["mcp:read"]
        status, headers, body = sign_in_by_hand(root, issuer)
        assert status == 403 and "mcp-chain:admin" in body and "Set-Cookie" not in headers, (status, body)
        issuer.state.grant_scopes = None
        issuer.state.jwt_for = "http://127.0.0.1:9/other"
        status, headers, body = sign_in_by_hand(root, issuer)
        assert status == 403 and "not one this mcp-chain accepts" in body and "Set-Cookie" not in headers
        # The right token: a cookie, and with it the page.
        issuer.state.jwt_for = signed.url
        status, headers, _ = sign_in_by_hand(root, issuer)
        page = headers["Location"]
        assert status == 303 and re.fullmatch(re.escape(root) + "[0-9a-f]{32}/", page), (status, headers)
        cookie = headers["Set-Cookie"].split(";", 1)[0]
        status, _, body = fetch(page, headers={"Cookie": cookie})
        assert status == 200 and "Calls waiting for your approval" in body


def test_off_loopback_only_behind_a_sign_in(issuer: OAuthFixture, tmp_path: Path):
    def check(console: str, front_oauth: bool = True) -> subprocess.CompletedProcess[str]:
        config = tmp_path / "c.toml"
        oauth = f'[front.oauth]\nissuer = "{issuer.state.base}"\n' if front_oauth else ""
        config.write_text(f'[upstream]\ncommand = "{DEMO}"\n[front]\nlisten = "127.0.0.1:{harness.free_port()}"\n'
                          f'public_url = "http://127.0.0.1:1/mcp"\n{oauth}[console]\n{console}\n')
        return subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(config)], capture_output=True,
                              text=True, timeout=30)

    refused = check('listen = "0.0.0.0:0"')
    assert refused.returncode != 0 and "console.listen: 0.0.0.0:0 is not loopback" in refused.stderr
    assert "sign-in" in refused.stderr and "mcp-chain:admin" in refused.stderr
    refused = check('listen = "127.0.0.1:0"\nclient_id = "console"', front_oauth=False)
    assert refused.returncode != 0 and "console.client_id" in refused.stderr and "[front.oauth]" in refused.stderr
    refused = check('listen = "0.0.0.0:0"\nclient_id = "console"')
    assert refused.returncode != 0 and "console.public_url: name where people reach the console" in refused.stderr
    refused = check('listen = "0.0.0.0:0"\nclient_id = "console"\npublic_url = "http://console.example/"')
    assert refused.returncode != 0 and "neither https nor http on loopback" in refused.stderr
    refused = check('listen = "127.0.0.1:0"\npublic_url = "https://console.example/"')
    assert refused.returncode != 0 and "public_url: only with client_id" in refused.stderr

    # Off loopback with a sign-in: served, and the secret alone is not enough.
    port = harness.free_port()
    signed = Signed(tmp_path, issuer, console=f'listen = "0.0.0.0:{port}"\npublic_url = "http://localhost:{port}/"')
    signed.console_port = port
    with harness.listening(signed.argv, signed.port, "mcp-chain console off loopback", env=signed.env) as stderr:
        root = signed.page(stderr)
        assert root == f"http://localhost:{port}/"
        status, headers, _ = fetch(root)
        assert status == 303 and headers["Location"].startswith(issuer.state.base + "/authorize?")
