"""The approval page and the activity page in Firefox: Debian's Firefox ESR,
headless, driven by Mozilla's Marionette client (the protocol geckodriver
itself speaks to Firefox), the official Python SDK client without
elicitation in front of server-everything. What the Chromium tests click,
clicked here too: Allow once, Deny, the live activity."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import everything_argv, open_session
from test_console import Console, page_of

pytestmark = pytest.mark.anyio

FIREFOX = "/usr/bin/firefox-esr"


@pytest.fixture(scope="module")
def firefox():
    from marionette_driver.marionette import Marionette

    if not Path(FIREFOX).exists():
        pytest.fail("Debian's firefox-esr is not installed (.ci/run installs it)")
    profile = Path(tempfile.mkdtemp(prefix="mcp-chain-firefox-"))
    # Firefox's own log beside the test's other stderr files, not in the
    # working directory (it was once committed from there).
    gecko_log = str(harness.new_stderr_file("firefox"))
    driver = Marionette(host="127.0.0.1", port=harness.free_port(), bin=FIREFOX, headless=True,
                        profile=str(profile), startup_timeout=120, gecko_log=gecko_log)
    driver.start_session()
    driver.timeout.page_load = 30
    yield driver
    driver.delete_session()
    driver.cleanup()
    shutil.rmtree(profile, ignore_errors=True)


def calls_listed(driver) -> int:
    from marionette_driver.by import By

    return len(driver.find_elements(By.CSS_SELECTOR, "section.call"))


def press(driver, url: str, label: str, seen: dict) -> None:
    """Opens the page until one call waits, notes what it shows, clicks `label`."""
    from marionette_driver.by import By

    def listed() -> bool:
        driver.navigate(url)
        return calls_listed(driver) == 1

    assert harness.wait_until(listed, 30, 0.2), driver.page_source[:2000]
    seen.setdefault("texts", []).append(driver.find_element(By.CSS_SELECTOR, "section.call").text)
    seen.setdefault("images", []).append(len(driver.find_elements(By.TAG_NAME, "img")))
    button = driver.find_element(By.XPATH, f"//button[normalize-space()='{label}']")
    button.click()
    assert harness.wait_until(lambda: calls_listed(driver) == 0, 30, 0.1)


async def test_firefox_allows_denies_and_follows_the_activity(firefox, tmp_path: Path):
    from marionette_driver.by import By

    audit = tmp_path / "audit.jsonl"
    console = Console(tmp_path)
    console.config.write_text(f'[[middleware]]\ntype = "audit"\npath = "{audit}"\n\n' + console.config.read_text())
    hostile = '<img src=x onerror=alert(1)><script>document.title=1</script>'
    seen: dict = {}

    async with open_session(everything_argv(), console.chain, label="console-firefox", env=console.env) as conn:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, lambda: press(firefox, console.url(), "Allow once", seen))
            allowed = await conn.session.call_tool("echo", {"message": hostile})
        assert allowed.content[0].text == f"Echo: {hostile}"
        assert hostile in seen["texts"][0] and seen["images"] == [0], seen

        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, lambda: press(firefox, console.url(), "Deny", seen))
            with pytest.raises(MCPError) as refused:
                await conn.session.call_tool("echo", {"message": "no"})
        assert refused.value.error.data == {"layer": "approve", "reason": "page_denied"}

        # The activity page in Firefox: both decisions, then a third call
        # appears without a reload by hand (Server-Sent Events).
        base = page_of(conn)

        def audit_rows() -> int:
            return len(firefox.find_elements(By.XPATH, "//table[@aria-label='Last audit lines']//tr[td]"))

        def open_activity() -> int:
            firefox.navigate(base + "activity")
            text = firefox.find_element(By.TAG_NAME, "main").text
            assert "page_allowed" in text and "page_denied" in text, text
            firefox.navigate(base + "activity?tool=echo")
            return audit_rows()

        before = await anyio.to_thread.run_sync(open_activity)
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, lambda: press(firefox, console.url(), "Allow once", seen))
            await conn.session.call_tool("echo", {"message": "third"})
        firefox.navigate(base + "activity?tool=echo")
        after_reload = audit_rows()
        assert after_reload > before

        # Live: with the activity open, a call made elsewhere shows up by itself.
        await conn.session.call_tool("get-sum", {"a": 1, "b": 2})
        firefox.navigate(base + "activity")
        shown = audit_rows()
        await conn.session.call_tool("get-sum", {"a": 2, "b": 3})
        grew = await anyio.to_thread.run_sync(lambda: harness.wait_until(lambda: audit_rows() > shown, 20, 0.2))
        assert grew, firefox.page_source[:3000]
