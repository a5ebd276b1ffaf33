"""Process lifecycle through mcp-chain with a real server: a clean exit when
the client closes stdin, and no process left behind."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import uuid

import anyio
import mcp_types as types
import pytest

import harness
from harness import CHAINS, Chain, everything_argv, launch_argv, processes_with, wait_until

EXIT_WAIT_S = 15


@pytest.fixture(params=CHAINS, ids=lambda c: c.id)
def chain(request) -> Chain:
    harness.require_chain(request.param)
    return request.param


def test_clean_exit_on_stdin_close(chain: Chain):
    # A marker argument (ignored by server-everything) finds the server process.
    marker = f"interop-marker-{uuid.uuid4().hex}"
    argv = launch_argv(everything_argv(marker), chain.config)
    stderr = harness.new_stderr_file(f"mcp-chain[{chain.id}]")
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env={**os.environ, **harness.chain_env()},
            cwd=harness.REPO,
        )
    try:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "interop-stdin-close", "version": "0"},
            },
        }
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
        proc.stdin.flush()
        assert wait_until(lambda: processes_with(marker), 10), "server never started"
        # End of input: the answers still owed are written, then everything exits.
        chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)
        reader.start()
        proc.stdin.close()
        try:
            proc.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit within {EXIT_WAIT_S}s after stdin closed")
        reader.join(5)
        out = b"".join(chunks)
        assert proc.returncode == 0, f"exit code {proc.returncode}"
        messages = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
        ids = [m.get("id") for m in messages if "method" not in m]
        assert ids == [1, 2], f"responses owed before exit: {ids}"
        assert wait_until(lambda: not processes_with(marker), 5), f"server left running: {processes_with(marker)}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


@pytest.mark.anyio
async def test_no_server_left_after_sdk_client_closes(chain: Chain):
    """The official Python SDK's own shutdown (close stdin, 2 s, SIGTERM to the
    proxy's process group, 2 s, SIGKILL) leaves no server process behind, even
    a server that does not exit on end of input: server-everything with a
    roots/list request still unanswered keeps running after its stdin closes."""
    marker = f"interop-marker-{uuid.uuid4().hex}"

    async def list_roots(context):
        return types.ListRootsResult(roots=[])

    async with harness.open_session(
        everything_argv(marker), chain, label=f"mcp-chain[{chain.id}]", list_roots_callback=list_roots
    ) as conn:
        await conn.session.send_ping()
        assert processes_with(marker), "server not running"
    with anyio.move_on_after(5):
        while processes_with(marker):
            await anyio.sleep(0.1)
    assert not processes_with(marker), (
        f"server process(es) {processes_with(marker)} still running 5 s after the client closed the session"
    )
