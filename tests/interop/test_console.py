"""The approval page ([console]) with a real browser and real clients:
Debian's Chromium, headless, driven by Selenium through chromedriver; the
official Python SDK client (without elicitation, and with one that never
answers) in front of server-everything. MCP_CHAIN_OPEN_URL is a
"browser" that writes down the URL it is given; the test opens that URL
in Chromium and clicks as a person would. Then what an attacker would
try against the page, request by request."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import Chain, everything_argv, open_session

pytestmark = pytest.mark.anyio

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("Debian's chromium and chromium-driver are not installed (.ci/run installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1000,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


class Console:
    """A chain whose approve asks on the page, and the hook that records
    each URL mcp-chain opens."""

    def __init__(self, tmp: Path, extra: str = "") -> None:
        harness.require_proxy_binary()
        self.opened = tmp / "opened.txt"
        hook = tmp / "browser.py"
        hook.write_text(f"import sys\nopen({str(self.opened)!r}, 'a').write(sys.argv[-1] + '\\n')\n")
        self.config = tmp / "console.toml"
        self.config.write_text(
            '[[middleware]]\ntype = "approve"\ntools = ["echo"]\nask = ["elicitation", "page"]\n'
            f'elicitation_wait = "2s"\nremember = "session"\ntimeout = "60s"\n{extra}\n'
            '[console]\nlisten = "127.0.0.1:0"\n')
        self.chain = Chain("console", self.config)
        self.env = {"MCP_CHAIN_OPEN_URL": f"{sys.executable} {hook}", "MCP_CHAIN_STATE_DIR": str(tmp / "state")}

    def urls(self) -> list[str]:
        return self.opened.read_text().split() if self.opened.exists() else []

    def url(self) -> str:
        return harness.wait_until(lambda: (self.urls() or [None])[0], 30)


def open_page(driver, url: str, calls: int) -> None:
    """Loads the page until it lists `calls` waiting calls."""
    from selenium.webdriver.common.by import By

    def listed() -> bool:
        driver.get(url)
        return len(driver.find_elements(By.CSS_SELECTOR, "section.call")) == calls

    assert harness.wait_until(listed, 30, 0.2), driver.page_source[:2000]


def click(driver, label: str) -> None:
    """Clicks the first button labelled `label`, as a person would."""
    from selenium.webdriver.common.by import By

    from selenium.common.exceptions import StaleElementReferenceException

    before = len(driver.find_elements(By.CSS_SELECTOR, "section.call"))
    for _ in range(5):
        buttons = driver.find_elements(By.XPATH, f"//button[normalize-space()='{label}']")
        assert buttons, f"no {label!r} button: {driver.page_source[:2000]}"
        try:
            buttons[0].click()
            break
        except StaleElementReferenceException:
            continue  # the page reloaded itself (a call arrived): find it again
    # The decision posts and the page comes back with one call fewer.
    assert harness.wait_until(lambda: len(driver.find_elements(By.CSS_SELECTOR, "section.call")) < before, 30, 0.1)


async def call_while(conn, driver, arguments: dict[str, Any], decide) -> Any:
    """Calls echo; meanwhile, in the browser, `decide(driver)`. The call's
    result, or the MCPError it raised."""
    outcome: dict[str, Any] = {}

    async def call() -> None:
        try:
            outcome["result"] = await conn.session.call_tool("echo", arguments)
        except MCPError as e:
            outcome["error"] = e

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.to_thread.run_sync(decide, driver)
    return outcome.get("result") or outcome["error"]


async def test_a_client_without_elicitation_is_asked_on_the_page(browser, tmp_path: Path):
    from selenium.webdriver.common.by import By

    console = Console(tmp_path)
    hostile = '<img src=x onerror=alert(1)><script>document.title=1</script>'

    def allow(driver) -> None:
        open_page(driver, console.url(), 1)
        # What the call carries is shown as text, never as markup.
        assert hostile in driver.find_element(By.CSS_SELECTOR, "section.call").text
        assert driver.find_elements(By.TAG_NAME, "img") == []
        assert "Allow for this session" in driver.page_source
        if os.environ.get("MCP_CHAIN_SCREENSHOTS"):
            # docs/console.md's picture, taken by this test (MCP_CHAIN_SCREENSHOTS=1).
            driver.save_screenshot(str(harness.REPO / "docs" / "images" / "approval-page.png"))
        click(driver, "Allow once")

    async with open_session(everything_argv(), console.chain, label="console", env=console.env) as conn:
        result = await call_while(conn, browser, {"message": hostile}, allow)
        assert result.content[0].text == f"Echo: {hostile}", result
        # `mcp-chain console --config` names the page of this running instance.
        shown = subprocess.run([str(harness.MCP_CHAIN), "console", "--config", str(console.config)],
                               capture_output=True, text=True, timeout=30, env={**console.env, "PATH": "/usr/bin:/bin"})
        assert shown.returncode == 0 and shown.stdout.strip() == console.url(), shown

        def deny(driver) -> None:
            open_page(driver, console.url(), 1)
            click(driver, "Deny")

        refused = await call_while(conn, browser, {"message": "rm -rf"}, deny)
        assert isinstance(refused, MCPError), refused
        assert refused.error.data == {"layer": "approve", "reason": "page_denied"}, refused.error
        assert "approval page" in refused.error.message
    assert len(console.urls()) == 2, "one page a burst: two bursts, two pages"
    assert "the approval page is at" in conn.stderr.read_text()


async def test_three_calls_at_once_one_page_three_decisions(browser, tmp_path: Path):
    console = Console(tmp_path)
    results: list[Any] = []
    async with open_session(everything_argv(), console.chain, label="console-three", env=console.env) as conn:

        async def call(n: int) -> None:
            results.append(await conn.session.call_tool("echo", {"message": f"call {n}"}))

        def decide(driver) -> None:
            open_page(driver, console.url(), 3)
            for _ in range(3):
                click(driver, "Allow once")

        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(call, n)
            await anyio.to_thread.run_sync(decide, browser)
    assert sorted(r.content[0].text for r in results) == ["Echo: call 0", "Echo: call 1", "Echo: call 2"]
    assert len(console.urls()) == 1, console.urls()


async def test_a_client_that_never_answers_its_dialog_is_asked_on_the_page(browser, tmp_path: Path):
    """The client declares elicitation and never shows the form (as Claude
    Desktop's chat does): after elicitation_wait the question is withdrawn
    and the page decides; "Allow for this session" then holds."""
    console = Console(tmp_path)
    asked: list[Any] = []

    async def never(context, params):
        asked.append(params)
        await anyio.sleep_forever()

    async with open_session(everything_argv(), console.chain, label="console-silent", env=console.env,
                            elicitation_callback=never) as conn:

        def allow_session(driver) -> None:
            open_page(driver, console.url(), 1)
            click(driver, "Allow for this session")

        result = await call_while(conn, browser, {"message": "first"}, allow_session)
        assert result.content[0].text == "Echo: first"
        [question] = [m for m in conn.incoming("elicitation/create")]
        withdrawn = [m for m in conn.incoming("notifications/cancelled")
                     if m["params"]["requestId"] == question["id"]]
        assert withdrawn, "the unanswered question was withdrawn"
        again = await conn.session.call_tool("echo", {"message": "second"})
        assert again.content[0].text == "Echo: second"
        assert len(asked) == 1 and len(console.urls()) == 1, "allowed for the session: not asked again"


def request(url: str, method: str = "GET", data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def test_what_an_attacker_tries_against_the_page_decides_nothing(tmp_path: Path):
    console = Console(tmp_path)
    async with open_session(everything_argv(), console.chain, label="console-attacked", env=console.env) as conn:
        outcome: dict[str, Any] = {}

        async def call() -> None:
            outcome["result"] = await conn.session.call_tool("echo", {"message": "attacked"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            url = await anyio.to_thread.run_sync(console.url)
            parts = urllib.parse.urlsplit(url)
            origin = f"{parts.scheme}://{parts.netloc}"
            status, page = await anyio.to_thread.run_sync(request, url)
            assert status == 200, page
            token = re.search(r'name="token" value="([0-9a-f]+)"', page).group(1)
            call_id = re.search(r'name="id" value="(\d+)"', page).group(1)
            form = urllib.parse.urlencode({"id": call_id, "choice": "allow_once", "token": token}).encode()
            plain = {"Content-Type": "application/x-www-form-urlencoded"}
            attempts = [
                ("no secret", f"{origin}/", "GET", None, {}, 404),
                ("another secret", f"{origin}/{'0' * 32}/", "GET", None, {}, 404),
                ("a rebinding Host", url, "GET", None, {"Host": f"attacker.example:{parts.port}"}, 403),
                ("a GET decides nothing", url + "decide?" + form.decode(), "GET", None, {}, 405),
                ("a cross-site form post", url + "decide", "POST", form, {**plain, "Origin": "http://attacker.example"}, 403),
                ("a cross-site fetch", url + "decide", "POST", form, {**plain, "Sec-Fetch-Site": "cross-site"}, 403),
                ("no token", url + "decide", "POST", form.replace(token.encode(), b""), plain, 403),
                ("another token", url + "decide", "POST", form.replace(token.encode(), b"f" * 32), plain, 403),
                ("not a form", url + "decide", "POST", json.dumps({"id": call_id}).encode(), {"Content-Type": "application/json"}, 415),
            ]
            for what, target, method, data, headers, expected in attempts:
                status, body = await anyio.to_thread.run_sync(lambda: request(target, method, data, headers))
                assert status == expected, (what, status, body)
            assert "result" not in outcome, "nothing above decided the call"
            status, _ = await anyio.to_thread.run_sync(lambda: request(url + "decide", "POST", form, {**plain, "Origin": origin}))
            assert status == 303
        assert outcome["result"].content[0].text == "Echo: attacked"
        replayed, body = request(url + "decide", "POST", form, {**plain, "Origin": origin})
        assert replayed == 409, (replayed, body)


def test_a_page_without_a_console_is_a_config_error(tmp_path: Path):
    config = tmp_path / "c.toml"
    config.write_text('[[middleware]]\ntype = "approve"\ntools = ["x"]\nask = ["elicitation", "page"]\n')
    checked = subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(config), "--", "true"],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode != 0 and "[console]" in checked.stdout + checked.stderr, checked
    config.write_text('[console]\nlisten = "0.0.0.0:8080"\n')
    checked = subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(config), "--", "true"],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode != 0 and "not loopback" in checked.stdout + checked.stderr, checked


def test_console_says_when_no_instance_runs(tmp_path: Path):
    console = Console(tmp_path)
    shown = subprocess.run([str(harness.MCP_CHAIN), "console", "--config", str(console.config)],
                           capture_output=True, text=True, timeout=30, env={**console.env, "PATH": "/usr/bin:/bin"})
    assert shown.returncode == 1 and "no running mcp-chain" in shown.stderr, shown



def page_of(conn) -> str:
    """The approval page of the mcp-chain behind `conn`, as it says on stderr."""
    found = harness.wait_until(lambda: re.search(r"the approval page is at (\S+)", conn.stderr.read_text()), 10)
    return found.group(1)


def approve_command(console: Console, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(harness.MCP_CHAIN), "approve", *args], capture_output=True, text=True, timeout=30,
                          env={**console.env, "PATH": "/usr/bin:/bin"})


async def test_always_lasts_for_the_same_call_until_revoked_or_the_rule_changes(browser, tmp_path: Path):
    console = Console(tmp_path, extra="")
    console.config.write_text(console.config.read_text().replace('remember = "session"', 'remember = "always"'))

    def press(conn, label: str):
        """In the browser: the page of `conn`'s mcp-chain, the first call's `label`."""
        def decide(driver) -> None:
            open_page(driver, page_of(conn), 1)
            click(driver, label)
        return decide

    async with open_session(everything_argv(), console.chain, label="console-always", env=console.env) as conn:
        first = await call_while(conn, browser, {"message": "same"}, press(conn, "Always"))
        assert first.content[0].text == "Echo: same"
        # The same call again: no question, no page.
        again = await conn.session.call_tool("echo", {"message": "same"})
        assert again.content[0].text == "Echo: same" and len(console.urls()) == 1
        # Other arguments: asked again (a new burst, a new page).
        other = await call_while(conn, browser, {"message": "other"}, press(conn, "Allow once"))
        assert other.content[0].text == "Echo: other" and len(console.urls()) == 2
    listed = approve_command(console, "list")
    assert listed.returncode == 0 and "0: echo on " in listed.stdout and "these arguments" in listed.stdout, listed

    # Another process of the same rule: the grant holds.
    async with open_session(everything_argv(), console.chain, label="console-always-2", env=console.env) as conn:
        assert (await conn.session.call_tool("echo", {"message": "same"})).content[0].text == "Echo: same"
        assert len(console.urls()) == 2
        # Revoked from the page: asked again at once.
        def revoke(driver) -> None:
            from selenium.webdriver.common.by import By

            driver.get(page_of(conn))
            driver.find_element(By.XPATH, "//button[normalize-space()='Revoke']").click()
            assert harness.wait_until(lambda: not driver.find_elements(By.XPATH, "//button[normalize-space()='Revoke']"), 10, 0.1)

        await anyio.to_thread.run_sync(revoke, browser)
        assert "no lasting approvals" in approve_command(console, "list").stdout
        denied = await call_while(conn, browser, {"message": "same"}, press(conn, "Deny"))
        assert isinstance(denied, MCPError) and denied.error.data["reason"] == "page_denied"

    # Granted again, then the rule changes: the grant no longer holds.
    async with open_session(everything_argv(), console.chain, label="console-always-3", env=console.env) as conn:
        await call_while(conn, browser, {"message": "same"}, press(conn, "Always"))
    console.config.write_text(console.config.read_text().replace('timeout = "60s"', 'timeout = "59s"'))
    async with open_session(everything_argv(), console.chain, label="console-always-4", env=console.env) as conn:
        before = len(console.urls())
        asked = await call_while(conn, browser, {"message": "same"}, press(conn, "Allow once"))
        assert asked.content[0].text == "Echo: same" and len(console.urls()) == before + 1, "asked again"
    assert approve_command(console, "revoke", "--all").returncode == 0
    assert "no lasting approvals" in approve_command(console, "list").stdout
    records = harness.jsonl(tmp_path / "state" / "approve" / "decisions.jsonl")
    decisions = [r["decision"] for r in records]
    assert decisions[:3] == ["page_allowed_always", "remembered_always", "page_allowed"], decisions
    assert all(r["arguments_sha256"].startswith("sha256:") and r["revision"].startswith("sha256:") for r in records)
    assert {r["asked"] for r in records} >= {"page", "remembered"}


async def test_a_drifted_tool_is_accepted_on_the_page_and_the_client_told(browser, tmp_path: Path):
    """The pin layer hides server-everything's `echo` (its description
    differs from the pinned one); the page shows the drift, the pinned and
    the new text side by side; Keep hidden leaves it hidden and sets it
    aside; Accept does what `pin accept` does: the running session's
    client is told its tool list changed and sees `echo` again."""
    import hashlib

    from selenium.webdriver.common.by import By

    console = Console(tmp_path)
    pins = tmp_path / "pins.json"
    console.config.write_text(f'[[middleware]]\ntype = "pin"\npath = "{pins}"\n\n[console]\nlisten = "127.0.0.1:0"\nopen = "never"\n')
    async with open_session(everything_argv(), console.chain, label="console-pin-first", env=console.env) as conn:
        assert "echo" in {t.name for t in (await conn.session.list_tools()).tools}
    pinned = json.loads(pins.read_text())
    trusted = json.dumps("Echoes back the input.", separators=(",", ":")).encode()
    pinned["tools"]["echo"]["pinned"]["description"] = "sha256:" + hashlib.sha256(trusted).hexdigest()
    now = pinned["tools"]["echo"]["texts"]["description"]
    pinned["tools"]["echo"]["texts"]["description"] = trusted.decode()
    pins.write_text(json.dumps(pinned, indent=2))
    async with open_session(everything_argv(), console.chain, label="console-pin", env=console.env) as conn:
        assert "echo" not in {t.name for t in (await conn.session.list_tools()).tools}

        def keep(driver) -> None:
            driver.get(page_of(conn))
            drift = driver.find_element(By.CSS_SELECTOR, "section.drift")
            assert "echo" in drift.text and "changed (description)" in drift.text, drift.text
            # The pinned and the new description, side by side, as text.
            row = [c.text for c in drift.find_elements(By.XPATH, ".//tr[th[@scope='row']]/*")]
            assert row == ["description", trusted.decode(), now], row
            # Keep hidden: out of the drifts waiting for a look, under
            # "Kept hidden".
            driver.find_element(By.XPATH, "//button[normalize-space()='Keep hidden']").click()
            kept = "//details/summary[normalize-space()='Kept hidden (1)']"
            assert harness.wait_until(lambda: driver.find_elements(By.XPATH, kept), 10, 0.1)
            assert not driver.find_elements(By.XPATH, "//main/section[@class='drift']")

        def accept(driver) -> None:
            driver.find_element(By.XPATH, "//details/summary").click()
            driver.find_element(By.XPATH, "//details//button[normalize-space()='Accept']").click()
            assert harness.wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR, "section.drift"), 10, 0.1)

        await anyio.to_thread.run_sync(keep, browser)
        assert "echo" not in {t.name for t in (await conn.session.list_tools()).tools}, "kept hidden"
        await anyio.to_thread.run_sync(accept, browser)
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"), what="list_changed")
        assert "echo" in {t.name for t in (await conn.session.list_tools()).tools}
        assert (await conn.session.call_tool("echo", {"message": "back"})).content[0].text == "Echo: back"
    listed = subprocess.run([str(harness.MCP_CHAIN), "pin", "list", "--config", str(console.config)],
                            capture_output=True, text=True, timeout=30).stdout
    assert "echo" in listed and "pinned" in listed and "changed" not in listed, listed


async def test_a_tool_switched_off_leaves_every_list_at_once_and_stays_off(browser, tmp_path: Path):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    console = Console(tmp_path)
    console.config.write_text('[console]\nlisten = "127.0.0.1:0"\nopen = "never"\n')

    def switch(conn, label: str):
        def press(driver) -> None:
            driver.get(page_of(conn))
            row = f"//tr[td/code[normalize-space()='echo']]"
            driver.find_element(By.XPATH, f"{row}//button[normalize-space()='{label}']").click()
            state = "off" if label == "Turn off" else "on"

            def shown_state() -> bool:
                # The page is reloading meanwhile (the post, then its answer).
                cells = driver.find_elements(By.XPATH, f"{row}/td[2]")
                try:
                    return bool(cells) and cells[0].text == state
                except StaleElementReferenceException:
                    return False

            assert harness.wait_until(shown_state, 10, 0.1)
        return press

    async with open_session(everything_argv(), console.chain, label="console-switch", env=console.env) as conn:
        assert "echo" in {t.name for t in (await conn.session.list_tools()).tools}
        await anyio.to_thread.run_sync(switch(conn, "Turn off"), browser)
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"), what="list_changed")
        assert "echo" not in {t.name for t in (await conn.session.list_tools()).tools}
        with pytest.raises(MCPError) as refused:
            await conn.session.call_tool("echo", {"message": "x"})
        assert refused.value.error.data == {"layer": "switch", "reason": "switched_off"}, refused.value.error
    # A restart keeps it off.
    async with open_session(everything_argv(), console.chain, label="console-switch-2", env=console.env) as conn:
        assert "echo" not in {t.name for t in (await conn.session.list_tools()).tools}
        await anyio.to_thread.run_sync(switch(conn, "Turn on"), browser)
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"), what="list_changed")
        assert "echo" in {t.name for t in (await conn.session.list_tools()).tools}
        assert (await conn.session.call_tool("echo", {"message": "on"})).content[0].text == "Echo: on"


async def test_a_client_that_answers_its_dialog_with_an_error_is_asked_on_the_page(browser, tmp_path: Path):
    """A client that declares elicitation but answers the question with an
    error (it cannot show the form after all): the page asks at once,
    without waiting out elicitation_wait."""
    from mcp import types

    console = Console(tmp_path)
    console.config.write_text(console.config.read_text().replace('elicitation_wait = "2s"', 'elicitation_wait = "50s"'))

    async def cannot(context, params):
        return types.ErrorData(code=-32601, message="elicitation is not available here")

    async with open_session(everything_argv(), console.chain, label="console-error", env=console.env,
                            elicitation_callback=cannot) as conn:

        def allow(driver) -> None:
            open_page(driver, page_of(conn), 1)
            click(driver, "Allow once")

        with anyio.fail_after(40):
            result = await call_while(conn, browser, {"message": "via page"}, allow)
        assert result.content[0].text == "Echo: via page"
        assert conn.incoming("elicitation/create"), "asked in the client first"
