"""The official Python SDK client driving @modelcontextprotocol/server-everything
through mcp-chain: the whole tour, once per chain (no config, every layer
permissive, a restrictive policy).

Each scenario is its own test, so a failure names it:
``test_everything.py::test_long_running_progress[permissive]``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import CHAINS, EMPTY, PERMISSIVE, Chain, Conn, everything_argv, open_session

pytestmark = pytest.mark.anyio

# Tools server-everything registers for a client that offers sampling,
# elicitation and roots (some only after `notifications/initialized`).
CORE_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
}
CONDITIONAL_TOOLS = {"get-roots-list", "trigger-sampling-request", "trigger-elicitation-request"}

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# How mcp-chain reaches server-everything: as its child over stdio, at the
# URL where it serves Streamable HTTP, or at its legacy HTTP+SSE URL (found
# by `transport = "auto"`: the first POST there gets 404).
UPSTREAMS = ["stdio", "http", "sse"]
# Or the client reaches mcp-chain over HTTP (`mcp-chain --listen`, the
# server its child): Streamable HTTP, or legacy HTTP+SSE.
FRONTS = ["front-http", "front-sse"]


@pytest.fixture(
    params=[(c, u) for u in UPSTREAMS + FRONTS for c in CHAINS],
    ids=lambda p: p[0].id if p[1] == "stdio" else f"{p[0].id}-{p[1]}",
)
def chain(request) -> Chain:
    chain, upstream = request.param
    harness.require_chain(chain)
    if upstream.startswith("front-"):
        chain = dataclasses.replace(chain, front=upstream.removeprefix("front-"))
    elif upstream != "stdio":
        url = request.getfixturevalue(f"everything_{upstream}")
        chain = dataclasses.replace(chain, url=url)
    return chain


# === client callbacks ===


class Client:
    """Client-side answers to server→client requests, with a record of each."""

    def __init__(self) -> None:
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.elicited: list[types.ElicitRequestParams] = []
        self.roots_asked = 0
        self.roots = [types.Root(uri="file:///tmp/interop-root-a", name="root-a")]

    async def sampling(self, context, params):
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by the interop client"),
            model="interop-model",
            stop_reason="endTurn",
        )

    async def elicitation(self, context, params):
        self.elicited.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True, "integer": 7})

    async def list_roots(self, context):
        self.roots_asked += 1
        return types.ListRootsResult(roots=list(self.roots))

    def callbacks(self) -> dict:
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
        }


def session(chain: Chain, client: Client | None = None, **kw):
    """A session to server-everything through `chain`. Only with a Client does
    the session offer sampling, elicitation and roots: the server then asks for
    roots after initialization and, with that request unanswered, no longer
    exits on end of input, which costs every session the client's 2 s
    shutdown wait."""
    callbacks = client.callbacks() if client else {}
    server = [chain.url] if chain.url else everything_argv()
    return open_session(server, chain, label=f"mcp-chain[{chain.id}]", **callbacks, **kw)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def all_pages(fetch, attr: str) -> list:
    items, cursor, pages = [], None, 0
    while True:
        page = await fetch(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        items += getattr(page, attr)
        pages += 1
        cursor = page.next_cursor
        if not cursor:
            return items
        assert pages < 100, "pagination does not end"


async def assert_unknown_tool(conn: Conn, name: str) -> None:
    """A call to a tool the client must not reach fails the way an unknown
    tool does: a -32602 error, or (server-everything's own way) an isError
    result saying it was not found."""
    try:
        result = await conn.session.call_tool(name, {})
    except MCPError as e:
        assert e.error.code == -32602, e.error
        return
    assert result.is_error, f"calling {name!r} succeeded: {result}"
    assert "not found" in text_of(result).lower(), text_of(result)


# === the tour ===


async def test_initialize_and_tools_list_changed(chain: Chain):
    async with session(chain, Client()) as conn:
        init = conn.session.initialize_result
        assert init is not None
        assert init.server_info.name == "mcp-servers/everything"
        caps = init.capabilities
        assert caps.tools and caps.prompts and caps.resources and caps.logging is not None
        assert caps.resources.subscribe
        # server-everything registers its capability-dependent tools after
        # `notifications/initialized` and says so with list_changed.
        await conn.wait_for(
            lambda: any(isinstance(n, types.ToolListChangedNotification) for n in conn.notifications),
            what="notifications/tools/list_changed",
        )


async def test_ping(chain: Chain):
    async with session(chain) as conn:
        with anyio.fail_after(10):
            assert isinstance(await conn.session.send_ping(), types.EmptyResult)


async def test_tools_list_all_pages(chain: Chain):
    async with session(chain, Client()) as conn:
        tools = await all_pages(conn.session.list_tools, "tools")
        names = [t.name for t in tools]
        assert len(names) == len(set(names)), f"duplicate tools: {names}"
        assert all(n.startswith(chain.tool_prefix) for n in names), names
        upstream = {chain.upstream(n) for n in names}
        expected = (CORE_TOOLS | CONDITIONAL_TOOLS) - chain.hidden_tools
        assert expected <= upstream, f"missing: {sorted(expected - upstream)}"
        assert not (upstream & chain.hidden_tools), f"hidden tools listed: {sorted(upstream & chain.hidden_tools)}"
        for t in tools:
            assert len(t.name) <= 64 and t.input_schema.get("type") == "object", t
        structured = next(t for t in tools if t.name == chain.tool("get-structured-content"))
        assert structured.output_schema and "temperature" in json.dumps(structured.output_schema)


async def test_tools_call(chain: Chain):
    async with session(chain) as conn:
        echo = await conn.session.call_tool(chain.tool("echo"), {"message": "hello through the chain"})
        assert not echo.is_error and text_of(echo) == "Echo: hello through the chain"
        total = await conn.session.call_tool(chain.tool("get-sum"), {"a": 19, "b": 23})
        assert text_of(total) == "The sum of 19 and 23 is 42."
    if chain.audited:
        assert conn.audit is not None and conn.audit.is_file(), "audit layer wrote no file"
        lines = harness.jsonl(conn.audit)
        assert any("tools/call" in json.dumps(line) for line in lines), lines[:5]


async def test_tools_call_invalid_arguments(chain: Chain):
    async with session(chain) as conn:
        try:
            result = await conn.session.call_tool(chain.tool("get-sum"), {"a": "not a number"})
        except MCPError as e:
            assert e.error.code in (-32602, -32603), e.error
        else:
            assert result.is_error, result


async def test_structured_content(chain: Chain):
    async with session(chain) as conn:
        await conn.session.list_tools()  # so the SDK validates against outputSchema
        result = await conn.session.call_tool(chain.tool("get-structured-content"), {"location": "Chicago"})
        assert not result.is_error
        sc = result.structured_content
        assert set(sc) == {"temperature", "conditions", "humidity"}, sc
        assert json.loads(text_of(result)) == sc
        raw = conn.responses_to(conn.outgoing("tools/call")[-1]["id"])[0]["result"]
        assert raw["structuredContent"] == sc


async def test_image_content(chain: Chain):
    async with session(chain) as conn:
        result = await conn.session.call_tool(chain.tool("get-tiny-image"), {})
        images = [c for c in result.content if isinstance(c, types.ImageContent)]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data).startswith(PNG_MAGIC)


async def test_annotations(chain: Chain):
    async with session(chain) as conn:
        result = await conn.session.call_tool(
            chain.tool("get-annotated-message"), {"messageType": "error", "includeImage": True}
        )
        first = result.content[0]
        assert first.annotations is not None and first.annotations.priority == 1.0
        assert set(first.annotations.audience) == {"user", "assistant"}
        assert any(isinstance(c, types.ImageContent) for c in result.content)


async def test_resource_links(chain: Chain):
    async with session(chain) as conn:
        result = await conn.session.call_tool(chain.tool("get-resource-links"), {"count": 4})
        links = [c for c in result.content if isinstance(c, types.ResourceLink)]
        assert len(links) == 4, result.content
        for link in links:
            read = await conn.session.read_resource(link.uri)
            assert read.contents and str(read.contents[0].uri) == str(link.uri)


async def test_embedded_resource(chain: Chain):
    async with session(chain) as conn:
        result = await conn.session.call_tool(
            chain.tool("get-resource-reference"), {"resourceType": "Text", "resourceId": 3}
        )
        embedded = [c for c in result.content if isinstance(c, types.EmbeddedResource)]
        assert len(embedded) == 1
        assert str(embedded[0].resource.uri) == "demo://resource/dynamic/text/3"


async def test_unknown_tool(chain: Chain):
    async with session(chain) as conn:
        await assert_unknown_tool(conn, chain.tool("no-such-tool"))
        for hidden in sorted(chain.hidden_tools):
            # A hidden tool is unreachable under its own name and the prefixed one.
            await assert_unknown_tool(conn, hidden)
            await assert_unknown_tool(conn, chain.tool(hidden))
        # The session is still fine afterwards.
        assert text_of(await conn.session.call_tool(chain.tool("echo"), {"message": "ok"})) == "Echo: ok"


async def test_long_running_progress(chain: Chain):
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async with session(chain) as conn:
        with anyio.fail_after(20):
            result = await conn.session.call_tool(
                chain.tool("trigger-long-running-operation"),
                {"duration": 1, "steps": 4},
                progress_callback=on_progress,
            )
        assert "Long running operation completed" in text_of(result)
        assert [p[0] for p in progress] == [1, 2, 3, 4], progress
        assert all(p[1] == 4 for p in progress)
        token = conn.outgoing("tools/call")[-1]["params"]["_meta"]["progressToken"]
        notes = conn.incoming("notifications/progress")
        assert notes and all(n["params"]["progressToken"] == token for n in notes), notes


async def test_cancellation(chain: Chain):
    """A cancelled call gets no response, and the session carries on."""
    async with session(chain) as conn:
        started = anyio.Event()

        async def on_progress(value, total, message):
            started.set()

        async def call():
            await conn.session.call_tool(
                chain.tool("trigger-long-running-operation"),
                {"duration": 2, "steps": 4},
                progress_callback=on_progress,
            )

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await started.wait()
                tg.cancel_scope.cancel()
        request_id = conn.outgoing("tools/call")[-1]["id"]
        cancels = conn.outgoing("notifications/cancelled")
        assert cancels and cancels[-1]["params"]["requestId"] == request_id, cancels
        # Well past the operation's natural end: still no response for it.
        await anyio.sleep(2.5)
        assert conn.responses_to(request_id) == [], conn.responses_to(request_id)
        assert text_of(await conn.session.call_tool(chain.tool("echo"), {"message": "after"})) == "Echo: after"


async def test_resources_list_and_read(chain: Chain):
    async with session(chain) as conn:
        resources = await all_pages(conn.session.list_resources, "resources")
        uris = {str(r.uri) for r in resources}
        assert "demo://resource/static/document/features.md" in uris, uris
        assert not (uris & chain.hidden_resources), uris & chain.hidden_resources

        text = await conn.session.read_resource("demo://resource/static/document/features.md")
        content = text.contents[0]
        assert isinstance(content, types.TextResourceContents) and "Everything Server" in content.text

        blob = await conn.session.read_resource("demo://resource/dynamic/blob/5")
        content = blob.contents[0]
        assert isinstance(content, types.BlobResourceContents)
        assert base64.b64decode(content.blob).startswith(b"Resource 5:")

        for hidden in sorted(chain.hidden_resources):
            with pytest.raises(MCPError) as err:
                await conn.session.read_resource(hidden)
            assert err.value.error.code in (-32002, -32602), err.value.error
            # Every spelling the server may read as the same resource is
            # refused too, and never reaches it.
            for spelling in equivalent_spellings(hidden):
                with pytest.raises(MCPError) as err:
                    await conn.session.read_resource(spelling)
                assert err.value.error.code == -32002, (spelling, err.value.error)
                sent = [m for m in conn.outgoing("resources/read") if m["params"]["uri"] == spelling]
                assert sent, f"the client sent another spelling than {spelling}"


def equivalent_spellings(uri: str) -> list[str]:
    """RFC 3986 equivalents of `uri` (scheme://host/dir/.../name)."""
    scheme, rest = uri.split("://", 1)
    host, path = rest.split("/", 1)
    folder, _, name = path.rpartition("/")
    last = folder.rsplit("/", 1)[-1]
    return [
        f"{scheme.upper()}://{rest}",
        f"{scheme}://{host.upper()}/{path}",
        f"{scheme}://{host}/{folder}/../{last}/{name}",
        f"{scheme}://{host}/{folder}/./{name}",
        f"{scheme}://{host}/{path.replace(name[0], '%' + format(ord(name[0]), '02x'), 1)}",
    ]


async def test_resource_templates(chain: Chain):
    async with session(chain) as conn:
        templates = await all_pages(conn.session.list_resource_templates, "resource_templates")
        assert {t.uri_template for t in templates} >= {
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}",
        }
        read = await conn.session.read_resource("demo://resource/dynamic/text/42")
        assert read.contents[0].text.startswith("Resource 42:")


async def test_subscribe_updated_unsubscribe(chain: Chain):
    uri = "demo://resource/dynamic/text/7"

    def updates():
        return [n for n in conn.incoming("notifications/resources/updated") if n["params"]["uri"] == uri]

    async with session(chain) as conn:
        await conn.session.subscribe_resource(uri)
        # The toggle sends one round of updates at once, then every 5 s.
        await conn.session.call_tool(chain.tool("toggle-subscriber-updates"), {})
        await conn.wait_for(updates, what=f"notifications/resources/updated for {uri}")
        await conn.session.unsubscribe_resource(uri)
        # Off and on again: the immediate round must no longer include the URI.
        await conn.session.call_tool(chain.tool("toggle-subscriber-updates"), {})
        seen = len(updates())
        await conn.session.call_tool(chain.tool("toggle-subscriber-updates"), {})
        await conn.session.send_ping()
        await anyio.sleep(0.5)
        assert len(updates()) == seen, "update after unsubscribe"
        await conn.session.call_tool(chain.tool("toggle-subscriber-updates"), {})


async def test_prompts(chain: Chain):
    async with session(chain) as conn:
        prompts = await all_pages(conn.session.list_prompts, "prompts")
        names = {p.name for p in prompts}
        assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= names, names
        simple = await conn.session.get_prompt("simple-prompt")
        assert simple.messages and simple.messages[0].role == "user"
        args = await conn.session.get_prompt("args-prompt", {"city": "Lisbon", "state": "Estremadura"})
        text = args.messages[0].content.text
        assert "Lisbon" in text and "Estremadura" in text, text
        embedded = await conn.session.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "2"})
        assert any(isinstance(m.content, types.EmbeddedResource) for m in embedded.messages)
        with pytest.raises(MCPError):
            await conn.session.get_prompt("no-such-prompt")


async def test_completion(chain: Chain):
    async with session(chain) as conn:
        prompt = types.PromptReference(type="ref/prompt", name="completable-prompt")
        result = await conn.session.complete(prompt, {"name": "department", "value": "S"})
        assert result.completion.values == ["Sales", "Support"], result
        result = await conn.session.complete(
            prompt, {"name": "name", "value": ""}, context_arguments={"department": "Engineering"}
        )
        assert result.completion.values == ["Alice", "Bob", "Charlie"], result
        template = types.ResourceTemplateReference(type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}")
        result = await conn.session.complete(template, {"name": "resourceId", "value": "12"})
        assert result.completion.values == ["12"]


async def test_logging(chain: Chain):
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params):
        logs.append(params)

    async with session(chain, logging_callback=on_log) as conn:
        await conn.session.set_logging_level("debug")
        await conn.session.call_tool(chain.tool("toggle-simulated-logging"), {})  # one message at once
        # The server picks one of eight at random; seven read "Debug-level message" and the like,
        # the alert one reads "Alert level-message".
        simulated = re.compile(r"^\w+[- ]level[- ]message")
        await conn.wait_for(
            lambda: [m for m in conn.incoming("notifications/message") if simulated.match(str(m["params"]["data"]))],
            what="a simulated notifications/message",
        )
        await conn.session.call_tool(chain.tool("toggle-simulated-logging"), {})
        assert logs and all(l.level in types.LoggingLevel.__args__ for l in logs), logs


async def test_sampling(chain: Chain):
    client = Client()
    async with session(chain, client) as conn:
        with anyio.fail_after(20):
            try:
                result = await conn.session.call_tool(
                    chain.tool("trigger-sampling-request"), {"prompt": "say hi", "maxTokens": 20}
                )
            except MCPError as e:
                result = e
        if chain.sampling_blocked:
            assert client.sampled == [], "blocked sampling reached the client"
            assert conn.incoming("sampling/createMessage") == []
            assert isinstance(result, MCPError) or result.is_error, result
        else:
            assert not isinstance(result, MCPError), result
            assert len(client.sampled) == 1
            assert "say hi" in client.sampled[0].messages[0].content.text
            assert "sampled by the interop client" in text_of(result)


async def test_elicitation(chain: Chain):
    client = Client()
    async with session(chain, client) as conn:
        with anyio.fail_after(20):
            result = await conn.session.call_tool(chain.tool("trigger-elicitation-request"), {})
        assert len(client.elicited) == 1
        assert "name" in client.elicited[0].requested_schema["properties"]
        text = text_of(result)
        assert "Ada Lovelace" in text and "Favorite Integer: 7" in text, text


async def test_roots(chain: Chain):
    client = Client()
    async with session(chain, client) as conn:
        # server-everything asks for roots shortly after initialization.
        await conn.wait_for(lambda: client.roots_asked >= 1, what="roots/list from the server")
        result = await conn.session.call_tool(chain.tool("get-roots-list"), {})
        assert "file:///tmp/interop-root-a" in text_of(result), text_of(result)
        client.roots.append(types.Root(uri="file:///tmp/interop-root-b", name="root-b"))
        await conn.session.send_roots_list_changed()
        await conn.wait_for(lambda: client.roots_asked >= 2, what="roots/list after roots/list_changed")
        await conn.wait_for(
            lambda: [m for m in conn.incoming("notifications/message") if "2 root(s)" in str(m["params"]["data"])],
            what="the server's log of the new roots",
        )
        result = await conn.session.call_tool(chain.tool("get-roots-list"), {})
        assert "interop-root-b" in text_of(result), text_of(result)


async def test_fifty_concurrent_calls(chain: Chain):
    async with session(chain) as conn:
        results: dict[int, str] = {}

        async def one(i: int):
            r = await conn.session.call_tool(chain.tool("get-sum"), {"a": i, "b": 1000})
            results[i] = text_of(r)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                # A slow call in flight the whole time must not hold the others up.
                tg.start_soon(
                    conn.session.call_tool, chain.tool("trigger-long-running-operation"), {"duration": 1, "steps": 1}
                )
                for i in range(50):
                    tg.start_soon(one, i)
        assert results == {i: f"The sum of {i} and 1000 is {i + 1000}." for i in range(50)}


async def test_large_payload(chain: Chain):
    """~5 MB each way in one message. Over HTTP, server-everything refuses a
    body that big (HTTP 413 from its Streamable HTTP transport, 400 from its
    legacy SSE one), answering before it has read the body and closing the
    connection: the client gets that refusal as an error naming the status,
    or, when the server's close breaks the upload before its answer can be
    read (a race of the server's own making, which any HTTP client meets),
    as the broken connection. Either way the session goes on.

    Through mcp-chain's legacy SSE front the answer is one event, and the
    Python SDK's legacy client refuses events over 1 MiB (not settable):
    there it is ~1 MB each way."""
    lines = 950 if chain.front == "sse" else 5000
    message = ("0123456789abcdef" * 64 + "\n") * lines  # 5,125,000 bytes (973,750)
    async with session(chain) as conn:
        if chain.url:
            with anyio.fail_after(60), pytest.raises(MCPError) as refused:
                await conn.session.call_tool(chain.tool("echo"), {"message": message})
            status = 400 if chain.url.endswith("/sse") else 413
            data = refused.value.error.data
            assert refused.value.error.code == -32000, refused.value.error
            if data.get("reason") == "transport":
                assert data == {"layer": "upstream", "reason": "transport"}, data
                assert "error writing a body" in refused.value.error.message, refused.value.error
            else:
                assert data == {"layer": "upstream", "reason": "http_status", "status": status}, data
                assert f"HTTP {status}" in refused.value.error.message
            result = await conn.session.call_tool(chain.tool("echo"), {"message": "still here"})
            assert text_of(result) == "Echo: still here"
            return
        with anyio.fail_after(60):
            result = await conn.session.call_tool(chain.tool("echo"), {"message": message})
        assert text_of(result) == "Echo: " + message


async def test_same_results_as_empty_chain():
    """Every layer configured permissively changes nothing but the tool names."""
    harness.require_chain(PERMISSIVE)

    async def transcript(chain: Chain) -> dict:
        async with session(chain) as conn:
            s = conn.session
            tools = sorted(
                (
                    t.model_dump(mode="json", exclude={"name"}) | {"name": chain.upstream(t.name)}
                    for t in await all_pages(s.list_tools, "tools")
                ),
                key=lambda t: t["name"],
            )
            calls = {}
            for name, args in [
                ("echo", {"message": "same"}),
                ("get-sum", {"a": 1, "b": 2}),
                ("get-tiny-image", {}),
                ("get-annotated-message", {"messageType": "success", "includeImage": True}),
                ("no-such-tool", {}),
            ]:
                r = await s.call_tool(chain.tool(name), args)
                text = text_of(r).replace(chain.tool(name), name)
                calls[name] = r.model_dump(mode="json", exclude={"content"}) | {"text": text}
                calls[name]["kinds"] = [c.type for c in r.content]
            return {
                "server": s.initialize_result.model_dump(mode="json"),
                "tools": tools,
                "calls": calls,
                "prompts": (await s.list_prompts()).model_dump(mode="json"),
                "resources": (await s.list_resources()).model_dump(mode="json"),
                "templates": (await s.list_resource_templates()).model_dump(mode="json"),
                "prompt": (await s.get_prompt("args-prompt", {"city": "Oslo"})).model_dump(mode="json"),
                "doc": (await s.read_resource("demo://resource/static/document/features.md")).model_dump(mode="json"),
            }

    direct, permissive = await transcript(EMPTY), await transcript(PERMISSIVE)
    for key in direct:
        assert permissive[key] == direct[key], f"{key} differs through the permissive chain"
