"""The front in shared mode (`upstream_sessions = "shared"`): many client
sessions, a small pool of servers. Each session's answers, progress and
server requests reach that session only; what every session may see
reaches all; a pooled server that dies takes only its own requests with
it; and a session costs little."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness

FAKE = harness.REPO / "target" / "debug" / "fake-mcp-server"


@contextlib.contextmanager
def shared(server: list[str], pool: int = 2, extra: str = ""):
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: these cases test the proxy's own front")
    harness.require_proxy_binary()
    port = harness.free_port()
    config = Path(tempfile.mkdtemp()) / "front.toml"
    config.write_text(f'[front]\nupstream_sessions = "shared"\nshared_pool = {pool}\n{extra}\n')
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(config), "--log-level", "info",
            "--", *server]
    with harness.listening(argv, port, "mcp-chain --listen (shared)") as stderr:
        yield port, stderr


def post(port: int, body: Any, session: str | None = None, timeout: float = 20) -> tuple[int, str | None, list[dict]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", json.dumps(body), headers)
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    if text.startswith("{"):
        messages = [json.loads(text)]
    else:
        messages = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    return response.status, response.getheader("Mcp-Session-Id"), messages


def open_session(port: int) -> str:
    status, session, _ = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    assert status == 200 and session
    post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def call(port: int, session: str, rid: Any, tool: str, arguments: dict) -> dict:
    status, _, messages = post(port, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                      "params": {"name": tool, "arguments": arguments}}, session)
    assert status == 200, messages
    [answer] = [m for m in messages if m.get("id") == rid and "method" not in m]
    return answer


def pid_of(answer: dict) -> int:
    return answer["result"]["structuredContent"]["pid"]


def children() -> list[int]:
    return harness.processes_with(harness.RUN_MARKER)


def test_sessions_share_the_pool_and_requests_spread_over_it():
    with shared([str(FAKE), "--label", harness.RUN_MARKER]) as (port, _):
        sessions = [open_session(port) for _ in range(4)]
        pids = {s: [pid_of(call(port, s, 1, "env", {"names": []})) for _ in range(4)] for s in sessions}
        every = {p for seen in pids.values() for p in seen}
        assert len(every) == 2, pids
        assert all(len(set(seen)) == 2 for seen in pids.values()), "each session's calls take turns"
        assert len(children()) == 2, "two servers for four sessions"


def test_same_ids_from_two_sessions_get_their_own_answers():
    with shared([str(FAKE), "--label", harness.RUN_MARKER]) as (port, _):
        a, b = open_session(port), open_session(port)
        import threading

        got: dict[str, dict] = {}

        def both(session: str, name: str) -> None:
            for _ in range(20):
                got[name] = call(port, session, 7, "echo", {"who": name})
                assert name in json.dumps(got[name]["result"]), got

        threads = [threading.Thread(target=both, args=(s, n)) for s, n in ((a, "a"), (b, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert set(got) == {"a", "b"}
        for name in ("a", "b"):
            assert got[name]["id"] == 7 and "result" in got[name], got
            assert name in json.dumps(got[name]["result"]), got


async def sdk_tour(url: str, n: int, sampling=None) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    seen: dict = {"n": n}
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write, sampling_callback=sampling) as session:
            with anyio.fail_after(60):
                await session.initialize()
                seen["tools"] = {t.name for t in (await session.list_tools()).tools}
                echoed = await session.call_tool("echo", {"message": f"client {n}"})
                seen["echo"] = echoed.content[0].text
                progress: list[float] = []

                async def on_progress(value, total, message):
                    progress.append(value)

                await session.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 2},
                                        progress_callback=on_progress)
                seen["progress"] = progress
    return seen


async def sdk_sessions(stack: contextlib.AsyncExitStack, url: str, callbacks: list[dict]) -> list:
    """One initialized SDK session per entry of `callbacks` (ClientSession's
    keyword arguments), closed with `stack`."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    sessions = []
    for kwargs in callbacks:
        read, write = await stack.enter_async_context(streamable_http_client(url))
        session = await stack.enter_async_context(ClientSession(read, write, **kwargs))
        with anyio.fail_after(30):
            await session.initialize()
        sessions.append(session)
    return sessions


def recorder(heard: dict[int, list[str]], n: int):
    """A message handler noting the methods session `n` hears."""
    async def handle(message) -> None:
        name = getattr(getattr(message, "root", message), "method", None)
        if name:
            heard[n].append(name)
    return handle


def test_six_python_sdk_clients_tour_server_everything_on_two_servers():
    with shared(harness.everything_argv()) as (port, _):
        url = f"http://127.0.0.1:{port}/mcp"

        async def all_clients() -> list[dict]:
            results: list[dict] = []

            async def one(n: int) -> None:
                results.append(await sdk_tour(url, n))

            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(one, n)
            return results

        results = anyio.run(all_clients)
        assert sorted(r["n"] for r in results) == list(range(6))
        for r in results:
            assert "echo" in r["tools"] and r["echo"].endswith(f"client {r['n']}"), r
            assert r["progress"] == [1.0, 2.0], r
        assert len(children()) == 2, "six sessions, two servers"


def sampler(n: int, asked: list[int], related: list[Any] | None = None):
    """Session `n`'s sampling callback: notes that it was asked (and the
    related request its question names), and answers "from n"."""
    from mcp import types

    async def sample(context, params):
        asked.append(n)
        if related is not None:
            meta = params.meta if isinstance(params.meta, dict) else (params.meta.model_dump() if params.meta else {})
            related.append(meta.get("io.modelcontextprotocol/related-request-id"))
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=f"from {n}"),
                                         model="test", stop_reason="endTurn")
    return sample


def test_a_sampling_request_reaches_the_client_whose_call_it_is():
    """The server asks for sampling during one client's call (the fake
    server's `ask`): that client answers it, no other is asked."""
    with shared([str(FAKE), "--label", harness.RUN_MARKER]) as (port, stderr):
        url = f"http://127.0.0.1:{port}/mcp"
        asked: list[int] = []
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}

        async def scenario() -> str:
            async with contextlib.AsyncExitStack() as stack:
                sessions = await sdk_sessions(stack, url, [{"sampling_callback": sampler(n, asked)} for n in range(3)])
                with anyio.fail_after(30):
                    result = await sessions[1].call_tool("ask", {"method": "sampling/createMessage", "params": params})
                return json.dumps([c.model_dump() for c in result.content])

        text = anyio.run(scenario)
        assert asked == [1], (asked, text)
        assert "from 1" in text, text


def test_what_names_its_related_request_reaches_only_that_session():
    """The server names the call a log line and a question belong to
    (`_meta` related-request-id): both reach the caller's session alone,
    naming the caller's own request id, even with that call the only one
    in flight; the other sessions hear neither."""
    with shared([str(FAKE), "--label", harness.RUN_MARKER], pool=1) as (port, _):
        url = f"http://127.0.0.1:{port}/mcp"
        heard: dict[int, list[str]] = {0: [], 1: [], 2: []}
        asked: list[int] = []
        related: list[Any] = []
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}

        async def scenario() -> str:
            async with contextlib.AsyncExitStack() as stack:
                sessions = await sdk_sessions(stack, url, [
                    {"sampling_callback": sampler(n, asked, related), "message_handler": recorder(heard, n)}
                    for n in range(3)])
                with anyio.fail_after(30):
                    result = await sessions[1].call_tool(
                        "ask", {"method": "sampling/createMessage", "params": params, "related": True})
                    # The log line came before the question, and so before the answer.
                return json.dumps([c.model_dump() for c in result.content])

        text = anyio.run(scenario)
        assert asked == [1] and "from 1" in text, (asked, text)
        logged = [n for n, h in heard.items() if "notifications/message" in h]
        assert logged == [1], heard
        assert related and isinstance(related[0], int), f"the caller's own id, not the pool's: {related}"


def test_list_changed_reaches_every_session():

    with shared([str(FAKE), "--label", harness.RUN_MARKER]) as (port, _):
        url = f"http://127.0.0.1:{port}/mcp"
        heard: dict[int, list[str]] = {0: [], 1: [], 2: []}


        async def scenario() -> None:
            async with contextlib.AsyncExitStack() as stack:
                sessions = await sdk_sessions(stack, url, [{"message_handler": recorder(heard, n)} for n in range(3)])
                with anyio.fail_after(30):
                    await sessions[0].call_tool("list_changed", {"echo_description": "changed"})
                    await anyio.sleep(0)
                with anyio.fail_after(10):
                    while not all("notifications/tools/list_changed" in h for h in heard.values()):
                        await anyio.sleep(0.05)

        anyio.run(scenario)


def test_a_pooled_server_that_dies_takes_only_its_own_requests():
    with shared([str(FAKE), "--label", harness.RUN_MARKER]) as (port, stderr):
        a, b = open_session(port), open_session(port)
        first, second = pid_of(call(port, a, 1, "env", {"names": []})), pid_of(call(port, b, 2, "env", {"names": []}))
        assert first != second
        import threading

        got: dict[str, dict] = {}

        def slow(session: str, name: str, rid: int) -> None:
            got[name] = call(port, session, rid, "delay", {"ms": 4000})

        threads = [threading.Thread(target=slow, args=(s, n, r)) for s, n, r in ((a, "a", 3), (b, "b", 4))]
        for t in threads:
            t.start()
        time.sleep(0.5)
        os.kill(first, signal.SIGKILL)
        for t in threads:
            t.join(30)
        answers = sorted(got.values(), key=lambda m: "error" in m)
        assert "result" in answers[0], got
        assert answers[1]["error"]["code"] == -32000, got
        # The other server goes on, and a new one takes the dead one's place.
        assert harness.wait_until(lambda: len(children()) == 2, 20, 0.1), children()
        for rid in range(10, 14):
            assert "result" in call(port, a, rid, "env", {"names": []})
        assert "gone; starting another" in stderr.read_text()


def rss_tree_kib() -> int:
    total = 0
    for pid in harness.processes_with(harness.RUN_MARKER, include_proxy=True):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def close(port: int, session: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session})
    conn.getresponse().read()
    conn.close()


def test_a_session_costs_little_and_what_it_held_is_reused():
    """200 idle sessions on two servers, then closed, then 200 more: the
    process tree grows by a small amount per session, and the second
    round reuses what the first freed (mcp-chain keeps freed heap for
    reuse rather than handing it back: `memory.rs`), so nothing leaks."""
    with shared([str(FAKE), "--label", harness.RUN_MARKER], extra="max_sessions = 300") as (port, stderr):
        warm = [open_session(port) for _ in range(5)]
        call(port, warm[0], 1, "env", {"names": []})
        before = rss_tree_kib()
        sessions = [open_session(port) for _ in range(200)]
        first = rss_tree_kib()
        per_session = (first - before) / 200
        for session in sessions:
            close(port, session)
        assert harness.wait_until(lambda: stderr.read_text().count("session ended") >= 200, 20, 0.2)
        sessions = [open_session(port) for _ in range(200)]
        second = rss_tree_kib()
        for session in sessions:
            close(port, session)
        print(f"process tree RSS: {before} KiB; {first} KiB with 200 idle sessions ({per_session:.0f} KiB each); "
              f"{second} KiB with 200 others after those closed")
        assert per_session <= 100, f"{per_session:.0f} KiB per idle session"
        # A leak would grow the tree by the first round's amount again;
        # reuse leaves a little fragmentation (about a tenth of it here).
        assert second - first <= (first - before) // 4, (before, first, second)
        assert len(children()) == 2


def test_a_server_request_that_could_be_anyones_is_refused_not_guessed():
    """With two sessions' requests in flight on the one server, a server's
    request carries nothing that says whose it is: it is answered with an
    error and no client is asked."""
    import threading

    with shared([str(FAKE), "--label", harness.RUN_MARKER], pool=1) as (port, stderr):
        a, b = open_session(port), open_session(port)
        slow = threading.Thread(target=call, args=(port, a, 1, "delay", {"ms": 1500}))
        slow.start()
        time.sleep(0.3)
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
        answer = call(port, b, 2, "ask", {"method": "sampling/createMessage", "params": params})
        slow.join(30)
        text = answer["result"]["content"][0]["text"]
        assert "cannot be told" in text, answer
        assert "cannot be told" in stderr.read_text()


def test_updates_and_log_messages_reach_only_the_sessions_that_asked():
    """resources/updated goes to the sessions subscribed to that resource;
    a log message to the sessions whose level lets it through; what every
    session may see (list_changed) to all. The server's lines come in this
    order, so once every session has heard the last, each has heard what
    was for it."""

    with shared([str(FAKE), "--label", harness.RUN_MARKER]) as (port, _):
        url = f"http://127.0.0.1:{port}/mcp"
        heard: dict[int, list[str]] = {0: [], 1: [], 2: []}


        readme = "file:///srv/readme.txt"
        lines = [
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": readme}},
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "debug", "data": "x"}},
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        ]

        async def scenario() -> None:
            async with contextlib.AsyncExitStack() as stack:
                sessions = await sdk_sessions(stack, url, [{"message_handler": recorder(heard, n)} for n in range(3)])
                with anyio.fail_after(30):
                    await sessions[0].subscribe_resource(readme)
                    await sessions[1].set_logging_level("error")
                    await sessions[2].call_tool("send", {"lines": lines})
                    while not all("notifications/tools/list_changed" in h for h in heard.values()):
                        await anyio.sleep(0.05)

        anyio.run(scenario)
        updated = [n for n, h in heard.items() if "notifications/resources/updated" in h]
        logged = [n for n, h in heard.items() if "notifications/message" in h]
        assert updated == [0], heard
        assert logged == [0, 2], heard


def test_a_session_cannot_cancel_another_sessions_request():
    import threading

    with shared([str(FAKE), "--label", harness.RUN_MARKER], pool=1) as (port, _):
        a, b = open_session(port), open_session(port)
        got: dict = {}
        slow = threading.Thread(target=lambda: got.update(a=call(port, a, 5, "delay", {"ms": 800})))
        slow.start()
        time.sleep(0.2)
        status, _, _ = post(port, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": 5, "reason": "not yours"}}, b)
        assert status == 202
        slow.join(30)
        assert "result" in got["a"], got


def test_a_pooled_server_restarted_on_failure_is_given_the_handshake_and_the_sessions_told(tmp_path):
    """`restart = "on-failure"` on a pooled server: the call it died with
    is answered -32000 at once, the new child gets the pool's handshake
    again before anything else, every session hears list_changed, and
    the same sessions go on without a new one."""
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: these cases test the proxy's own front")
    harness.require_proxy_binary()
    port = harness.free_port()
    config = tmp_path / "front.toml"
    config.write_text(f"""[front]
upstream_sessions = "shared"
shared_pool = 1

[upstream]
command = "{FAKE}"
args = ["--label", "{harness.RUN_MARKER}"]
restart = "on-failure"
restart_backoff = "100ms"
""")
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(config), "--log-level", "info"]
    heard: dict[int, list[str]] = {0: [], 1: []}
    outcome: dict[str, Any] = {}

    async def scenario() -> None:
        from mcp.shared.exceptions import MCPError

        async with contextlib.AsyncExitStack() as stack:
            a, b = await sdk_sessions(stack, f"http://127.0.0.1:{port}/mcp", [{"message_handler": recorder(heard, n)} for n in range(2)])
            first = (await a.call_tool("env", {"names": []})).structured_content["pid"]
            with anyio.fail_after(30):
                try:
                    await a.call_tool("crash", {"code": 3})
                except MCPError as e:
                    outcome["crash"] = e.error
            with anyio.fail_after(30):
                while not all("notifications/tools/list_changed" in h for h in heard.values()):
                    await anyio.sleep(0.05)
                while True:
                    result = await b.call_tool("env", {"names": []})
                    if not result.is_error:
                        break
                    await anyio.sleep(0.1)
            outcome["pids"] = (first, result.structured_content["pid"])

    with harness.listening(argv, port, "mcp-chain --listen (shared, restart)") as stderr:
        anyio.run(scenario)
        # What the new child read, in order: the pool's handshake first.
        status, _, [answer] = post(port, {"jsonrpc": "2.0", "id": 9, "method": "debug/received"}, open_session(port))
        log = stderr.read_text()
    assert status == 200, answer
    received = answer["result"]["messages"]
    assert [m.get("method") for m in received[:2]] == ["initialize", "notifications/initialized"], received[:3]
    assert received[0]["params"]["clientInfo"]["name"] == "mcp-chain"
    assert [m.get("method") for m in received].count("initialize") == 1, "one handshake: sessions are answered by the pool"
    crash = outcome["crash"]
    assert crash.code == -32000 and "the server exited (exit status: 3)" in crash.message, crash
    first, second = outcome["pids"]
    assert first != second, "a new child"
    assert "the server is back" in log


def test_a_pool_of_servers_at_a_url_serves_every_session():
    """The pool's servers at a URL (here another mcp-chain's front before
    the fixture): each member is initialized over HTTP by mcp-chain, and
    the sessions' calls, with the same ids, get their own answers."""
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: these cases test the proxy's own front")
    inner = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{inner}", "--", str(FAKE), "--label", harness.RUN_MARKER]
    with harness.listening(argv, inner, "mcp-chain --listen (the pool's server)"):
        with shared([f"http://127.0.0.1:{inner}/mcp"]) as (port, stderr):
            a, b = open_session(port), open_session(port)
            for rid in range(1, 5):
                for session, text in ((a, "from a"), (b, "from b")):
                    answer = call(port, session, rid, "echo", {"text": f"{text} {rid}"})
                    assert answer["id"] == rid and f"{text} {rid}" in json.dumps(answer["result"]), answer
            assert len(children()) == 2, "one server per member, each its own session at the URL"
            assert "ERROR" not in stderr.read_text()
