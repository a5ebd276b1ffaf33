"""Changing the policy without restarting, through the real binary and the
official Python SDK client: a tool denied by rewriting the file reaches the
client as `notifications/tools/list_changed` and is gone from its next
listing (SIGHUP, and `[proxy] watch_config` with an editor's
write-and-rename); an invalid save changes nothing and is reported on
stderr and in the audit; requests in flight during a reload are answered
once each; a rate limit's buckets survive an unrelated change; a reload
under the HTTP front reaches every session; a hundred reloads under load
lose no answer and leak no memory.

The server is mcp-chain's fake server (`echo`, and `delay` for slow calls)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import REPO, Chain, open_session

pytestmark = pytest.mark.anyio

FAKE = REPO / "target/debug/fake-mcp-server"


def policy(deny: list[str], audit: Path, extra: str = "", rate: str | None = None) -> str:
    text = f'[upstream]\ncommand = "{FAKE}"\n{extra}\n'
    text += f'[[middleware]]\ntype = "audit"\npath = "{audit}"\n\n'
    text += f'[[middleware]]\ntype = "filter"\ntools = {{ deny = {json.dumps(deny)} }}\n'
    if rate:
        text += f'\n[[middleware]]\ntype = "rate_limit"\nrules = [{{ tool = "echo", rate = "{rate}", burst = 2 }}]\n'
    return text


class Policy:
    """A config file, its audit file, and the mcp-chain serving it."""

    def __init__(self, deny: list[str], extra: str = "", rate: str | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-reload-"))
        self.path = self.dir / "policy.toml"
        self.audit = self.dir / "audit.jsonl"
        self.extra, self.rate = extra, rate
        self.write(deny)

    def write(self, deny: list[str], rate: str | None = None, replace: bool = False) -> None:
        text = policy(deny, self.audit, self.extra, rate or self.rate)
        self.write_text(text, replace)

    def write_text(self, text: str, replace: bool = False) -> None:
        if replace:
            # As editors save: a new file renamed over the old one.
            tmp = self.dir / ".policy.toml.swp"
            tmp.write_text(text)
            os.replace(tmp, self.path)
        else:
            self.path.write_text(text)

    def chain(self) -> Chain:
        return Chain("reload", self.path)

    def pid(self) -> int:
        pids = [p for p in harness.processes_with(str(self.path), include_proxy=True)
                if Path(f"/proc/{p}/exe").resolve() == harness.MCP_CHAIN]
        assert len(pids) == 1, pids
        return pids[0]

    def hup(self) -> None:
        os.kill(self.pid(), signal.SIGHUP)

    def lines(self, **fields) -> list[dict]:
        if not self.audit.exists():
            return []
        lines = harness.jsonl(self.audit)
        return [l for l in lines if all(l.get(k) == v for k, v in fields.items())]

    def reloads(self, outcome: str) -> list[dict]:
        if not self.audit.exists():
            return []
        lines = harness.jsonl(self.audit)
        return [l for l in lines if l.get("event") == "config_reload" and l.get("outcome") == outcome]


def session(p: Policy, **callbacks):
    argv = [str(harness.MCP_CHAIN), "--config", str(p.path)]
    return open_session(argv, p.chain(), exact_argv=True, label="reload", **callbacks)


async def tools(conn) -> set[str]:
    return {t.name for t in (await conn.session.list_tools()).tools}


async def wait_reloaded(p: Policy, outcome: str, count: int = 1) -> list[dict]:
    with anyio.fail_after(10):
        while len(found := p.reloads(outcome)) < count:
            await anyio.sleep(0.05)
    return found


async def test_a_tool_denied_by_rewriting_the_file_is_announced_and_gone():
    harness.require_proxy_binary()
    p = Policy(["crash"])
    async with session(p) as conn:
        capabilities = conn.incoming()[0]["result"]["capabilities"]
        assert capabilities["tools"]["listChanged"] is True, "mcp-chain declares what it may announce"
        assert "echo" in await tools(conn)
        p.write(["crash", "echo"])
        p.hup()
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"), what="tools/list_changed")
        assert "echo" not in await tools(conn)
        with pytest.raises(MCPError, match="Unknown tool: echo"):
            await conn.session.call_tool("echo", {})
        applied = await wait_reloaded(p, "applied")
        assert applied[0]["kept"] == "1" and applied[0]["fresh"] == "1", "the audit kept its file"


async def test_watch_config_follows_an_editor_that_replaces_the_file():
    harness.require_proxy_binary()
    p = Policy(["crash"], extra="[proxy]\nwatch_config = true")
    async with session(p) as conn:
        assert "echo" in await tools(conn)
        p.write(["crash", "echo"], replace=True)
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"), what="list_changed")
        assert "echo" not in await tools(conn)
        # A second save, in place this time, applies too.
        p.write(["crash"])
        await conn.wait_for(lambda: len(conn.incoming("notifications/tools/list_changed")) >= 2, what="again")
        assert "echo" in await tools(conn)


async def test_an_invalid_save_changes_nothing_and_is_reported():
    harness.require_proxy_binary()
    p = Policy(["crash"])
    async with session(p) as conn:
        p.write_text(policy(["crash", "echo"], p.audit).replace("deny = [", "deny = "))  # a bracket missing
        p.hup()
        refused = await wait_reloaded(p, "refused")
        assert "policy.toml:" in refused[0]["error"], refused
        stderr = conn.stderr.read_text()
        assert "config not reloaded" in stderr and "policy.toml:" in stderr, stderr
        echoed = await conn.session.call_tool("echo", {"n": 1})
        assert not echoed.is_error, "the running policy still holds"
        assert not conn.incoming("notifications/tools/list_changed")
        # The next valid save applies.
        p.write(["crash", "echo"])
        p.hup()
        await conn.wait_for(lambda: conn.incoming("notifications/tools/list_changed"), what="list_changed")


async def test_requests_in_flight_during_a_reload_are_answered_once_each():
    harness.require_proxy_binary()
    p = Policy(["crash"])
    async with session(p) as conn:
        results: dict[int, object] = {}

        async def slow(n: int) -> None:
            results[n] = await conn.session.call_tool("delay", {"ms": 700, "n": n})

        async with anyio.create_task_group() as tg:
            for n in range(100):
                tg.start_soon(slow, n)
            # Every call past the chain (the audit writes its line as it
            # forwards one) before the reload.
            with anyio.fail_after(20):
                while len(p.lines(kind="request", method="tools/call")) < 100:
                    await anyio.sleep(0.02)
            p.write(["crash", "delay"])  # denies what is in flight: it finishes in its chain
            p.hup()
            await wait_reloaded(p, "applied")
        assert len(results) == 100 and not any(r.is_error for r in results.values())
        ids = [m["id"] for m in conn.outgoing("tools/call")]
        for request_id in ids:
            assert len(conn.responses_to(request_id)) == 1, request_id
        with pytest.raises(MCPError, match="Unknown tool: delay"):
            await conn.session.call_tool("delay", {"ms": 1})


async def test_rate_limit_buckets_survive_an_unrelated_change():
    harness.require_proxy_binary()
    p = Policy(["crash"], rate="1/h")
    async with session(p) as conn:
        for _ in range(2):
            await conn.session.call_tool("echo", {})
        with pytest.raises(MCPError, match="rate limit"):
            await conn.session.call_tool("echo", {})
        p.write(["crash", "nothing-like-it"])  # the filter changes, the rate limit does not
        p.hup()
        await wait_reloaded(p, "applied")
        with pytest.raises(MCPError, match="rate limit"):
            await conn.session.call_tool("echo", {})
        p.write(["crash", "nothing-like-it"], rate="2/h")  # the limit itself changes: fresh buckets
        p.hup()
        await wait_reloaded(p, "applied", 2)
        assert not (await conn.session.call_tool("echo", {})).is_error


async def test_a_reload_under_the_front_reaches_every_session():
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    harness.require_proxy_binary()
    p = Policy(["crash"])
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--config", str(p.path), "--listen", f"127.0.0.1:{port}"]
    heard: dict[int, list[str]] = {0: [], 1: [], 2: []}

    def recorder(n: int):
        async def handle(message) -> None:
            name = getattr(getattr(message, "root", message), "method", None)
            if name:
                heard[n].append(name)
        return handle

    with harness.listening(argv, port, "reload-front"):
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for n in heard:
                read, write = await stack.enter_async_context(streamable_http_client(f"http://127.0.0.1:{port}/mcp"))
                s = await stack.enter_async_context(ClientSession(read, write, message_handler=recorder(n)))
                with anyio.fail_after(30):
                    await s.initialize()
                    assert "echo" in {t.name for t in (await s.list_tools()).tools}
                sessions.append(s)
            p.write(["crash", "echo"])
            p.hup()
            with anyio.fail_after(10):
                while not all("notifications/tools/list_changed" in h for h in heard.values()):
                    await anyio.sleep(0.05)
            for s in sessions:
                assert "echo" not in {t.name for t in (await s.list_tools()).tools}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def test_a_hundred_reloads_under_load_lose_nothing_and_leak_nothing():
    harness.require_proxy_binary()
    p = Policy(["crash"])
    async with session(p) as conn:
        pid = p.pid()
        calls = 0
        stop = anyio.Event()

        async def load() -> None:
            nonlocal calls
            while not stop.is_set():
                result = await conn.session.call_tool("echo", {"n": calls})
                assert not result.is_error
                calls += 1

        async def reload_times(n: int, start: int) -> None:
            for i in range(n):
                p.write(["crash", f"other-{start + i}"])
                p.hup()
                await wait_reloaded(p, "applied", start + i + 1)

        async with anyio.create_task_group() as tg:
            tg.start_soon(load)
            await reload_times(10, 0)  # warm: the allocator's arenas settle
            before = rss_kib(pid)
            await reload_times(100, 10)
            after = rss_kib(pid)
            stop.set()
        print(f"100 reloads under load: {calls} calls, VmRSS {before} KiB before, {after} KiB after")
        assert calls > 0
        sent = conn.outgoing("tools/call")
        assert all(len(conn.responses_to(m["id"])) == 1 for m in sent), "every call answered once"
        # A leak of a chain per reload would be hundreds of KiB; what is
        # left is fragmentation, bounded.
        assert after - before < 1024, (before, after)


def test_the_fronts_tokens_change_live_for_the_requests_after():
    import urllib.error
    import urllib.request

    harness.require_proxy_binary()
    first, second = "reload-token-first-0123456789", "reload-token-second-012345678"
    p = Policy(["crash"], extra=f'[front]\ntokens = ["{first}"]')
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--config", str(p.path), "--listen", f"127.0.0.1:{port}"]

    def initialize(token: str) -> int:
        body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, method="POST", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        try:
            with urllib.request.urlopen(request, timeout=20) as r:
                r.read()
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    with harness.listening(argv, port, "reload-tokens"):
        assert (initialize(first), initialize(second)) == (200, 401)
        p.extra = f'[front]\ntokens = ["{second}"]'
        p.write(["crash"])
        p.hup()
        harness.wait_until(lambda: p.reloads("applied"), timeout=10)
        assert (initialize(first), initialize(second)) == (401, 200)
        # Removing every token would open a loopback front only: allowed,
        # but a reload can never change where it listens.
        p.extra = '[front]\nlisten = "127.0.0.1:9"'
        p.write(["crash"])
        p.hup()
        refused = harness.wait_until(lambda: p.reloads("refused"), timeout=10)
        assert "[front] changed; restart" in refused[0]["error"]
        assert initialize(second) == 200


def test_2026_listeners_hear_a_reload_on_their_own_streams():
    """Clients of the 2026-07-28 revision (no session) listening for tool
    changes through the front: mcp-chain's own list_changed after a reload
    reaches each listener whose server acknowledged that kind, stamped
    with its own subscription."""
    from mcp.client.client import Client

    harness.require_proxy_binary()
    python, server = REPO / ".venv/bin/python", harness.INTEROP / "modern_stdio_server.py"
    p = Policy(["crash"])
    upstream = f'[upstream]\ncommand = "{python}"\nargs = ["{server}", "{harness.RUN_MARKER}"]\n'
    deny = lambda tools: p.write_text(policy(tools, p.audit).replace(f'[upstream]\ncommand = "{FAKE}"\n', upstream))
    deny(["crash"])
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--config", str(p.path), "--listen", f"127.0.0.1:{port}"]
    with harness.listening(argv, port, "reload-2026"):
        url = f"http://127.0.0.1:{port}/mcp"

        async def scenario() -> tuple[list[str], set[str]]:
            listeners = harness.ToolListeners(url, 2)
            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    listeners.start(tg)
                    await listeners.ready.wait()
                    await anyio.sleep(0.3)
                    deny(["crash", "touch"])
                    p.hup()
                async with Client(url, mode="auto") as c:
                    names = {t.name for t in (await c.list_tools()).tools}
            return listeners.got, names

        got, names = anyio.run(scenario)
        assert got == ["ToolsListChanged", "ToolsListChanged"], got
        assert "touch" not in names and "add" in names
