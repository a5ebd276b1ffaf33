"""mcp-server-time (PyPI, a Python server on the official Python SDK) through
mcp-chain, driven by the official Python SDK client."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import EMPTY, TIME_SERVER, open_session

pytestmark = pytest.mark.anyio


def time_argv() -> list[str]:
    return [str(TIME_SERVER), "--local-timezone", "UTC"]


async def test_time_server():
    harness.require_chain(EMPTY)
    async with open_session(time_argv(), EMPTY, label="mcp-chain[time]") as conn:
        s = conn.session
        assert s.initialize_result.server_info.name == "mcp-time"
        tools = {t.name for t in (await s.list_tools()).tools}
        assert {"get_current_time", "convert_time"} <= tools, tools

        now = await s.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
        assert not now.is_error
        body = json.loads(now.content[0].text)
        assert body["timezone"] == "Asia/Tokyo" and "datetime" in body, body

        converted = await s.call_tool(
            "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Lisbon"}
        )
        body = json.loads(converted.content[0].text)
        assert body["source"]["timezone"] == "UTC" and body["target"]["timezone"] == "Europe/Lisbon", body

        try:
            bad = await s.call_tool("get_current_time", {"timezone": "Not/AZone"})
        except MCPError:
            pass
        else:
            assert bad.is_error, bad
