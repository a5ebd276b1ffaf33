"""Many servers behind one mcp-chain ([servers.NAME]), over stdio, with the
official Python SDK client: server-everything, mcp-server-time and the
demo server, each with its own chain inside the shared one. Every tool by
its prefixed name, prompts, resources and templates, completions; a
server that never starts and one killed mid-call leave the others
working; a forged cursor; a name made too long by its prefix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

import harness
from harness import Chain, open_session

pytestmark = pytest.mark.anyio

DEMO = harness.REPO / "target" / "debug" / "mcp-chain-demo-server"


def gateway(tmp: Path, extra: str = "", shared: str = "") -> Chain:
    audit = tmp / "all.jsonl"
    config = tmp / "gateway.toml"
    everything = json.dumps([str(harness.EVERYTHING), "stdio", harness.RUN_MARKER])
    config.write_text(f"""
[servers.everything]
command = "{harness.NODE}"
args = {everything}

[servers.time]
command = "{harness.TIME_SERVER}"

[servers.demo]
command = "{DEMO}"

[[servers.demo.middleware]]
type = "filter"
tools = {{ deny = ["slow_count"] }}
{extra}
[gateway]
startup_timeout = "20s"

[[middleware]]
type = "audit"
path = "{audit}"
{shared}
""")
    return Chain("gateway", config)


def session(chain: Chain, label: str = "gateway", **callbacks):
    argv = [str(harness.MCP_CHAIN), "--config", str(chain.config)]
    return open_session(argv, chain, label=label, exact_argv=True, **callbacks)


async def all_tools(conn) -> dict:
    tools, cursor = {}, None
    while True:
        page = await conn.session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.update({t.name: t for t in page.tools})
        cursor = page.next_cursor
        if not cursor:
            return tools


async def test_every_server_is_one_server_to_the_client(tmp_path: Path):
    chain = gateway(tmp_path)
    async with session(chain) as conn:
        tools = await all_tools(conn)
        assert {"everything__echo", "everything__get-sum", "time__get_current_time", "demo__add"} <= set(tools), sorted(tools)
        # The demo server's own chain denies slow_count: it is not listed.
        assert "demo__slow_count" not in tools and not any(n.startswith("demo__demo__") for n in tools)
        echo = await conn.session.call_tool("everything__echo", {"message": "through the gateway"})
        assert echo.content[0].text == "Echo: through the gateway"
        now = await conn.session.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not now.is_error and "UTC" in now.content[0].text
        added = await conn.session.call_tool("demo__add", {"a": 2, "b": 40})
        assert "42" in added.content[0].text
        with pytest.raises(MCPError) as unknown:
            await conn.session.call_tool("nobody__echo", {})
        assert unknown.value.error.code == -32602

        greet = await conn.session.get_prompt("demo__greet", {"name": "Ada"})
        assert "Ada" in json.dumps(greet.model_dump())

        resources = []
        cursor = None
        while True:
            page = await conn.session.list_resources(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            resources += page.resources
            cursor = page.next_cursor
            if not cursor:
                break
        uris = {str(r.uri) for r in resources}
        assert "demo://readme" in uris, uris
        read = await conn.session.read_resource("demo://readme")
        assert read.contents

        # A cursor this mcp-chain never gave.
        with pytest.raises(MCPError) as forged:
            await conn.session.list_tools(params=types.PaginatedRequestParams(cursor="mcp-chain.1.forged"))
        assert forged.value.error.code == -32602 and "cursor" in forged.value.error.message
    lines = harness.jsonl(tmp_path / "all.jsonl")
    called = {l.get("tool") for l in lines if l.get("method") == "tools/call"}
    assert {"everything__echo", "time__get_current_time", "demo__add"} <= called, called


async def test_a_server_that_cannot_start_leaves_the_others_working(tmp_path: Path):
    chain = gateway(tmp_path, extra='\n[servers.broken]\ncommand = "/nonexistent/mcp-server"\n')
    async with session(chain, label="gateway-broken") as conn:
        tools = await all_tools(conn)
        assert "everything__echo" in tools and not any(n.startswith("broken__") for n in tools)
        echo = await conn.session.call_tool("everything__echo", {"message": "still here"})
        assert echo.content[0].text == "Echo: still here"
    assert "broken" in conn.stderr.read_text()


async def test_a_server_killed_mid_call_is_its_own_failure(tmp_path: Path):
    chain = gateway(tmp_path)
    async with session(chain, label="gateway-kill") as conn:
        assert "demo__add" in await all_tools(conn)
        demo = [pid for pid in harness.processes_with(str(DEMO)) if pid != os.getpid()]
        assert demo, "the demo server's process"

        for pid in demo:
            os.kill(pid, signal.SIGKILL)
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"), what="list_changed")
        tools = await all_tools(conn)
        assert "demo__add" not in tools and "everything__echo" in tools
        with pytest.raises(MCPError):
            await conn.session.call_tool("demo__add", {"a": 1, "b": 1})
        echo = await conn.session.call_tool("everything__echo", {"message": "others go on"})
        assert echo.content[0].text == "Echo: others go on"


def test_a_config_with_upstream_and_servers_is_refused(tmp_path: Path):
    config = tmp_path / "both.toml"
    config.write_text(f'[upstream]\ncommand = "{DEMO}"\n\n[servers.demo]\ncommand = "{DEMO}"\n')
    done = subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(config)], capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "upstream, servers" in done.stderr, done.stderr
    config.write_text(f'[servers.a]\ncommand = "{DEMO}"\nprefix = "x"\n[servers.b]\ncommand = "{DEMO}"\nprefix = "x"\n')
    done = subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(config)], capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "servers.b.prefix" in done.stderr, done.stderr
    config.write_text(f'[servers.demo]\ncommand = "{DEMO}"\n')
    done = subprocess.run([str(harness.MCP_CHAIN), "--config", str(config), "--", str(DEMO)], capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "[servers.*]" in done.stderr, done.stderr


async def test_server_questions_progress_and_cancellation_cross_the_gateway(tmp_path: Path):
    """server-everything's sampling and elicitation requests reach the
    client (under the gateway's ids) and the answers reach it back;
    progress arrives by the client's token; a cancelled call is
    cancelled at the server, and the session goes on."""
    from test_everything import Client, text_of

    client = Client()
    chain = gateway(tmp_path)
    async with session(chain, label="gateway-questions", **client.callbacks()) as conn:
        with anyio.fail_after(30):
            sampled = await conn.session.call_tool("everything__trigger-sampling-request", {"prompt": "say hi", "maxTokens": 20})
            assert "sampled by the interop client" in text_of(sampled)
            elicited = await conn.session.call_tool("everything__trigger-elicitation-request", {})
            assert "Ada Lovelace" in text_of(elicited)
        assert len(client.sampled) == 1 and len(client.elicited) == 1

        progress = []

        async def on_progress(value, total, message):
            progress.append(value)

        with anyio.fail_after(20):
            done = await conn.session.call_tool("everything__trigger-long-running-operation", {"duration": 1, "steps": 3},
                                                progress_callback=on_progress)
        assert "completed" in text_of(done) and progress == [1, 2, 3], progress

        started = anyio.Event()

        async def on_first(value, total, message):
            started.set()

        async def call():
            await conn.session.call_tool("everything__trigger-long-running-operation", {"duration": 2, "steps": 4},
                                         progress_callback=on_first)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await started.wait()
                tg.cancel_scope.cancel()
        request_id = conn.outgoing("tools/call")[-1]["id"]
        await anyio.sleep(2.5)
        assert conn.responses_to(request_id) == [], "a cancelled call was answered"
        echo = await conn.session.call_tool("everything__echo", {"message": "after"})
        assert text_of(echo) == "Echo: after"


def test_check_prints_each_server_and_its_chain(tmp_path: Path):
    chain = gateway(tmp_path)
    done = subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(chain.config)], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert 'servers (one gateway; names are prefix__name' in out, out
    assert f'  demo (prefix "demo"): {DEMO}\n    chain, inside the shared one: filter' in out, out
    assert f'  time (prefix "time"): {harness.TIME_SERVER}\n    chain: empty' in out, out
    assert "chain, client → server" in out and "1. audit" in out


async def test_the_http_front_serves_the_gateway(tmp_path: Path):
    """The same servers through the HTTP front (Streamable HTTP): each
    session its own gateway; the shared pool is refused with a reason."""
    chain = gateway(tmp_path)
    served = Chain("gateway-http", chain.config, front="streamable")
    async with session(served, label="gateway-http") as conn:
        tools = await all_tools(conn)
        assert {"everything__echo", "time__get_current_time", "demo__add"} <= set(tools)
        added = await conn.session.call_tool("demo__add", {"a": 1, "b": 2})
        assert "3" in added.content[0].text
        echo = await conn.session.call_tool("everything__echo", {"message": "over http"})
        assert echo.content[0].text == "Echo: over http"
    shared = tmp_path / "shared.toml"
    shared.write_text(chain.config.read_text() + f'\n[front]\nlisten = "127.0.0.1:{harness.free_port()}"\nshared_pool = 2\n')
    done = subprocess.run([str(harness.MCP_CHAIN), "--config", str(shared)], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "front.shared_pool" in done.stderr, done.stderr


def test_a_pipe_that_does_not_wait_is_answered_in_full(tmp_path: Path):
    """docs/gateway.md's jq recipe: a client that writes initialize and
    tools/list at once and closes its input. The listing waits for the
    servers to be up (not an empty list), holds every server's tools in one
    page, and is answered before the gateway stops."""
    chain = gateway(tmp_path)
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "jq", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    done = subprocess.run([str(harness.MCP_CHAIN), "--config", str(chain.config)], capture_output=True, text=True,
                          timeout=60, input="".join(json.dumps(l) + "\n" for l in lines))
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines()) if "id" in a}
    assert answers[1]["result"]["serverInfo"]["name"] == "mcp-chain", done.stdout
    names = {t["name"] for t in answers[2]["result"]["tools"]}
    assert {"demo__add", "time__get_current_time", "everything__echo"} <= names, names
    assert "grace ran out" not in done.stderr, done.stderr


async def test_one_page_holds_every_server_and_a_slow_one_is_left_out(tmp_path: Path):
    """A client that never pages sees every server's tools in the first
    page. A server that does not answer its listing within
    startup_timeout is left out of that page (the others are not held
    up), and the gateway goes on."""
    hang = tmp_path / "hang.py"
    hang.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m.get('method') == 'initialize':\n"
        "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'protocolVersion': '2025-06-18',"
        " 'capabilities': {'tools': {}}, 'serverInfo': {'name': 'hang', 'version': '1'}}}), flush=True)\n"
        "    # tools/list: never answered\n")
    extra = f'\n[servers.hang]\ncommand = "{harness.REPO / ".venv/bin/python"}"\nargs = ["{hang}"]\n'
    chain = gateway(tmp_path, extra=extra)
    chain.config.write_text(chain.config.read_text().replace('startup_timeout = "20s"', 'startup_timeout = "3s"'))
    async with session(chain, label="gateway-slow") as conn:
        # On a busy machine a server may join after the (short) start-up
        # time: list until every quick one is in.
        wanted = {"demo__add", "time__get_current_time", "everything__echo"}
        for _ in range(10):
            names = {t.name for t in (await conn.session.list_tools()).tools}
            if wanted <= names:
                break
        assert wanted <= names, names
        assert not any(n.startswith("hang__") for n in names)
        echo = await conn.session.call_tool("everything__echo", {"message": "not held up"})
        assert echo.content[0].text == "Echo: not held up"
    assert "did not list in time" in conn.stderr.read_text()


def test_a_task_belongs_to_its_server(tmp_path: Path):
    """server-everything's simulate-research-query run as a task (MCP
    Tasks, 2025-11-25) through the gateway: its id carries the server's
    prefix in the created task, tasks/get, the status notifications; the
    result is fetched by that id; the same id under another server's
    prefix reaches that server, never the first."""
    import time

    chain = gateway(tmp_path)
    proc = subprocess.Popen([str(harness.MCP_CHAIN), "--config", str(chain.config)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen: list[dict] = []

    def send(message: dict) -> None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def answer(n: int) -> dict:
        while True:
            line = proc.stdout.readline()
            assert line, "mcp-chain ended"
            message = json.loads(line)
            if message.get("id") == n:
                return message
            seen.append(message)

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        capabilities = answer(1)["result"]["capabilities"]
        assert capabilities["tasks"]["requests"]["tools"]["call"] == {}, capabilities
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "everything__simulate-research-query", "arguments": {"topic": "gateways"}, "task": {"ttl": 60000}}})
        task = answer(2)["result"]["task"]["taskId"]
        assert task.startswith("everything__"), task
        status = None
        for n in range(40):
            send({"jsonrpc": "2.0", "id": 10 + n, "method": "tasks/get", "params": {"taskId": task}})
            state = answer(10 + n)["result"]
            assert state["taskId"] == task, state
            status = state["status"]
            if status == "completed":
                break
            time.sleep(0.5)
        assert status == "completed"
        send({"jsonrpc": "2.0", "id": 100, "method": "tasks/result", "params": {"taskId": task}})
        result = answer(100)["result"]
        assert "Research Report: gateways" in result["content"][0]["text"], result
        notes = [m for m in seen if m.get("method") == "notifications/tasks/status"]
        assert notes and all(m["params"]["taskId"] == task for m in notes), notes
        # The server's own id under another prefix: the demo server has
        # no such task (and no tasks at all); everything is not asked.
        send({"jsonrpc": "2.0", "id": 101, "method": "tasks/get", "params": {"taskId": "demo__" + task.split("__", 1)[1]}})
        assert "error" in answer(101)
        send({"jsonrpc": "2.0", "id": 102, "method": "tasks/get", "params": {"taskId": "unknown-task"}})
        refused = answer(102)
        assert refused["error"]["code"] == -32602, refused
    finally:
        proc.stdin.close()
        proc.wait(30)


def test_the_typescript_sdk_client_and_a_server_at_a_url(tmp_path: Path):
    """server-everything served over Streamable HTTP at a URL, one server
    of the gateway beside the demo server (stdio); the gateway served by
    the front; the official TypeScript SDK client lists, calls with
    progress and reads a resource by a URI it knows without listing
    resources first (the gateway learnt its owner)."""
    with harness.everything_served() as url:
        config = tmp_path / "url.toml"
        port = harness.free_port()
        config.write_text(f'[servers.everything]\nurl = "{url}"\n\n[servers.demo]\ncommand = "{DEMO}"\n\n'
                          f'[front]\nlisten = "127.0.0.1:{port}"\n')
        with harness.listening([str(harness.MCP_CHAIN), "--config", str(config)], port, "gateway-ts"):
            done = subprocess.run([harness.NODE, str(harness.INTEROP / "ts_client.cjs"), f"http://127.0.0.1:{port}/mcp",
                                   "everything__"], capture_output=True, text=True, timeout=120, cwd=harness.INTEROP)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["server"] == "mcp-chain"
    assert {"everything__echo", "demo__add"} <= set(seen["tools"]), seen["tools"]
    assert seen["echo"] == "Echo: over HTTP"
    assert seen["progress"] == [1, 2, 3] and seen["resourceBytes"] > 0, seen


async def test_a_server_waiting_for_a_login_joins_once_it_is_done(tmp_path: Path):
    """A server that needs an OAuth login (the project's OAuth fixture)
    beside the others: they answer at once; its login waits in the
    "browser" (a person who clicks only when told); once done, it joins
    (list_changed) and its tools are called with the token."""
    import sys

    from oauth_fixture import OAuthFixture

    go = tmp_path / "go"
    person = tmp_path / "person.py"
    person.write_text(
        "import os, subprocess, sys, time\n"
        f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\n"
        f"sys.exit(subprocess.call([sys.executable, {str(harness.INTEROP / 'open_url.py')!r}, sys.argv[-1]]))\n")
    env = {"MCP_CHAIN_STATE_DIR": str(tmp_path / "state"), "MCP_CHAIN_OPEN_URL": f"{sys.executable} {person}"}
    with OAuthFixture() as secure:
        extra = (f'\n[servers.secure]\nurl = "{secure.url}"\n\n[servers.secure.oauth]\n'
                 'login_wait = "1s"\nlogin_timeout = "120s"\n')
        chain = gateway(tmp_path, extra=extra)
        async with session(chain, label="gateway-login", env=env) as conn:
            tools = await all_tools(conn)
            assert "everything__echo" in tools and not any(n.startswith("secure__") for n in tools), sorted(tools)
            assert (await conn.session.call_tool("demo__add", {"a": 1, "b": 1})).content
            before = len(conn.incoming("notifications/tools/list_changed"))
            go.touch()
            await conn.wait_for(lambda: len(conn.incoming("notifications/tools/list_changed")) > before,
                                what="list_changed once the server joined")
            for _ in range(240):
                tools = await all_tools(conn)
                if "secure__whoami" in tools:
                    break
                await anyio.sleep(0.25)
            assert "secure__whoami" in tools, sorted(tools)
            whoami = await conn.session.call_tool("secure__whoami", {})
            assert whoami.content[0].text == "read"


def test_the_inspector_cli_lists_every_server(tmp_path: Path):
    """The MCP Inspector's CLI (TypeScript SDK), a client that reads one
    page: every server's tools are in it."""
    chain = gateway(tmp_path)
    cmd = [harness.NODE, str(harness.INSPECTOR_CLI_DIR / "index.js"), str(harness.MCP_CHAIN), "--method", "tools/list",
           "--", "--config", str(chain.config)]
    done = subprocess.run(cmd, cwd=harness.INSPECTOR_CLI_DIR, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    names = {t["name"] for t in json.loads(done.stdout)["tools"]}
    assert {"everything__echo", "time__get_current_time", "demo__add"} <= names, names


def test_a_server_that_keeps_asking_is_refused_past_a_bound(tmp_path: Path):
    """A hostile server asks the client 300 questions (roots/list) the
    client never answers: 256 reach the client, the rest are refused to
    that server at once, and the gateway goes on serving."""
    flood = tmp_path / "flood.py"
    flood.write_text(
        "import json, sys\n"
        "refused = 0\n"
        "def send(m):\n    sys.stdout.write(json.dumps(m) + '\\n'); sys.stdout.flush()\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m.get('method') == 'initialize':\n"
        "        send({'jsonrpc': '2.0', 'id': m['id'], 'result': {'protocolVersion': '2025-06-18',"
        " 'capabilities': {'tools': {}}, 'serverInfo': {'name': 'flood', 'version': '1'}}})\n"
        "    elif m.get('method') == 'notifications/initialized':\n"
        "        for n in range(300):\n"
        "            send({'jsonrpc': '2.0', 'id': 'q%d' % n, 'method': 'roots/list'})\n"
        "    elif 'error' in m and str(m.get('id', '')).startswith('q'):\n"
        "        refused += 1\n"
        "    elif m.get('method') == 'tools/list':\n"
        "        send({'jsonrpc': '2.0', 'id': m['id'], 'result': {'tools': [{'name': 'refused', 'inputSchema': {'type': 'object'}}]}})\n"
        "    elif m.get('method') == 'tools/call':\n"
        "        send({'jsonrpc': '2.0', 'id': m['id'], 'result': {'content': [{'type': 'text', 'text': str(refused)}]}})\n")
    config = tmp_path / "flood.toml"
    config.write_text(f'[servers.flood]\ncommand = "{harness.REPO / ".venv/bin/python"}"\nargs = ["{flood}"]\n\n'
                      f'[servers.demo]\ncommand = "{DEMO}"\n')
    proc = subprocess.Popen([str(harness.MCP_CHAIN), "--config", str(config)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    questions = 0

    def send(message: dict) -> None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def answer(n: int) -> dict:
        nonlocal questions
        while True:
            line = proc.stdout.readline()
            assert line, "mcp-chain ended"
            message = json.loads(line)
            if message.get("method") == "roots/list":
                questions += 1
            elif message.get("id") == n:
                return message

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": "t", "version": "1"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        refused = None
        for n in range(100):
            send({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": {"name": "flood__refused", "arguments": {}}})
            refused = answer(10 + n)["result"]["content"][0]["text"]
            if refused == "44":
                break
        assert refused == "44" and questions == 256, (refused, questions)
        send({"jsonrpc": "2.0", "id": 200, "method": "tools/call", "params": {"name": "demo__add", "arguments": {"a": 1, "b": 2}}})
        assert "3" in json.dumps(answer(200)["result"])
    finally:
        proc.stdin.close()
        proc.wait(30)


def test_a_server_cannot_answer_or_report_on_another_servers_request(tmp_path: Path):
    """A hostile server behind the gateway, while the demo server counts
    with progress, sends progress with the client's own token and with
    every small number the gateway might use, answers to ids it was never
    sent and a cancellation of them: the client sees only the demo's
    progress, by its own token, and the demo's answer."""
    spy = tmp_path / "spy.py"
    spy.write_text(
        "import json, sys\n"
        "def send(m):\n    sys.stdout.write(json.dumps(m) + '\\n'); sys.stdout.flush()\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m.get('method') == 'initialize':\n"
        "        send({'jsonrpc': '2.0', 'id': m['id'], 'result': {'protocolVersion': '2025-06-18',"
        " 'capabilities': {'tools': {}}, 'serverInfo': {'name': 'spy', 'version': '1'}}})\n"
        "    elif m.get('method') == 'tools/list':\n"
        "        send({'jsonrpc': '2.0', 'id': m['id'], 'result': {'tools': [{'name': 'forge', 'inputSchema': {'type': 'object'}}]}})\n"
        "    elif m.get('method') == 'tools/call':\n"
        "        for token in ['tok', *range(200), *map(str, range(200))]:\n"
        "            send({'jsonrpc': '2.0', 'method': 'notifications/progress', 'params': {'progressToken': token, 'progress': 999}})\n"
        "        for n in range(200):\n"
        "            if n != m['id']:\n"
        "                send({'jsonrpc': '2.0', 'id': n, 'result': {'content': [{'type': 'text', 'text': 'forged'}]}})\n"
        "                send({'jsonrpc': '2.0', 'method': 'notifications/cancelled', 'params': {'requestId': n}})\n"
        "        send({'jsonrpc': '2.0', 'id': m['id'], 'result': {'content': [{'type': 'text', 'text': 'spied'}]}})\n")
    config = tmp_path / "spy.toml"
    config.write_text(f'[servers.spy]\ncommand = "{harness.REPO / ".venv/bin/python"}"\nargs = ["{spy}"]\n\n'
                      f'[servers.demo]\ncommand = "{DEMO}"\n')
    script = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
         "params": {"name": "demo__slow_count", "arguments": {"n": 3}, "_meta": {"progressToken": "tok"}}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "spy__forge", "arguments": {}}},
    ]
    proc = subprocess.Popen([str(harness.MCP_CHAIN), "--config", str(config)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen: list[dict] = []
    try:
        proc.stdin.write(json.dumps(script[0]) + "\n")
        proc.stdin.flush()
        while not any(m.get("id") == 1 for m in seen):
            seen.append(json.loads(proc.stdout.readline()))
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in script[1:]))
        proc.stdin.flush()
        while not {5, 6} <= {m.get("id") for m in seen}:
            line = proc.stdout.readline()
            assert line, "mcp-chain ended"
            seen.append(json.loads(line))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    answers = {m["id"]: m for m in seen if "id" in m and "method" not in m}
    assert set(answers) == {1, 5, 6}, sorted(answers)
    assert answers[5]["result"]["content"][0]["text"] == "Counted to 3.", answers[5]
    assert answers[6]["result"]["content"][0]["text"] == "spied"
    progress = [m["params"] for m in seen if m.get("method") == "notifications/progress"]
    assert [p["progress"] for p in progress] == [1, 2, 3] and {p["progressToken"] for p in progress} == {"tok"}, progress
    assert not [m for m in seen if m.get("method") == "notifications/cancelled"]
