"""A person's decisions kept as one by replicas on Debian's redis-server
(`[state]`): an "Always" given on replica A's approval page holds on B and C
(neither asks), a revoke on B's console makes A ask again, and both
replicas' records are one log; the grant names no argument in clear. A
pin accepted with `mcp-chain pin accept` on B's config is in force on A
within a second, and A's client is told `list_changed`; a replica started
on an empty disk judges against the pins the others keep rather than
trusting its first listing. With Redis gone and `on_unavailable =
"refuse"`, a call whose grant cannot be looked up is refused
(`state_unavailable`), not asked or allowed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness
from test_state import DEMO, TOKEN, Stream, post, redis, redis_argv, redis_keys, replica, session_on


def two_replicas_config(redis_port: int, prefix: str, layers: str, upstream: bool = False) -> Path:
    path = Path(tempfile.mkdtemp()) / "replica.toml"
    server = f'[upstream]\ncommand = "{DEMO}"\nargs = ["{harness.RUN_MARKER}"]\n' if upstream else ""
    path.write_text(server + f"""
[front]
tokens = ["{TOKEN}"]

[state]
url = "redis://127.0.0.1:{redis_port}/0"
prefix = "{prefix}"
timeout = "2s"

[console]
listen = "127.0.0.1:0"
open = "never"
{layers}
""")
    return path


def console_of(log: Path) -> str:
    found = harness.wait_until(lambda: re.search(r"the approval page is at (\S+)", log.read_text()), 20)
    assert found, log.read_text()
    return found.group(1)


def form_post(url: str, path: str, fields: dict[str, str]) -> int:
    page = urllib.request.urlopen(url, timeout=20).read().decode()
    token = re.search(r'name="token" value="([0-9a-f]+)"', page).group(1)
    data = urllib.parse.urlencode({**fields, "token": token}).encode()
    request = urllib.request.Request(url + path, data=data, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None

    try:
        return urllib.request.build_opener(NoRedirect).open(request, timeout=20).status
    except urllib.error.HTTPError as e:
        return e.code


def add(port: int, session: str, rid: int) -> dict:
    _, _, answer = post(port, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                               "params": {"name": "add", "arguments": {"a": 40, "b": 2}}}, session)
    assert answer is not None and answer.get("id") == rid, answer
    return answer


APPROVE = """
[[middleware]]
type = "approve"
tools = ["add"]
ask = ["page"]
remember = "always"
timeout = "60s"
"""


def allow_always(port: int, url: str, session: str) -> None:
    """Calls `add` on the replica at `port` and answers "Always" on its
    page (at `url`) when the call waits there."""
    with ThreadPoolExecutor(1) as pool:
        asked = pool.submit(add, port, session, 1)
        page = harness.wait_until(lambda: _waiting(url), 20)
        assert page, "the replica never showed the call"
        assert form_post(url, "decide", {"id": page, "choice": "allow_always"}) == 303
        assert "result" in asked.result(timeout=20), "allowed always"


def test_an_always_on_one_replica_holds_on_the_other_and_a_revoke_on_either_ends_it():
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    rport = harness.free_port()
    server = subprocess.Popen(redis_argv(rport), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert harness.wait_until(lambda: _answers(rport), 20), "redis-server never answered"
        path = two_replicas_config(rport, prefix, APPROVE)
        dirs = [Path(tempfile.mkdtemp()) for _ in range(3)]
        with replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[0])}) as (a, a_log), \
                replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[1])}) as (b, b_log), \
                replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[2])}) as (c, _):
            a_url, b_url = console_of(a_log), console_of(b_log)
            on_a, on_b = session_on(a), session_on(b)
            allow_always(a, a_url, on_a)
            # B and C: no call waits on their pages, and it is answered at once.
            answered = add(b, on_b, 2)
            assert answered.get("result", {}).get("content"), ("granted on A, held on B", answered)
            answered = add(c, session_on(c), 2)
            assert answered.get("result", {}).get("content"), ("granted on A, held on C", answered)
            grants = [k for k in redis_keys(rport, prefix) if k.endswith("table:grants")]
            assert grants, redis_keys(rport, prefix)
            stored = _redis(rport, "HGETALL", grants[0])
            assert '"tool":"add"' in stored and '"a":40' not in stored and "sha256:" in stored, stored
            assert not (dirs[0] / "approve" / "grants.json").exists(), "kept in Redis, not a file"
            # One log of decisions: A's page lists B's remembered call.
            a_page = urllib.request.urlopen(a_url, timeout=20).read().decode()
            assert "remembered_always" in a_page and "page_allowed_always" in a_page, a_page
            # The command line lists what every replica shares, from any
            # machine with the config (its own state directory empty).
            listed = subprocess.run([str(harness.MCP_CHAIN), "approve", "list", "--config", str(path)],
                                    capture_output=True, text=True, timeout=60,
                                    env={**_env(), "MCP_CHAIN_STATE_DIR": tempfile.mkdtemp()})
            assert listed.returncode == 0 and listed.stdout.startswith("0: add on "), listed
            assert "these arguments (sha256:" in listed.stdout and "40" not in listed.stdout.split("(")[0], listed
            # Revoked on B's console: A asks again (denied here on its page).
            b_page = urllib.request.urlopen(b_url, timeout=20).read().decode()
            index = re.search(r'name="index" value="(\d+)"', b_page).group(1)
            assert form_post(b_url, "revoke", {"index": index, "tool": "add"}) == 303
            with ThreadPoolExecutor(1) as pool:
                asked = pool.submit(add, a, on_a, 3)
                page = harness.wait_until(lambda: _waiting(a_url), 20)
                assert page, "A did not ask again after the revoke"
                assert form_post(a_url, "decide", {"id": page, "choice": "deny"}) == 303
                refused = asked.result(timeout=20)
            assert refused["error"]["data"]["reason"] == "page_denied", refused
            # Redis gone: a grant that cannot be looked up refuses the call.
            server.kill()
            server.wait(timeout=20)
            lost = add(b, on_b, 4)
            assert lost["error"]["code"] == -32000, lost
            assert lost["error"]["data"] == {"layer": "approve", "reason": "state_unavailable"}, lost
    finally:
        server.kill()
        server.wait(timeout=20)


def test_a_grant_for_the_tool_is_found_for_other_arguments_and_no_other_tool():
    """`always = "tool"`: an "Always" on A lets B call the tool with other
    arguments at once; a grant is looked up by its two possible rows (these
    arguments, any arguments), so one for another tool lets nothing else
    through."""
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    layers = APPROVE.replace('tools = ["add"]', 'tools = ["add", "echo"]') + 'always = "tool"\n'
    with redis() as rport:
        path = two_replicas_config(rport, prefix, layers)
        dirs = [Path(tempfile.mkdtemp()) for _ in range(2)]
        with replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[0])}) as (a, a_log), \
                replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[1])}) as (b, b_log):
            a_url, b_url = console_of(a_log), console_of(b_log)
            on_a, on_b = session_on(a), session_on(b)
            allow_always(a, a_url, on_a)
            _, _, other = post(b, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                   "params": {"name": "add", "arguments": {"a": 1, "b": 1}}}, on_b)
            assert other and other.get("result", {}).get("content"), ("the tool's grant, other arguments", other)
            with ThreadPoolExecutor(1) as pool:
                echo = pool.submit(post, b, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                             "params": {"name": "echo", "arguments": {"text": "hi"}}}, on_b)
                assert harness.wait_until(lambda: _waiting(b_url), 20), "echo was let through by add's grant"
                assert form_post(b_url, "decide", {"id": _waiting(b_url), "choice": "deny"}) == 303
                assert echo.result(timeout=20)[2]["error"]["data"]["reason"] == "page_denied"


def _answers(port: int) -> bool:
    with contextlib.suppress(Exception):
        return _redis(port, "PING").strip() == "PONG"
    return False


def _redis(port: int, *args: str) -> str:
    cli = "/usr/bin/redis-cli"
    return subprocess.run([cli, "-p", str(port), *args], capture_output=True, text=True, timeout=20,
                          check=True).stdout


def _waiting(url: str) -> str | None:
    page = urllib.request.urlopen(url, timeout=20).read().decode()
    found = re.search(r'name="id" value="(\d+)"', page)
    return found.group(1) if found else None


PIN = """
[[middleware]]
type = "pin"
path = "${MCP_CHAIN_STATE_DIR}/pins.json"
on_change = "hide"
"""


def names(port: int, session: str) -> set[str]:
    answer = post(port, {"jsonrpc": "2.0", "id": 50, "method": "tools/list"}, session)[2] or {}
    return {t["name"] for t in answer["result"]["tools"]}


def test_a_pin_accepted_on_one_replica_is_in_force_on_the_other():
    prefix = f"mcp-chain:test-{secrets.token_hex(4)}:"
    with redis() as rport:
        path = two_replicas_config(rport, prefix, PIN, upstream=True)
        dirs = [Path(tempfile.mkdtemp()) for _ in range(2)]
        with replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[0])}) as (a, _):
            on_a = session_on(a)
            assert "add" in names(a, on_a), "first sight: pinned as listed"
            table = harness.wait_until(
                lambda: [k for k in redis_keys(rport, prefix) if ":table:pins:" in k], 20)
            assert table, "A's first pins were shared"
            assert harness.wait_until(lambda: "tools:add" in _redis(rport, "HKEYS", table[0]), 20)
            # What the others trusted long ago says otherwise of `add`: as if
            # the server had changed its description since.
            row = json.loads(_redis(rport, "HGET", table[0], "tools:add"))
            trusted = json.dumps("Adds two numbers, as trusted.", separators=(",", ":")).encode()
            row["pinned"]["description"] = "sha256:" + hashlib.sha256(trusted).hexdigest()
            row.pop("texts", None)
            _redis(rport, "HSET", table[0], "tools:add", json.dumps(row))
            _redis(rport, "PUBLISH", f"{prefix}changes", table[0][len(prefix) + len("table:"):])
            stream = Stream(a, on_a)
            assert harness.wait_until(lambda: "add" not in names(a, on_a), 20), "A took the shared pin up"
            # That change's own list_changed heard first, so the one counted
            # below can only be the accept's.
            assert harness.wait_until(lambda: "notifications/tools/list_changed" in stream.heard, 20), stream.heard
            # B on an empty disk: judged against the shared pins, not trusted
            # on first use.
            with replica(path, env={"MCP_CHAIN_STATE_DIR": str(dirs[1])}) as (b, _):
                on_b = session_on(b)
                assert "add" not in names(b, on_b), "B hides the drift the others hold"
                refused = add(b, on_b, 7)
                assert refused["error"]["data"]["layer"] == "pin", refused
                heard_before = len(stream.heard)
                accepted = subprocess.run(
                    [str(harness.MCP_CHAIN), "pin", "accept", "add", "--config", str(path)],
                    capture_output=True, text=True, timeout=60, env={**_env(), "MCP_CHAIN_STATE_DIR": str(dirs[1])})
                assert accepted.returncode == 0 and "accepted tool add" in accepted.stdout, accepted
                assert "add" in names(b, on_b)
                assert harness.wait_until(lambda: "add" in names(a, on_a), 20), "A took the accept up"
                assert harness.wait_until(
                    lambda: "notifications/tools/list_changed" in stream.heard[heard_before:], 20), stream.heard
                assert "result" in add(a, on_a, 8)


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)
