"""2026-07-28 clients of a gateway ([servers.NAME]): no initialize, no
session. The official Python SDK client in `auto` mode finds the gateway
speaking 2026-07-28 (server/discover) over stdio and over the HTTP front
(requests without a session), and uses a 2026-07-28 server (the SDK's own,
modern_stdio_server.py) and a 2025-only one (mcp-server-time) behind it by
their prefixed names, with progress."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client.client import Client

import harness

pytestmark = pytest.mark.anyio

PYTHON = harness.REPO / ".venv/bin/python"
MODERN_SERVER = harness.INTEROP / "modern_stdio_server.py"


def config(tmp: Path) -> Path:
    path = tmp / "modern.toml"
    path.write_text(f"""
[servers.modern]
command = "{PYTHON}"
args = ["{MODERN_SERVER}", "{harness.RUN_MARKER}"]

[servers.time]
command = "{harness.TIME_SERVER}"

[gateway]
startup_timeout = "30s"

[[middleware]]
type = "audit"
path = "{tmp / 'all.jsonl'}"
""")
    return path


async def use(client: Client) -> list[float]:
    assert client.session.discover_result is not None, "not served as 2026-07-28"
    assert "2026-07-28" in client.session.discover_result.supported_versions
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"modern__add", "modern__count", "time__get_current_time"} <= names, names
    assert (await client.call_tool("modern__add", {"a": 2, "b": 40})).structured_content["result"] == 42
    now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
    assert not now.is_error and "UTC" in now.content[0].text, now
    progress: list[float] = []

    async def on_progress(value, total, message):
        progress.append(value)

    counted = await client.call_tool("modern__count", {"n": 3}, progress_callback=on_progress)
    assert counted.content[0].text == "counted to 3"
    return progress


async def test_a_2026_client_over_stdio_uses_both_eras_of_server(tmp_path: Path):
    path = config(tmp_path)
    params = StdioServerParameters(command=str(harness.MCP_CHAIN), args=["--config", str(path)])
    with anyio.fail_after(60):
        async with Client(params, mode="auto") as client:
            client_progress = await use(client)
    assert client_progress == [1.0, 2.0, 3.0]
    lines = harness.jsonl(tmp_path / "all.jsonl")
    calls = [r for r in lines if r.get("method") == "tools/call" and r["kind"] == "response"]
    assert [(r["tool"], r.get("server"), r["outcome"]) for r in calls] == [
        ("modern__add", "modern", "ok"), ("time__get_current_time", "time", "ok"), ("modern__count", "modern", "ok")]
    assert not [r for r in lines if r.get("method") == "initialize"], "a 2026-07-28 client sends no initialize"


def test_2026_clients_of_the_front_use_a_gateway_without_sessions(tmp_path: Path):
    path = config(tmp_path)
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(path), "--log-level", "info"]
    with harness.listening(argv, port, "gateway-modern-front"):
        url = f"http://127.0.0.1:{port}/mcp"

        async def two_clients():
            results = []

            async def one():
                async with Client(url, mode="auto") as client:
                    results.append(await use(client))

            with anyio.fail_after(90):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(one)
                    tg.start_soon(one)
            return results

        results = anyio.run(two_clients)
        assert results == [[1.0, 2.0, 3.0]] * 2, results
