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
