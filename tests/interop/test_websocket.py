"""WebSocket upstreams: server-everything behind supergateway's stdio→WebSocket
bridge (a real WebSocket MCP server), driven by the official Python SDK
client through mcp-chain's full chain; and a device platform's enveloped
frames (ws_device.cjs, on the `ws` package supergateway brings).
"""

from __future__ import annotations

import contextlib

import mcp_types as types
import pytest

import harness
from harness import NODE, PERMISSIVE, SUPERGATEWAY, everything_argv, listening, open_session
from test_remote import Proxy, text

pytestmark = pytest.mark.anyio

DEVICE = harness.INTEROP / "ws_device.cjs"


@pytest.fixture
def everything_ws():
    """server-everything behind supergateway's WebSocket endpoint; one per
    test, since supergateway shares its one child among its clients."""
    harness.require_proxy_binary()
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: the SDK's stdio client cannot reach a URL without the proxy")
    port = harness.free_port()
    gateway = [NODE, str(SUPERGATEWAY), "--stdio", " ".join(everything_argv()), "--outputTransport", "ws", "--port", str(port)]
    with listening(gateway, port, "supergateway[ws]"):
        yield f"ws://127.0.0.1:{port}/message"


async def test_the_tour_basics_over_websocket_through_the_full_chain(everything_ws: str):
    chain = PERMISSIVE
    harness.require_chain(chain)
    async with open_session([everything_ws], chain, label="mcp-chain[ws]") as conn:
        init = conn.session.initialize_result
        assert init is not None and init.server_info.name == "mcp-servers/everything"
        tools = await conn.session.list_tools()
        names = {t.name for t in tools.tools}
        assert chain.tool("echo") in names and chain.tool("get-sum") in names, names
        result = await conn.session.call_tool(chain.tool("echo"), {"message": "over a websocket"})
        assert result.content[0].text == "Echo: over a websocket"
        result = await conn.session.call_tool(chain.tool("get-sum"), {"a": 2, "b": 3})
        assert "5" in result.content[0].text
        assert isinstance(await conn.session.send_ping(), types.EmptyResult)
    assert conn.audit is not None
    audit = harness.jsonl(conn.audit)
    calls = [r for r in audit if r.get("tool") == chain.tool("echo")]
    assert [r["kind"] for r in calls] == ["request", "response"], "the audit layer saw the call and its answer"


@contextlib.contextmanager
def device(tmp_path, *args: str):
    """The device fixture, and mcp-chain in front of it with the envelope:
    yields the proxy and the file of the frames the device received."""
    harness.require_proxy_binary()
    port = harness.free_port()
    log = tmp_path / "frames.jsonl"
    log.touch()
    config = tmp_path / "device.toml"
    config.write_text(f'[upstream]\nurl = "ws://127.0.0.1:{port}/"\nenvelope = "mcp-payload"\n')
    with listening([NODE, str(DEVICE), str(port), str(log)], port, "ws-device"):
        yield Proxy(f"ws://127.0.0.1:{port}/", "--config", str(config), *args), log


def test_a_device_platforms_envelope(tmp_path):
    with device(tmp_path) as (proxy, log):
        init = proxy.initialize()
        assert init["result"]["serverInfo"]["name"] == "esp32-box"
        # The device's own frames (hello, tts) are skipped; its MCP
        # notification comes through, unwrapped.
        assert proxy.read() == {
            "jsonrpc": "2.0",
            "method": "notifications/state_changed",
            "params": {"newState": "idle", "oldState": "connecting"},
        }
        assert text(proxy.call(1, "self.get_device_status")) == "called self.get_device_status"
        proxy.close()
    lines = harness.jsonl(log)
    assert lines[0] == {"protocol": "mcp"}, "the upgrade asked for subprotocol mcp"
    frames = lines[1:]
    assert [f["type"] for f in frames] == ["mcp"] * len(frames)
    assert [f["payload"].get("method") for f in frames] == ["initialize", "notifications/initialized", "tools/call"]
    # Once the device named its session, every frame carries it. The pipe
    # sent initialize and initialized together, maybe before the device's
    # hello arrived; the call went after initialize's answer.
    assert all(f.get("session_id") in (None, "dev-42") for f in frames[:2]), frames
    assert frames[2]["session_id"] == "dev-42", frames


def test_a_frame_over_the_cap_drops_the_connection_and_the_session_goes_on(tmp_path):
    """A frame bigger than max_message_bytes is not read: the connection is
    dropped, the call in flight answered with -32000, and after reconnecting
    (the handshake replayed in the envelope) calls work again."""
    with device(tmp_path, "--max-message-bytes", "65536") as (proxy, log):
        proxy.initialize()
        lost = proxy.call(1, "big")
        assert lost["error"]["code"] == -32000, lost
        answer = proxy.call_once_back(2, "self.get_device_status")
        assert text(answer) == "called self.get_device_status"
        proxy.close()
    frames = harness.jsonl(log)
    inits = [f for f in frames if f.get("payload", {}).get("method") == "initialize"]
    assert len(inits) == 2 and inits[1]["payload"]["params"] == inits[0]["payload"]["params"]
    assert sum(1 for f in frames if f.get("protocol") == "mcp") == 2, "it connected again"
