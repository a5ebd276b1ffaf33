"""`[state]` on Debian's redis-server: replicas of mcp-chain keep their
rate-limit buckets as one. Three replicas let one caller through as often
as one would; the keys name no caller in clear; Redis lost mid-run is
refused (`on_unavailable = "refuse"`) or decided on each replica's own
buckets (`"local"`), and recovered without a restart, even when Redis
comes back empty; Redis unreachable or refusing the password at start:
`refuse` does not start, `local` starts and says so; the password is never
shown; `rediss://` with a private CA through `ca_file`, and refused without it.
The console's off switch made on one replica is in force on another.

redis-server comes from Debian's package (.ci/run installs it)."""

from __future__ import annotations

import contextlib
import http.client
import json
import secrets
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import harness

DEMO = harness.REPO / "target/debug/mcp-chain-demo-server"
TOKEN = "state-token-0123456789abcdef"


def redis_argv(port: int, password: str | None = None) -> list[str]:
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(server).exists():
        pytest.fail("redis-server is not installed (.ci/run installs Debian's package)")
    argv = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", tempfile.mkdtemp(prefix="mcp-redis-")]
    return argv + (["--requirepass", password] if password else [])


@contextlib.contextmanager
def redis(port: int | None = None, password: str | None = None):
    """A redis-server on loopback, nothing kept on disk, ended afterwards."""
    port = port or harness.free_port()
    with harness.listening(redis_argv(port, password), port, "redis-server"):
        yield port


def redis_keys(port: int, prefix: str) -> list[str]:
    cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
    out = subprocess.run([cli, "-p", str(port), "--scan", "--pattern", f"{prefix}*"], capture_output=True,
                         text=True, timeout=20, check=True)
    return out.stdout.split()


def config(redis_port: int, prefix: str, extra: str = "", rate: str = "10/h") -> Path:
    path = Path(tempfile.mkdtemp()) / "replica.toml"
    path.write_text(f"""
[front]
tokens = ["{TOKEN}"]

[state]
url = "redis://127.0.0.1:{redis_port}/0"
prefix = "{prefix}"
timeout = "2s"
{extra}

[[middleware]]
type = "rate_limit"
scope = "principal"
rules = [ {{ tool = "add", rate = "{rate}" }} ]
""")
    return path


@contextlib.contextmanager
def replica(config_path: Path, env: dict | None = None):
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(config_path),
            "--log-level", "info"]
    if "[upstream]" not in config_path.read_text():
        argv += ["--", str(DEMO), harness.RUN_MARKER]
    with harness.listening(argv, port, "mcp-chain replica", env=env) as stderr:
        yield port, stderr


def post(port: int, body: Any, session: str | None = None) -> tuple[int, str | None, dict | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {TOKEN}"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", json.dumps(body), headers)
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    messages = [json.loads(text)] if text.startswith("{") else [
        json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    return response.status, response.getheader("Mcp-Session-Id"), (messages[-1] if messages else None)


def session_on(port: int) -> str:
    status, session, _ = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    assert status == 200 and session
    assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    return session


def add(port: int, session: str, rid: int) -> dict:
    _, _, answer = post(port, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                               "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}, session)
    assert answer is not None and answer.get("id") == rid, answer
    return answer


class Stream:
    """A session's GET stream: the notifications a replica sends its client."""

    def __init__(self, port: int, session: str) -> None:
        self.heard: list[str] = []
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.conn.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session,
                                                  "Authorization": f"Bearer {TOKEN}"})
        response = self.conn.getresponse()
        assert response.status == 200, response.status
        threading.Thread(target=self._read, args=(response,), daemon=True).start()

    def _read(self, response) -> None:
        with contextlib.suppress(Exception):
            for line in response:
                if line.startswith(b"data: "):
                    self.heard.append(json.loads(line[6:]).get("method", ""))


def test_three_replicas_let_one_caller_through_as_often_as_one_would():
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    with redis() as rport:
        path = config(rport, prefix)
        with replica(path) as (a, _), replica(path) as (b, _), replica(path) as (c, _):
            sessions = [(port, session_on(port)) for port in (a, b, c)]
            # At once, from many threads: a replica's concurrent calls go
            # to Redis in batches, decided in one script each.
            with ThreadPoolExecutor(max_workers=12) as pool:
                answers = list(pool.map(lambda n: add(*sessions[n % 3], 100 + n), range(30)))
            let_through = [a for a in answers if "result" in a]
            refused = [a for a in answers if "error" in a]
            # 10/h: no token comes back while the test runs, busy machine or not.
            assert len(let_through) == 10, answers
            assert all(r["error"]["code"] == 429 and r["error"]["data"]["retryAfterMs"] > 0 for r in refused), refused
            keys = redis_keys(rport, prefix)
            assert keys and all(k.startswith(prefix) for k in keys), keys
            assert not any(TOKEN in k for k in keys), "the caller is named by a digest only"


def refused_for_state(answer: dict) -> bool:
    error = answer.get("error") or {}
    return error.get("code") == -32000 and (error.get("data") or {}).get("reason") == "state_unavailable"


def ping(port: int, session: str, rid: int) -> dict:
    return post(port, {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}, session)[2] or {}


@pytest.mark.parametrize("on_unavailable", ["refuse", "local"])
def test_redis_lost_mid_run_then_back_empty_without_a_restart(on_unavailable: str):
    """Redis killed under a running replica: `refuse` answers the limited
    call -32000 state_unavailable at once, `local` decides on the replica's
    own bucket; the rest goes on. Redis started again, empty: the replica
    uses it again by itself, its buckets full."""
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    rport = harness.free_port()
    path = config(rport, prefix, extra=f'on_unavailable = "{on_unavailable}"', rate="2/h")
    with contextlib.ExitStack() as redis_up:
        redis_up.enter_context(redis(rport))
        with replica(path) as (port, stderr):
            session = session_on(port)
            assert ["result" in add(port, session, n) for n in (1, 2, 3)] == [True, True, False]
            redis_up.close()
            lost = add(port, session, 4)
            if on_unavailable == "refuse":
                assert refused_for_state(lost), lost
            else:
                assert "result" in lost, "the replica's own bucket meanwhile (full: it never took from it)"
            assert "result" in ping(port, session, 5), "what needs no shared state goes on"
            with redis(rport):
                # Back, empty: buckets full again (documented), no restart.
                back = harness.wait_until(lambda: "result" in add(port, session, 6), 30, 0.5)
                assert back, "the replica did not use Redis again"
                assert redis_keys(rport, prefix), "the bucket is kept in Redis again"
            log = stderr.read_text()
            assert "[state] unavailable" in log and on_unavailable in log, log[-2000:]


def test_unreachable_or_refusing_at_start():
    """Nothing listening, or a wrong password: `refuse` does not start and
    says why (never the password); `local` starts on its own state and says
    so."""
    nothing = harness.free_port()
    prefix = "mcp-chain:start:"
    path = config(nothing, prefix)
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{harness.free_port()}", "--config", str(path), "--",
            str(DEMO), harness.RUN_MARKER]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    assert f"[state] redis://127.0.0.1:{nothing}/0 cannot be reached" in done.stderr, done.stderr
    local = config(nothing, prefix, extra='on_unavailable = "local"')
    with replica(local) as (port, stderr):
        session = session_on(port)
        assert "result" in add(port, session, 1)
        assert "serving on this replica's own state" in stderr.read_text()

    password = "right-password-" + secrets.token_hex(6)
    with redis(password=password) as rport:
        wrong = Path(tempfile.mkdtemp()) / "wrong.toml"
        wrong.write_text(config(rport, prefix).read_text().replace(
            f"redis://127.0.0.1:{rport}/0", f"redis://:${{REDIS_PASSWORD}}@127.0.0.1:{rport}/0"))
        env = {"REDIS_PASSWORD": "wrong-password-zzz", "PATH": "/usr/bin:/bin"}
        done = subprocess.run(argv[:4] + [str(wrong)] + argv[5:], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env=env)
        assert done.returncode == 1 and "cannot be reached" in done.stderr, done.stderr
        assert "wrong-password-zzz" not in done.stderr
        checked = subprocess.run([str(harness.MCP_CHAIN), "check", "--config", str(wrong), "--", str(DEMO),
                                  harness.RUN_MARKER], capture_output=True, text=True, timeout=60, env=env)
        assert "wrong-password-zzz" not in checked.stdout + checked.stderr
        with replica(wrong, env={"REDIS_PASSWORD": password}) as (port, _):
            session = session_on(port)
            assert "result" in add(port, session, 1), "the right password, from the environment"


def test_rediss_with_a_private_ca(tmp_path: Path):
    """`rediss://`: Redis over TLS with the test's own CA. Trusted through
    `ca_file` it serves; without it (the platform's roots) the certificate is
    refused at start, saying so."""
    from test_remote import _certificates

    ca, cert, key = _certificates(tmp_path)
    port = harness.free_port()
    server = redis_argv(0)
    server[server.index("--port") + 1] = "0"
    server += ["--tls-port", str(port), "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca,
               "--tls-auth-clients", "no"]
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    with harness.listening(server, port, "redis-server (TLS)"):
        trusted = config(port, prefix, extra=f'ca_file = "{ca}"')
        trusted.write_text(trusted.read_text().replace("redis://", "rediss://"))
        with replica(trusted) as (front, _):
            session = session_on(front)
            assert "result" in add(front, session, 1)
            assert "error" not in add(front, session, 2)
        untrusted = Path(tempfile.mkdtemp()) / "untrusted.toml"
        untrusted.write_text(trusted.read_text().replace(f'ca_file = "{ca}"', ""))
        argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{harness.free_port()}", "--config", str(untrusted),
                "--", str(DEMO), harness.RUN_MARKER]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 1 and "UnknownIssuer" in done.stderr, done.stderr


def test_an_off_switch_on_one_replica_is_in_force_on_the_others():
    """The console's off switch with `[state]`: a person turns `add` off on
    replica A's console; replicas B and C (their own consoles, their own
    state directories) take it up from Redis, announced by pub/sub: `add`
    leaves their lists, their clients are told `list_changed`, and they
    refuse its calls (`switched_off`); turned on again on A, it is back on
    both."""
    import re
    import urllib.parse
    import urllib.request

    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    with redis() as rport:
        path = config(rport, prefix, extra="", rate="1000/h")
        path.write_text(path.read_text() + '\n[console]\nlisten = "127.0.0.1:0"\nopen = "never"\n')
        dirs = [Path(tempfile.mkdtemp()) for _ in range(3)]
        with replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[0])}) as (a, a_log), \
                replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[1])}) as (b, _), \
                replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[2])}) as (c, _):
            on_a = session_on(a)
            others = [(b, session_on(b)), (c, session_on(c))]
            streams = [Stream(port, session) for port, session in others]

            def names(port: int, session: str) -> set[str]:
                answer = post(port, {"jsonrpc": "2.0", "id": 50, "method": "tools/list"}, session)[2] or {}
                return {t["name"] for t in answer["result"]["tools"]}

            assert "add" in names(a, on_a) and all("add" in names(*o) for o in others)
            console = harness.wait_until(lambda: re.search(r"the approval page is at (\S+)", a_log.read_text()), 20)
            url = console.group(1)

            def switch(to: str) -> None:
                page = urllib.request.urlopen(url, timeout=20).read().decode()
                token = re.search(r'name="token" value="([0-9a-f]+)"', page).group(1)
                form = urllib.parse.urlencode({"tool": "add", "to": to, "token": token}).encode()
                request = urllib.request.Request(url + "switch", data=form, method="POST", headers={
                    "Content-Type": "application/x-www-form-urlencoded"})
                with contextlib.suppress(urllib.error.HTTPError):  # a 303 back to the page
                    urllib.request.urlopen(request, timeout=20)

            switch("off")
            for (port, session), stream in zip(others, streams):
                assert harness.wait_until(lambda: "add" not in names(port, session), 20), "never took the switch up"
                assert harness.wait_until(
                    lambda: "notifications/tools/list_changed" in stream.heard, 20), stream.heard
                refused = add(port, session, 60)
                assert refused["error"]["data"]["reason"] == "switched_off", refused
            assert any(":table:switches:" in k for k in redis_keys(rport, prefix)), "a row per tool off"
            heard = [len(stream.heard) for stream in streams]
            switch("on")
            for (port, session), stream, before in zip(others, streams, heard):
                assert harness.wait_until(lambda: "add" in names(port, session), 20), "never took it back"
                assert harness.wait_until(
                    lambda: "notifications/tools/list_changed" in stream.heard[before:], 20), stream.heard
                assert "result" in add(port, session, 61)
            assert not any((d / "console" / "switches.json").exists() for d in dirs), "kept in Redis, not a file"
