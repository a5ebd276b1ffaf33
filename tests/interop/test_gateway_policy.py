"""Policy by server in a gateway ([servers.NAME]): the audit names each
line's server (in the shared chain by the name's prefix, in a server's own
chain always), a rate limit with scope = "server" gives each server its own
buckets, approve's question names the server, and `when`/`unless` in a
server's own chain judge each HTTP session's caller.

Two copies of the demo server, prefixes `a` and `b`, with the official
Python SDK client over stdio, and raw HTTP over the front."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import types

import harness
from harness import Chain, open_session
from otlp_receiver import Receiver
from test_front_isolation import answer, post

pytestmark = pytest.mark.anyio

DEMO = harness.REPO / "target" / "debug" / "mcp-chain-demo-server"


def config(tmp: Path, alpha: str = "", beta: str = "", shared: str = "", front: str = "") -> Path:
    path = tmp / "gateway.toml"
    path.write_text(f"""{front}
[servers.alpha]
command = "{DEMO}"
prefix = "a"
{alpha}
[servers.beta]
command = "{DEMO}"
prefix = "b"
{beta}
[gateway]
startup_timeout = "20s"
{shared}
""")
    return path


async def call(conn, name: str, arguments: dict) -> types.CallToolResult:
    return await conn.session.call_tool(name, arguments)


async def test_audit_rate_limit_and_approve_name_the_server(tmp_path: Path):
    every = tmp_path / "all.jsonl"
    own = tmp_path / "alpha.jsonl"
    path = config(
        tmp_path,
        alpha=f"""
[[servers.alpha.middleware]]
type = "audit"
path = "{own}"

[[servers.alpha.middleware]]
type = "approve"
tools = ["add"]
""",
        shared=f"""
[[middleware]]
type = "audit"
path = "{every}"

[[middleware]]
type = "rate_limit"
scope = "server"
rules = [{{ tool = "*__read_secret", rate = "1/min", burst = 1 }}]
""",
    )
    asked: list[str] = []

    async def allow(context, params: types.ElicitRequestParams):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    argv = [str(harness.MCP_CHAIN), "--config", str(path)]
    async with open_session(argv, Chain("gateway-policy", path), label="gateway-policy", exact_argv=True,
                            elicitation_callback=allow) as conn:
        added = await call(conn, "a__add", {"a": 2, "b": 3})
        assert not added.is_error and added.structured_content == {"sum": 5}, added
        assert len(asked) == 1 and asked[0].startswith('Allow the tool "add" of the server "alpha" to run?'), asked
        # beta's chain asks nothing: its own.
        assert (await call(conn, "b__add", {"a": 1, "b": 1})).structured_content == {"sum": 2}
        assert len(asked) == 1

        # Each server its own bucket (the rule is written with the names the client sees).
        assert not (await call(conn, "a__read_secret", {})).is_error
        with pytest.raises(Exception, match="rate limit exceeded"):
            await call(conn, "a__read_secret", {})
        assert not (await call(conn, "b__read_secret", {})).is_error, "beta has a bucket of its own"

    lines = harness.jsonl(every)
    requests = [r for r in lines if r.get("method") == "tools/call" and r["kind"] == "request"]
    assert [(r["tool"], r.get("server")) for r in requests] == [
        ("a__add", "alpha"), ("b__add", "beta"), ("a__read_secret", "alpha"),
        ("a__read_secret", "alpha"), ("b__read_secret", "beta")], requests
    outcomes = [r.get("outcome") for r in lines if r.get("method") == "tools/call" and r["kind"] == "response"]
    assert outcomes == ["ok", "ok", "ok", "rate_limited", "ok"], outcomes
    # A listing merged from every server names none.
    assert all("server" not in r for r in lines if r.get("method") == "tools/list")

    # alpha's own chain: its own names, and its server on every line.
    mine = harness.jsonl(own)
    assert mine and all(r.get("server") == "alpha" for r in mine), mine
    assert {r.get("tool") for r in mine if r.get("method") == "tools/call"} == {"add", "read_secret"}
    approved = [r for r in mine if r.get("tool") == "add" and r["kind"] == "response"]
    assert approved and approved[0]["outcome"] == "ok"


async def test_limited_call_is_refused_with_the_rate_limit_error(tmp_path: Path):
    path = config(tmp_path, shared="""
[[middleware]]
type = "rate_limit"
scope = "server"
rules = [{ tool = "*", rate = "1/min", burst = 1 }]
""")
    argv = [str(harness.MCP_CHAIN), "--config", str(path)]
    async with open_session(argv, Chain("gateway-limit", path), label="gateway-limit", exact_argv=True) as conn:
        assert (await call(conn, "a__add", {"a": 1, "b": 2})).structured_content == {"sum": 3}
        with pytest.raises(Exception, match="rate limit exceeded"):
            await call(conn, "a__add", {"a": 1, "b": 2})
        assert (await call(conn, "b__add", {"a": 1, "b": 2})).structured_content == {"sum": 3}


ADMIN = "admin-token-0123456789abcdef"
GUEST = "guest-token-0123456789abcdef"


def open_front_session(port: int, token: str) -> dict:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    status, hdrs, text = post(port, init, {"Authorization": f"Bearer {token}"})
    assert status == 200, text
    session = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": hdrs["mcp-session-id"]}
    assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    return session


def tool_names(port: int, session: dict) -> set[str]:
    status, _, text = post(port, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session)
    assert status == 200, text
    return {t["name"] for t in answer(text)["result"]["tools"]}


def test_when_and_unless_in_a_servers_chain_judge_each_sessions_caller(tmp_path: Path):
    own = tmp_path / "beta.jsonl"
    path = config(
        tmp_path,
        front=f"""[front]
tokens = [{{ name = "admin", token = "{ADMIN}" }}, {{ name = "guest", token = "{GUEST}" }}]
""",
        beta=f"""
[[servers.beta.middleware]]
type = "filter"
tools = {{ deny = ["read_secret"] }}
unless = {{ subjects = ["admin"] }}

[[servers.beta.middleware]]
type = "audit"
path = "{own}"
""",
    )
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(path)]
    with harness.listening(argv, port, "gateway-front-policy"):
        admin = open_front_session(port, ADMIN)
        guest = open_front_session(port, GUEST)
        assert "b__read_secret" in tool_names(port, admin)
        guest_tools = tool_names(port, guest)
        assert "b__read_secret" not in guest_tools and "a__read_secret" in guest_tools, guest_tools
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "b__read_secret", "arguments": {}}}
        refused = answer(post(port, call, guest)[2])
        assert refused["error"]["data"]["layer"] == "filter", refused
        assert "result" in answer(post(port, call, admin)[2])

    lines = [r for r in harness.jsonl(own) if r.get("method") == "tools/call" and r["kind"] == "request"]
    # The server's own audit: its server, and the session's caller, on each line.
    assert [(r["server"], r["token"], r["tool"]) for r in lines] == [("beta", "admin", "read_secret")], lines


async def test_spans_name_the_server_a_call_is_for(tmp_path: Path):
    with Receiver() as receiver:
        path = config(tmp_path, shared=f"""
[telemetry]
otlp_endpoint = "{receiver.url}"
service_name = "gateway-policy"
""")
        argv = [str(harness.MCP_CHAIN), "--config", str(path)]
        async with open_session(argv, Chain("gateway-spans", path), label="gateway-spans", exact_argv=True) as conn:
            assert (await call(conn, "b__add", {"a": 1, "b": 2})).structured_content == {"sum": 3}

        def traced():
            return [s for s in receiver.snapshot() if s["name"] == "tools/call b__add" and s["kind"] == "server"]

        [span] = harness.wait_until(traced, 20)
        assert span["attributes"]["mcp_chain.server.name"] == "beta", span["attributes"]
        assert span["attributes"]["gen_ai.tool.name"] == "b__add"


async def test_resources_prefix_lets_two_servers_offer_the_same_uri(tmp_path: Path):
    """Both demo servers offer demo://readme: alone they clash (neither is
    listed); with alpha's URIs prefixed, each is listed and read from its
    own server, the prefix on every URI alpha's answers carry."""
    every = tmp_path / "all.jsonl"
    path = config(tmp_path, alpha='resources = "prefix"', shared=f'[[middleware]]\ntype = "audit"\npath = "{every}"\n')
    argv = [str(harness.MCP_CHAIN), "--config", str(path)]
    async with open_session(argv, Chain("gateway-uris", path), label="gateway-uris", exact_argv=True) as conn:
        listed = {str(r.uri) for r in (await conn.session.list_resources()).resources}
        assert {"alpha+demo://readme", "demo://readme"} <= listed, listed
        templates = {t.uri_template for t in (await conn.session.list_resource_templates()).resource_templates}
        assert {"alpha+demo://notes/{name}", "demo://notes/{name}"} <= templates, templates

        read = await conn.session.read_resource("alpha+demo://readme")
        assert str(read.contents[0].uri) == "alpha+demo://readme"
        assert str((await conn.session.read_resource("demo://readme")).contents[0].uri) == "demo://readme"
        note = await conn.session.read_resource("alpha+demo://notes/gateways")
        assert str(note.contents[0].uri) == "alpha+demo://notes/gateways"
        assert note.contents[0].text == "Notes on gateways: nothing yet.\n"
        with pytest.raises(Exception, match="no server behind this mcp-chain offers that"):
            await conn.session.read_resource("gamma+demo://readme")
    assert "two servers list the same resource" not in conn.stderr.read_text()
    reads = [r for r in harness.jsonl(every) if r.get("method") == "resources/read" and r["kind"] == "request"]
    assert [(r["resource"], r.get("server")) for r in reads] == [
        ("alpha+demo://readme", "alpha"), ("demo://readme", None),
        ("alpha+demo://notes/gateways", "alpha"), ("gamma+demo://readme", None)], reads


def test_resources_prefix_needs_a_name_that_starts_a_scheme(tmp_path: Path):
    for table, expected in (('[servers.my_files]\ncommand = "x"\nresources = "prefix"\n', "cannot start a URI scheme"),
                            ('[servers.files]\ncommand = "x"\nresources = "rename"\n', 'is not "prefix"')):
        path = tmp_path / "bad.toml"
        path.write_text(table)
        done = subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(path)], capture_output=True, text=True, timeout=30)
        assert done.returncode != 0 and expected in done.stderr + done.stdout, (done.stdout, done.stderr)


def test_check_list_shows_what_a_client_is_offered_and_what_was_left_out(tmp_path: Path):
    long_prefix = "p" * 120
    path = tmp_path / "list.toml"
    path.write_text(f"""
[servers.alpha]
command = "{DEMO}"
prefix = "a"
resources = "prefix"

[[servers.alpha.middleware]]
type = "filter"
tools = {{ deny = ["read_secret"] }}

[servers.beta]
command = "{DEMO}"
prefix = "{long_prefix}"

[servers.gone]
command = "{tmp_path / 'no-such-server'}"

[gateway]
startup_timeout = "10s"
""")
    done = subprocess.run([str(harness.MCP_CHAIN), "check", "--list", "--config", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    listed = out[out.index("listed, as a client sees it:"):]
    tools = listed[listed.index("  tools ("):listed.index("  prompts")]
    assert "    a__add\n" in tools and "    a__echo\n" in tools
    assert "a__read_secret" not in tools, "alpha's own filter applies"
    assert f"    {long_prefix}__add\n" in tools, "short enough"
    assert f"{long_prefix}__slow_count" not in tools, "past 128 with its prefix"
    assert "    alpha+demo://readme\n" in listed and "    demo://readme\n" in listed
    said = out[out.index("said while listing"):]
    assert "left out server=beta name=slow_count" in said, said
    assert "a server is gone" in said and "server=gone" in said, said


FAKE = harness.REPO / "target" / "debug" / "fake-mcp-server"


async def test_a_server_that_dies_is_restarted_alone_and_the_client_told(tmp_path: Path):
    """restart = "on-failure" on one server: its crash answers its call
    -32000, it is started again inside its own session (another process),
    the client hears list_changed, and the other server never noticed."""
    path = tmp_path / "restart.toml"
    path.write_text(f"""
[servers.fake]
command = "{FAKE}"
args = ["--label", "{harness.RUN_MARKER}"]
prefix = "f"
restart = "on-failure"
restart_backoff = "100ms"

[servers.demo]
command = "{DEMO}"
prefix = "d"

[gateway]
startup_timeout = "20s"
""")
    argv = [str(harness.MCP_CHAIN), "--config", str(path)]
    async with open_session(argv, Chain("gateway-restart", path), label="gateway-restart", exact_argv=True) as conn:
        async def pid() -> int:
            result = await call(conn, "f__env", {"names": []})
            return int(result.structured_content["pid"])

        first = await pid()
        with pytest.raises(Exception) as crashed:
            await call(conn, "f__crash", {"code": 3})
        assert crashed.value.error.code == -32000 and "the server exited (exit status: 3)" in crashed.value.error.message
        assert (await call(conn, "d__add", {"a": 1, "b": 1})).structured_content == {"sum": 2}

        async def restarted() -> int:
            with anyio.fail_after(30):
                while True:
                    try:
                        return await pid()
                    except Exception:
                        await anyio.sleep(0.1)

        second = await restarted()
        assert second != first, "another process"
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"), 10, "list_changed")
        names = {t.name for t in (await conn.session.list_tools()).tools}
        assert {"f__echo", "d__add"} <= names
