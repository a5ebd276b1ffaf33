"""The console's activity page and sessions, with Debian's Chromium driven
headless and the official Python SDK client in front of server-everything:
the layers' decisions and the audit's last lines as they happen, filtered
by tool and outcome; the approvals decided; the sessions running; a filter
holding markup shown as text; the page updating itself."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import everything_argv, open_session
from test_console import Console, browser, page_of  # noqa: F401 (browser: the fixture)

pytestmark = pytest.mark.anyio


def rows(driver, label: str) -> list[str]:
    """The rows of the table labelled `label`, each its cells' texts joined
    by " | " (header left out)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        found = driver.find_elements(By.XPATH, f"//table[@aria-label='{label}']//tr[td]")
        return [" | ".join(cell.text for cell in r.find_elements(By.TAG_NAME, "td")) for r in found]
    except StaleElementReferenceException:
        return []  # the page reloaded itself meanwhile


async def test_the_activity_shows_decisions_and_audit_filtered_and_live(browser, tmp_path: Path):
    audit = tmp_path / "audit.jsonl"
    console = Console(tmp_path)
    console.config.write_text(
        f'[[middleware]]\ntype = "audit"\npath = "{audit}"\n\n'
        '[[middleware]]\ntype = "filter"\ntools = { deny = ["get-sum"] }\n\n'
        + console.config.read_text().replace('ask = ["elicitation", "page"]', 'ask = ["page"]')
    )

    async with open_session(everything_argv(), console.chain, label="console-activity", env=console.env) as conn:
        base = page_of(conn)
        with pytest.raises(MCPError) as denied:
            await conn.session.call_tool("get-sum", {"a": 1, "b": 2})
        assert denied.value.error.data["layer"] == "filter"

        def allow(driver) -> None:
            from test_console import click, open_page

            open_page(driver, console.url(), 1)
            click(driver, "Allow once")

        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, allow, browser)
            answer = await conn.session.call_tool("echo", {"message": "seen"})
        assert answer.content[0].text == "Echo: seen"

        def look(driver) -> None:
            # The approval page: the decision just made, and this session.
            driver.get(base)
            decided = harness.wait_until(lambda: rows(driver, "Approvals decided lately"), 10, 0.2)
            assert any("echo" in r and "page_allowed" in r for r in decided), decided
            sessions = rows(driver, "Sessions")
            assert len(sessions) == 1 and sessions[0].startswith("stdio | stdio | (none) | "), sessions

            # The activity: the filter's refusal and the approval among the
            # decisions; both calls in the audit, newest first.
            driver.get(base + "activity")
            decisions = rows(driver, "Decisions of the layers")
            assert any(" | filter | denied | " in r and "rule" in r for r in decisions), decisions
            assert any(" | approve | answered | " in r and "page_allowed" in r for r in decisions), decisions
            lines = rows(driver, "Last audit lines")
            responses = [r.split(" | ")[3:] for r in lines if " | response | tools/call | " in r]
            assert responses[0][:4] == ["response", "tools/call", "echo", "ok"], responses
            assert responses[1][:4] == ["response", "tools/call", "get-sum", "denied"], responses
            assert responses[1][4].startswith("filter"), responses

            # Filtered by tool, then by outcome.
            driver.get(base + "activity?tool=echo")
            lines = rows(driver, "Last audit lines")
            assert lines and all(r.split(" | ")[5] == "echo" for r in lines), lines
            assert not any("filter" in r for r in rows(driver, "Decisions of the layers"))
            driver.get(base + "activity?outcome=denied")
            lines = rows(driver, "Last audit lines")
            assert lines and all(r.split(" | ")[5:7] == ["get-sum", "denied"] for r in lines), lines
            decisions = rows(driver, "Decisions of the layers")
            assert decisions and all(r.split(" | ")[2] == "denied" for r in decisions), decisions

            # A filter holding markup is shown as text, never run.
            hostile = '"><img src=x onerror="document.title=1"><script>document.title=2</script>'
            driver.get(base + "activity?tool=" + __import__("urllib.parse").parse.quote(hostile))
            from selenium.webdriver.common.by import By

            assert driver.find_elements(By.TAG_NAME, "img") == []
            assert driver.title == "mcp-chain: activity"
            assert driver.find_element(By.ID, "tool").get_attribute("value") == hostile
            if os.environ.get("MCP_CHAIN_SCREENSHOTS"):
                driver.get(base + "activity")
                driver.save_screenshot(str(harness.REPO / "docs" / "images" / "console-activity.png"))
            driver.get(base + "activity?tool=get-sum")

        await anyio.to_thread.run_sync(look, browser)
        before = len(rows(browser, "Last audit lines"))
        # A call made while the page is open: the page shows it by itself.
        with pytest.raises(MCPError):
            await conn.session.call_tool("get-sum", {"a": 3, "b": 4})

        def grew() -> bool:
            return len(rows(browser, "Last audit lines")) > before

        assert await anyio.to_thread.run_sync(lambda: harness.wait_until(grew, 20, 0.2)), browser.page_source[:3000]



def test_a_2026_client_that_cannot_ask_is_asked_on_the_page(browser, tmp_path: Path):
    """The Python SDK client in 2026-07-28 mode, without an elicitation
    callback, through the front: no input_required question it could not
    answer; the call waits while the page asks, and goes on or is refused;
    "Allow for this session" is not offered (a sessionless request has no
    session to remember it in)."""
    from mcp.client.client import Client
    from selenium.webdriver.common.by import By
    from test_console import click, open_page

    console = Console(tmp_path)
    console.config.write_text(
        '[[middleware]]\ntype = "approve"\ntools = ["add"]\nask = ["elicitation", "page"]\n'
        'remember = "session"\ntimeout = "60s"\n\n[console]\nlisten = "127.0.0.1:0"\n')
    modern = harness.INTEROP / "modern_stdio_server.py"
    python = harness.REPO / ".venv/bin/python"
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(console.config),
            "--", str(python), str(modern), harness.RUN_MARKER]
    seen: dict = {}

    def decide(label: str):
        def press(driver) -> None:
            open_page(driver, console.url(), 1)
            seen["buttons"] = [b.text for b in driver.find_elements(By.CSS_SELECTOR, "section.call button")]
            click(driver, label)
        return press

    async def run():
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="auto") as c:
            assert c.session.discover_result is not None, "not served as 2026-07-28"
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, decide("Allow once"), browser)
                allowed = await c.call_tool("add", {"a": 2, "b": 3})
            assert allowed.structured_content["result"] == 5
            assert seen["buttons"] == ["Allow once", "Deny"], seen
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, decide("Deny"), browser)
                with pytest.raises(MCPError) as refused:
                    await c.call_tool("add", {"a": 1, "b": 1})
            assert refused.value.error.data == {"layer": "approve", "reason": "page_denied"}
            assert (await c.call_tool("count", {"n": 1})).content[0].text == "counted to 1"

    with harness.listening(argv, port, "mcp-chain --listen approve page", env=console.env):
        anyio.run(run)
    assert len(console.urls()) >= 1
