"""`mcp-chain bundle`: a Desktop Extension (.mcpb) of a server behind
mcp-chain. The official `@anthropic-ai/mcpb` CLI (pinned) inspects it and
validates its manifest; the bundle is unpacked and launched the way Claude
Desktop launches one (the MCPB library's own getMcpConfigForManifest
substitutes `${__dirname}` and `${user_config.*}`), and the official Python
SDK client runs a session through it: the bundled policy holds, a policy
the person chose at install replaces it, a secret asked at install reaches
the server's environment."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import harness

FAKE = harness.REPO / "target/debug/fake-mcp-server"
MCPB = harness.INTEROP / "node_modules/.bin/mcpb"
LAUNCH = harness.INTEROP / "mcpb_launch.mjs"


def mcpb(*args: str) -> subprocess.CompletedProcess:
    if not MCPB.exists():
        pytest.fail("the mcpb CLI is not installed (tests/interop/install.sh installs it)")
    return subprocess.run([str(MCPB), *args], capture_output=True, text=True, timeout=120)


def bundle(tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(harness.MCP_CHAIN), "bundle", *extra], capture_output=True, text=True, timeout=120, cwd=tmp)


def launched(unpacked: Path, user_config: dict) -> dict | None:
    out = subprocess.run([harness.NODE, str(LAUNCH), str(unpacked), json.dumps(user_config)],
                         capture_output=True, text=True, timeout=60, cwd=harness.INTEROP, check=True)
    return json.loads(out.stdout)


async def session(config: dict) -> tuple[set[str], dict]:
    params = StdioServerParameters(command=config["command"], args=config["args"],
                                   env={**config.get("env", {}), "PATH": os.environ["PATH"]})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            with anyio.fail_after(30):
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                env = await s.call_tool("env", {"names": ["GUARDED_TOKEN"]})
                return names, env.structured_content


def test_a_bundle_the_official_cli_accepts_runs_as_claude_desktop_runs_it(tmp_path: Path):
    guard = tmp_path / "guard.toml"
    guard.write_text('[[middleware]]\ntype = "filter"\ntools = { deny = ["crash"] }\n')
    out = tmp_path / "guarded.mcpb"
    done = bundle(tmp_path, "--policy", str(guard), "--out", str(out), "--secret", "GUARDED_TOKEN",
                  "--", str(FAKE), "--label", harness.RUN_MARKER)
    assert done.returncode == 0, done.stderr
    print(f"bundle size with the debug build: {out.stat().st_size} bytes")

    info = mcpb("info", str(out))
    assert info.returncode == 0 and "guarded" in info.stdout, info
    unpacked = tmp_path / "unpacked"
    assert mcpb("unpack", str(out), str(unpacked)).returncode == 0
    assert mcpb("validate", str(unpacked / "manifest.json")).returncode == 0
    binary = unpacked / "server" / "mcp-chain"
    assert binary.stat().st_mode & stat.S_IXUSR, "the executable bit kept in the zip"
    manifest = json.loads((unpacked / "manifest.json").read_text())
    assert manifest["manifest_version"] == "0.4" and manifest["server"]["type"] == "binary"
    assert set(manifest["server"]["mcp_config"]["platform_overrides"]) == {"darwin", "win32", "linux"}
    assert manifest["user_config"]["policy"]["type"] == "file"
    assert manifest["user_config"]["guarded_token"]["sensitive"] is True
    assert manifest["compatibility"]["platforms"] == ["linux"]

    # Without the secret it asks for, Claude Desktop does not start it.
    assert launched(unpacked, {}) is None

    config = launched(unpacked, {"guarded_token": "t0k-from-install"})
    assert config["command"] == str(binary)
    names, env = anyio.run(session, config)
    assert "echo" in names and "crash" not in names, "the bundled policy"
    assert env["GUARDED_TOKEN"] == "t0k-from-install"

    chosen = tmp_path / "mine.toml"
    chosen.write_text('[[middleware]]\ntype = "filter"\ntools = { deny = ["echo"] }\n')
    config = launched(unpacked, {"guarded_token": "t", "policy": str(chosen)})
    names, _ = anyio.run(session, config)
    assert "crash" in names and "echo" not in names, "the policy chosen at install"


def test_bundle_refuses_what_it_cannot_make(tmp_path: Path):
    guard = tmp_path / "guard.toml"
    guard.write_text('[[middleware]]\ntype = "filter"\ntools = { deny = ["x"] }\n')
    bad = tmp_path / "bad.toml"
    bad.write_text("[[middleware]]\ntype = \"nope\"\n")
    cases = [
        (["--policy", str(guard), "--out", "a.mcpb", "--platform", "win32", "--", "srv"], "needs that platform's mcp-chain"),
        (["--policy", str(guard), "--out", "a.mcpb", "--name", "Not Valid", "--", "srv"], "lowercase"),
        (["--policy", str(bad), "--out", "a.mcpb", "--", "srv"], "--policy"),
        (["--policy", str(guard), "--out", "a.mcpb", "--secret", "NOT-A-NAME", "--", "srv"], "environment variable"),
    ]
    for args, said in cases:
        done = bundle(tmp_path, *args)
        assert done.returncode == 1 and said in done.stderr, (args, done.stderr)
    assert not (tmp_path / "a.mcpb").exists()
