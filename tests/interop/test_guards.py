"""The guard layers in front of server-everything, driven by the official
Python SDK client, over stdio and over Streamable HTTP. limit: a resource's
text cut to fit (and saying so), a result that cannot be cut refused with
its size and the limit, listings trimmed, what fits passed as it came.
validate: a wrong argument type refused before the server sees it.
approve: the SDK client's elicitation callback allows and refuses, a client
without the capability is refused (or let through by fallback), and a
2026-07-28 client answers the question as an input_required round. pin: a
tool whose description differs from the one the user trusted is hidden and
refused until `mcp-chain pin accept`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
from pathlib import Path

import anyio
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


# === approve ===


def approving(tmp_path: Path, extra: str = "") -> Chain:
    config = tmp_path / "approve.toml"
    config.write_text(f'[[middleware]]\ntype = "approve"\ntools = ["echo", "add"]\n{extra}')
    return Chain("approve", config)


def answering(*decisions: str, asked: list | None = None):
    """An elicitation callback that answers each question with the next
    decision ("decline" declines the form)."""
    answers = iter(decisions)

    async def elicit(context, params):
        if asked is not None:
            asked.append(params)
        decision = next(answers)
        if decision == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": decision})

    return elicit


@pytest.mark.parametrize("front", [None, "http", "sse"])
async def test_approve_the_python_sdk_client_answers_both_ways(tmp_path: Path, front: str | None):
    """Over stdio, and through the HTTP front (Streamable HTTP and legacy
    SSE), where the question travels on the call's own stream."""
    # An audit between approve and the server records what reached it.
    behind = tmp_path / "behind-approve.jsonl"
    extra = f'remember = "session"\n\n[[middleware]]\ntype = "audit"\npath = "{behind}"\npayloads = true\n'
    chain = dataclasses.replace(approving(tmp_path, extra), front=front)
    harness.require_chain(chain)
    asked: list = []
    elicit = answering("deny", "decline", "allow_session", asked=asked)
    async with open_session(everything_argv(), chain, label="approve", elicitation_callback=elicit) as conn:
        for reason in ("denied", "declined"):
            with pytest.raises(MCPError) as refused:
                await conn.session.call_tool("echo", {"message": "rm -rf"})
            assert refused.value.error.code == 403, refused.value.error
            assert refused.value.error.data == {"layer": "approve", "reason": reason}
        result = await conn.session.call_tool("echo", {"message": "ok"})
        assert result.content[0].text == "Echo: ok"
        again = await conn.session.call_tool("echo", {"message": "again"})
        assert again.content[0].text == "Echo: again"
        assert len(asked) == 3, "allowed for the session: not asked a fourth time"
        assert 'Allow the tool "echo" to run?' in asked[0].message and '"message" = "rm -rf"' in asked[0].message
        # A tool no pattern names is not asked about.
        total = await conn.session.call_tool("get-sum", {"a": 1, "b": 2})
        assert "3" in total.content[0].text and len(asked) == 3
    # The client sent five calls; the server got the three allowed.
    lines = harness.jsonl(behind)
    reached = [line["params"]["arguments"] for line in lines if line["kind"] == "request" and line.get("method") == "tools/call"]
    assert reached == [{"message": "ok"}, {"message": "again"}, {"a": 1, "b": 2}], reached


async def test_approve_refuses_a_client_that_cannot_ask(tmp_path: Path):
    chain = approving(tmp_path)
    harness.require_chain(chain)
    async with open_session(everything_argv(), chain, label="approve-no-elicitation") as conn:
        with pytest.raises(MCPError) as refused:
            await conn.session.call_tool("echo", {"message": "x"})
        assert refused.value.error.data == {"layer": "approve", "reason": "no_elicitation"}
        assert "cannot ask its user" in refused.value.error.message
    allowing = approving(tmp_path, 'fallback = "allow"\n')
    async with open_session(everything_argv(), allowing, label="approve-fallback") as conn:
        assert (await conn.session.call_tool("echo", {"message": "x"})).content[0].text == "Echo: x"


def test_approve_a_2026_client_answers_an_input_required_question(tmp_path: Path):
    """The Python SDK client in 2026-07-28 mode through the front: the
    question comes as an input_required result, the SDK asks its callback
    and retries with the answer and the sealed state."""
    from mcp.client.client import Client

    chain = approving(tmp_path)
    harness.require_chain(chain)
    modern = harness.INTEROP / "modern_stdio_server.py"
    python = harness.REPO / ".venv/bin/python"
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(chain.config), "--", str(python), str(modern), harness.RUN_MARKER]
    asked: list = []

    async def run():
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, mode="auto", elicitation_callback=answering("allow_once", "deny", asked=asked)) as c:
            assert c.session.discover_result is not None, "not served as 2026-07-28"
            allowed = await c.call_tool("add", {"a": 2, "b": 3})
            assert allowed.structured_content["result"] == 5
            with pytest.raises(MCPError) as refused:
                await c.call_tool("add", {"a": 1, "b": 1})
            assert refused.value.error.data == {"layer": "approve", "reason": "denied"}
            assert (await c.call_tool("count", {"n": 1})).content[0].text == "counted to 1"

    with harness.listening(argv, port, "mcp-chain --listen approve"):
        anyio.run(run)
    assert len(asked) == 2 and 'Allow the tool "add" to run?' in asked[0].message


# === pin ===


def pinning(tmp_path: Path) -> tuple[Chain, Path, Path]:
    pins = tmp_path / "pins.json"
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "pin.toml"
    config.write_text(
        f'[[middleware]]\ntype = "audit"\npath = "{audit}"\n\n[[middleware]]\ntype = "pin"\npath = "{pins}"\n'
    )
    return Chain("pin", config), pins, audit


async def test_pin_hides_a_tool_whose_description_changed(tmp_path: Path):
    """server-everything's `echo` as the user trusted it had another
    description: what a rug pull looks like to the pin file."""
    chain, pins, audit = pinning(tmp_path)
    harness.require_chain(chain)
    async with open_session(everything_argv(), chain, label="pin-first") as conn:
        first = {t.name for t in (await conn.session.list_tools()).tools}
        assert "echo" in first
    pinned = json.loads(pins.read_text())
    assert pins.stat().st_mode & 0o777 == 0o600
    trusted = json.dumps("Echoes back the input.", separators=(",", ":")).encode()
    pinned["tools"]["echo"]["pinned"]["description"] = "sha256:" + hashlib.sha256(trusted).hexdigest()
    pins.write_text(json.dumps(pinned, indent=2))

    async with open_session(everything_argv(), chain, label="pin-second") as conn:
        # A call before any listing: the layer lists and judges first.
        with pytest.raises(MCPError) as refused:
            await conn.session.call_tool("echo", {"message": "x"})
        assert refused.value.error.data == {"layer": "pin", "reason": "changed", "changed": ["description"]}
        second = {t.name for t in (await conn.session.list_tools()).tools}
        assert second == first - {"echo"}
        assert (await conn.session.call_tool("get-sum", {"a": 1, "b": 2})).content
    listed = subprocess.run(
        [str(harness.MCP_CHAIN), "pin", "list", "--config", str(chain.config)], capture_output=True, text=True, check=True
    ).stdout
    assert "echo" in listed and "changed (description)" in listed, listed
    notes = [line.get("notes", {}).get("pin") for line in harness.jsonl(audit)]
    assert {"kind": "tool", "name": "echo", "changed": ["description"]} in [d for n in notes if n for d in n["drift"]]
    subprocess.run([str(harness.MCP_CHAIN), "pin", "accept", "echo", "--config", str(chain.config)], check=True, capture_output=True)
    async with open_session(everything_argv(), chain, label="pin-accepted") as conn:
        assert (await conn.session.call_tool("echo", {"message": "x"})).content[0].text == "Echo: x"


def test_pin_holds_for_2026_clients_through_the_front(tmp_path: Path):
    """The Python SDK client in 2026-07-28 mode, through the front's shared
    sessions: the first listing is pinned; later, a tool whose description
    differs from the pinned one is missing from the listing and its call
    refused, while the others work."""
    from mcp.client.client import Client

    chain, pins, _ = pinning(tmp_path)
    harness.require_chain(chain)
    modern = harness.INTEROP / "modern_stdio_server.py"
    python = harness.REPO / ".venv/bin/python"

    def served():
        port = harness.free_port()
        argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(chain.config), "--", str(python), str(modern), harness.RUN_MARKER]
        return port, harness.listening(argv, port, "mcp-chain --listen pin")

    async def first(port):
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="auto") as c:
            assert c.session.discover_result is not None, "not served as 2026-07-28"
            return {t.name for t in (await c.list_tools()).tools}

    async def second(port):
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="auto") as c:
            names = {t.name for t in (await c.list_tools()).tools}
            with pytest.raises(MCPError) as refused:
                await c.call_tool("add", {"a": 1, "b": 2})
            counted = await c.call_tool("count", {"n": 1})
            return names, refused.value.error, counted.content[0].text

    port, server = served()
    with server:
        listed = anyio.run(first, port)
    assert {"add", "count"} <= listed, listed
    pinned = json.loads(pins.read_text())
    trusted = json.dumps("Adds two numbers, as it always did.", separators=(",", ":")).encode()
    pinned["tools"]["add"]["pinned"]["description"] = "sha256:" + hashlib.sha256(trusted).hexdigest()
    pins.write_text(json.dumps(pinned, indent=2))
    port, server = served()
    with server:
        names, error, counted = anyio.run(second, port)
    assert names == listed - {"add"}, names
    assert error.code == 403 and error.data == {"layer": "pin", "reason": "changed", "changed": ["description"]}, error
    assert counted == "counted to 1"
