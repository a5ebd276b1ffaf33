"""Two mcp-chain replicas behind nginx, configured as docs/deploy.md says
(its nginx block, run as written with this test's ports): several official
Python SDK clients run whole sessions through the balancer at once, and
each session stays on the replica that holds it.

nginx comes from Debian's package (.ci/run installs it)."""

from __future__ import annotations

import contextlib
import http.client
import re
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp import types

import harness

DEPLOY = harness.REPO / "docs/deploy.md"
DEMO = harness.REPO / "target/debug/mcp-chain-demo-server"
CLIENTS = 6


def nginx_block() -> str:
    """The ```nginx block of docs/deploy.md."""
    match = re.search(r"```nginx\n(.*?)```", DEPLOY.read_text(), re.S)
    assert match, "docs/deploy.md has no nginx block"
    return match.group(1)


@contextlib.contextmanager
def nginx(ports: dict[str, int], listen: int):
    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx_bin).exists():
        pytest.fail("nginx is not installed (.ci/run installs Debian's package)")
    block = nginx_block()
    for doc_port, port in {8081: ports["a"], 8082: ports["b"]}.items():
        block = block.replace(f"127.0.0.1:{doc_port}", f"127.0.0.1:{port}")
    # Replicas past the two the docs name join the map and the upstream
    # the same way.
    for name, port in ports.items():
        if name not in ("a", "b"):
            block = block.replace("    default  mcp_any;", f"    ~^{name}-     127.0.0.1:{port};\n    default  mcp_any;")
            block = block.replace("upstream mcp_any {\n", f"upstream mcp_any {{\n    server 127.0.0.1:{port};\n")
    block = block.replace("listen 8080;", f"listen 127.0.0.1:{listen};")
    prefix = Path(tempfile.mkdtemp(prefix="mcp-nginx-"))
    conf = prefix / "nginx.conf"
    conf.write_text(
        f"""daemon off;
master_process off;
pid {prefix}/nginx.pid;
error_log stderr info;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
{block}
}}
"""
    )
    try:
        with harness.listening([nginx_bin, "-p", str(prefix), "-c", str(conf)], listen, "nginx"):
            yield
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


async def whole_session(url: str, n: int) -> int:
    """One client's whole session through the balancer: any request sent to
    the wrong replica would fail it (404)."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            with anyio.fail_after(30):
                await session.initialize()
                tools = {t.name for t in (await session.list_tools()).tools}
                assert {"add", "slow_count"} <= tools
                for i in range(5):
                    result = await session.call_tool("add", {"a": n, "b": i})
                    assert result.structured_content == {"sum": n + i}
                progress = []

                async def on_progress(value, total, message):
                    progress.append(value)

                await session.call_tool("slow_count", {"n": 2}, progress_callback=on_progress)
                assert len(progress) == 2
                read_back = await session.read_resource("demo://readme")
                assert isinstance(read_back.contents[0], types.TextResourceContents)
    return n


def test_sessions_stay_whole_behind_nginx(tmp_path: Path):
    ports = {"a": harness.free_port(), "b": harness.free_port()}
    listen = harness.free_port()
    logs = {}
    with contextlib.ExitStack() as stack:
        for name, port in ports.items():
            config = tmp_path / f"replica-{name}.toml"
            config.write_text(f'[front]\nlisten = "127.0.0.1:{port}"\nreplica = "{name}"\n')
            argv = [str(harness.MCP_CHAIN), "--config", str(config), "--log-level", "info", "--shutdown-grace", "1s"]
            argv += ["--", str(DEMO), harness.RUN_MARKER]
            logs[name] = stack.enter_context(harness.listening(argv, port, f"replica {name}"))
        stack.enter_context(nginx(ports, listen))
        url = f"http://127.0.0.1:{listen}/mcp"

        async def clients() -> list[int]:
            done: list[int] = []

            async def one(n: int) -> None:
                done.append(await whole_session(url, n))

            async with anyio.create_task_group() as tg:
                for n in range(CLIENTS):
                    tg.start_soon(one, n)
            return done

        done = anyio.run(clients)
        assert sorted(done) == list(range(CLIENTS))
        # A probe through the balancer: alive and ready, with no token.
        for path, expected in (("/healthz", "ok\n"), ("/readyz", "ready\n")):
            conn = http.client.HTTPConnection("127.0.0.1", listen, timeout=10)
            conn.request("GET", path)
            resp = conn.getresponse()
            assert (resp.status, resp.read().decode()) == (200, expected), path
            conn.close()
        started = {name: re.findall(r"session started session=(\S+)", log.read_text()) for name, log in logs.items()}
        assert sum(len(s) for s in started.values()) == CLIENTS, started
        assert all(started.values()), f"one replica took every session: {started}"
        for name, sessions in started.items():
            assert all(s.startswith(f"{name}-") for s in sessions), started
        for log in logs.values():
            text = log.read_text()
            assert "session not found" not in text and "ERROR" not in text
