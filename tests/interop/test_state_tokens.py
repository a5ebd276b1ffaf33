"""Upstream OAuth tokens kept in `[state]` (Debian's redis-server): three
replicas in front of one server that accepts only OAuth, whose
authorization server rotates refresh tokens and revokes the whole login
when a rotated one is used again. One replica logs in; the others use its
tokens without a login of their own; their tokens expire together and
they all call at once, again and again: one refresh at a time across the
replicas, no refresh token used twice, the login never revoked, every call
answered. Redis holds the tokens encrypted (no token in clear), and no
replica writes a token file."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import harness
from oauth_fixture import OAuthFixture
from test_state import post, redis, session_on

HERE = Path(__file__).resolve().parent
TOKEN = "state-token-0123456789abcdef"
KEY = "k" * 16 + secrets.token_hex(16)


def replica_config(redis_port: int, prefix: str) -> Path:
    path = Path(tempfile.mkdtemp()) / "replica.toml"
    path.write_text(f"""
[front]
tokens = ["{TOKEN}"]

[state]
url = "redis://127.0.0.1:{redis_port}/0"
prefix = "{prefix}"
timeout = "2s"
key = "${{STATE_KEY}}"
""")
    return path


@contextlib.contextmanager
def replica(config: Path, url: str, state_dir: Path):
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(config), "--log-level", "info",
            "--", url]
    env = {"STATE_KEY": KEY, "MCP_CHAIN_STATE_DIR": str(state_dir),
           "MCP_CHAIN_OPEN_URL": f"{sys.executable} {HERE / 'open_url.py'}"}
    with harness.listening(argv, port, "mcp-chain replica", env=env) as stderr:
        yield port, stderr


def whoami(port: int, session: str, rid: int) -> dict[str, Any]:
    _, _, answer = post(port, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                               "params": {"name": "whoami", "arguments": {}}}, session)
    return answer or {}


def test_replicas_share_one_login_and_refresh_it_once(tmp_path: Path):
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    with redis() as rport, OAuthFixture(access_ttl=1, revoke_family_on_reuse=True) as server:
        config = replica_config(rport, prefix)
        dirs = [tmp_path / f"state-{n}" for n in range(3)]
        with contextlib.ExitStack() as stack:
            first = stack.enter_context(replica(config, server.url, dirs[0]))[0]
            sessions = [(first, session_on(first))]
            assert "result" in whoami(*sessions[0], 1), "the first replica logged in"
            others = [stack.enter_context(replica(config, server.url, d))[0] for d in dirs[1:]]
            sessions += [(port, session_on(port)) for port in others]
            for round_ in range(3):
                time.sleep(1.1)  # every replica's access token has expired
                answers: dict[int, dict[str, Any]] = {}
                threads = [threading.Thread(target=lambda n=n, s=s: answers.__setitem__(n, whoami(*s, 10 * round_ + n)))
                           for n, s in enumerate(sessions)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(60)
                texts = [answers[n].get("result", {}).get("content", [{}])[0].get("text") for n in range(3)]
                assert texts == ["read"] * 3, answers
        assert server.state.families_revoked == 0, "a rotated refresh token was used twice"
        assert len(server.state.authorize) == 1, "one login for every replica"
        grants = [t["grant_type"] for t in server.state.token]
        assert grants.count("refresh_token") >= 3, grants
        cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
        keys = subprocess.run([cli, "-p", str(rport), "--scan", "--pattern", f"{prefix}*"], capture_output=True,
                              text=True, timeout=20, check=True).stdout.split()
        assert any(":oauth:entry:" in k for k in keys), keys
        stored = "".join(subprocess.run([cli, "-p", str(rport), "GET", k], capture_output=True, text=True,
                                        timeout=20).stdout for k in keys if ":oauth:entry:" in k)
        issued = list(server.state.access) + list(server.state.refresh) + list(server.state.rotated)
        assert stored.startswith("v1:") and not any(t in stored for t in issued), "a token in clear in Redis"
        assert not any(server.url in k for k in keys), "the server is named by a digest"
        for d in dirs:
            assert not list((d / "oauth").glob("*.json")), "a replica wrote a token file"


def test_login_status_and_logout_work_on_the_shared_tokens(tmp_path: Path):
    """`login`, `auth status` and `logout` with `[state]` in the config: a
    login from one machine is every replica's (a replica on an empty disk
    serves without a login of its own), status lists it from Redis, a
    logout ends it for all; Redis out of reach is an error that changes
    nothing, even with `on_unavailable = "local"`."""
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    cli_state = tmp_path / "cli-state"
    env = {"STATE_KEY": KEY, "MCP_CHAIN_STATE_DIR": str(cli_state),
           "MCP_CHAIN_OPEN_URL": f"{sys.executable} {HERE / 'open_url.py'}"}

    def run(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(harness.MCP_CHAIN), "--config", str(config), *args], capture_output=True,
                              text=True, timeout=60, env={**os.environ, **env},
                              stdin=subprocess.DEVNULL)

    with redis() as rport, OAuthFixture() as server:
        config = replica_config(rport, prefix)
        login = run("login", server.url, config=config)
        assert login.returncode == 0, login.stderr
        assert "logged in to" in login.stdout and "kept in [state] redis://127.0.0.1" in login.stdout, login.stdout
        assert not list(cli_state.glob("oauth/*.json")), "the login went to Redis, not this machine's file"
        status = run("auth", "status", config=config)
        assert status.returncode == 0, status.stderr
        shared_part = status.stdout.split("kept in this machine's files:")[0]
        assert "for every replica:" in shared_part and server.url in shared_part, status.stdout
        assert "refreshable" in shared_part
        issued = list(server.state.access) + list(server.state.refresh)
        assert not any(t in login.stdout + login.stderr + status.stdout + status.stderr for t in issued)
        with replica(config, server.url, tmp_path / "replica-state") as (port, _):
            assert "result" in whoami(port, session_on(port), 1)
        assert len(server.state.authorize) == 1, "the replica used the login made from the command line"

        logout = run("logout", server.url, config=config)
        assert logout.returncode == 0 and "logged out of" in logout.stdout, logout
        after = run("auth", "status", config=config)
        assert "no server has tokens there" in after.stdout, after.stdout
        assert "no tokens were stored" in run("logout", server.url, config=config).stdout

        away = tmp_path / "away.toml"
        gone = harness.free_port()
        away.write_text(config.read_text().replace(f":{rport}/", f":{gone}/")
                        .replace('timeout = "2s"', 'timeout = "2s"\non_unavailable = "local"'))
        for args in (("login", server.url), ("logout", server.url), ("auth", "status")):
            done = run(*args, config=away)
            assert done.returncode == 1, (args, done.stdout)
            assert "cannot be reached" in done.stderr and "nothing was changed" in done.stderr, done.stderr
        assert len(server.state.authorize) == 1, "no login was begun with Redis away"
