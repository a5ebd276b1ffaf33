"""The guard layers in front of server-everything, driven by the official
Python SDK client, over stdio and over Streamable HTTP. limit: a resource's
text cut to fit (and saying so), a result that cannot be cut refused with
its size and the limit, listings trimmed, what fits passed as it came.
validate: a wrong argument type refused before the server sees it."""

from __future__ import annotations

import dataclasses
import json

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import CONFIGS, Chain, everything_argv, open_session

pytestmark = pytest.mark.anyio

LIMIT = Chain("limit", CONFIGS / "limit.toml")


def reached(chain: Chain, request) -> Chain:
    """`chain`, with server-everything as its child (stdio) or at its
    Streamable HTTP URL, as the fixture's parameter says."""
    harness.require_chain(chain)
    if request.param == "http":
        return dataclasses.replace(chain, url=request.getfixturevalue("everything_http"))
    return chain


@pytest.fixture(params=["stdio", "http"])
def chain(request) -> Chain:
    return reached(LIMIT, request)


def session(chain: Chain):
    server = [chain.url] if chain.url else everything_argv()
    return open_session(server, chain, label=f"mcp-chain[{chain.id}]")


async def test_resource_text_is_cut_to_fit_and_says_so(chain: Chain):
    async with session(chain) as conn:
        read = await conn.session.read_resource("demo://resource/static/document/features.md")
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert "[mcp-chain: cut to fit 300 bytes; the whole result was" in content.text, content.text
        result = [m for d, m in conn.wire if d == "in" and m.get("id") is not None and "result" in m][-1]["result"]
        assert len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()) <= 300


async def test_a_result_that_cannot_be_cut_is_refused(chain: Chain):
    async with session(chain) as conn:
        with pytest.raises(MCPError) as refused:
            await conn.session.call_tool("get-structured-content", {"location": "Chicago"})
        error = refused.value.error
        assert error.code == 403, error
        assert error.data["layer"] == "limit" and error.data["reason"] == "too_large", error.data
        assert error.data["limit"] == 50 and error.data["size"] > 50, error.data
        assert "structuredContent" in error.message, error.message
        # What fits passes as it came.
        result = await conn.session.call_tool("echo", {"message": "fits"})
        assert result.content[0].text == "Echo: fits"


async def test_listings_are_trimmed(chain: Chain):
    async with session(chain) as conn:
        tools = await conn.session.list_tools()
        assert len(tools.tools) == 5, [t.name for t in tools.tools]


# === validate ===

VALIDATE = Chain("validate", CONFIGS / "validate.toml")


@pytest.fixture(params=["stdio", "http"])
def validating(request) -> Chain:
    return reached(VALIDATE, request)


async def test_validate_refuses_a_wrong_argument_type(validating: Chain):
    async with session(validating) as conn:
        # Before any listing: the layer asks for one itself.
        with pytest.raises(MCPError) as refused:
            await conn.session.call_tool("get-sum", {"a": "two", "b": 3})
        error = refused.value.error
        assert error.code == -32602, error
        assert error.data["layer"] == "validate" and error.data["reason"] == "invalid_arguments", error.data
        assert [e["pointer"] for e in error.data["errors"]] == ["/a"], error.data
        assert error.message.startswith("mcp-chain validate:"), error.message
        result = await conn.session.call_tool("get-sum", {"a": 2, "b": 3})
        assert "5" in result.content[0].text
        # A structured result that fits its outputSchema passes.
        weather = await conn.session.call_tool("get-structured-content", {"location": "Chicago"})
        assert weather.structured_content is not None
