"""docs/claude-desktop.md: the documented Claude Desktop entry, launched as
Claude Desktop would launch it, completes a session.

The test takes the first ```json block (the `mcpServers` entry) and the first
```toml block (the config that entry names) from the doc, and changes only
what is specific to the reader's machine:

- the example home `/Users/me` becomes a temporary folder (in args, env and
  the TOML), with a Documents folder in it;
- the `command`, the doc's absolute path to mcp-chain, becomes the binary
  under test.

(The doc's second ```json block, the Windows entry, is run under Wine by
tests/platforms/windows/smoke.sh.)

Everything else (arguments, their order, the entry's env, the TOML) is run as
written, in a minimal environment like a GUI app's: HOME and the entry's env,
nothing from this shell. The server comes from `npx -y` pinned, which resolves
to the copy install.sh put in tests/interop/node_modules (no network).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import INTEROP, MCP_CHAIN, REPO, Chain, open_session

pytestmark = pytest.mark.anyio

DOC = REPO / "docs/claude-desktop.md"
EXAMPLE_HOME = "/Users/me"


def fenced(text: str, lang: str) -> str:
    match = re.search(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)
    assert match, f"no ```{lang} block in {DOC}"
    return match.group(1)


async def test_documented_entry_completes_a_session(tmp_path: Path):
    if harness.DIRECT:
        pytest.skip("MCP_CHAIN_DIRECT=1: the documented entry runs mcp-chain itself")
    harness.require_proxy_binary()
    doc = DOC.read_text()
    servers = json.loads(fenced(doc, "json"))["mcpServers"]
    assert len(servers) == 1, f"the first json block should hold one entry: {list(servers)}"
    (name, entry), = servers.items()
    assert Path(entry["command"]).is_absolute(), "the doc must show an absolute command path"

    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "hello.txt").write_text("hello from the documented entry\n")

    def local(value: str) -> str:
        return value.replace(EXAMPLE_HOME, str(home))

    args = [local(a) for a in entry.get("args", [])]
    env = {k: local(v) for k, v in entry.get("env", {}).items()}
    assert "--config" in args, args
    config = Path(args[args.index("--config") + 1])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(local(fenced(doc, "toml")))

    # Skip only while this build's `check` rejects the documented config.
    chain = Chain(f"claude-desktop:{name}", config)
    check_env = {"HOME": str(home), **env}
    probe = subprocess.run(
        [str(MCP_CHAIN), "check", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **check_env},
    )
    if probe.returncode != 0:
        pytest.skip(f"`mcp-chain check` rejects the documented config: {probe.stderr.strip()[-300:]}")

    gui_env = {"HOME": str(home), "USER": "me", "LOGNAME": "me", "SHELL": "/bin/sh", "TERM": "dumb", **env}
    async with open_session(
        [str(MCP_CHAIN), *args],
        chain,
        label=f"claude-desktop entry {name!r}",
        exact_argv=True,
        env=gui_env,
        cwd=INTEROP,
    ) as conn:
        s = conn.session
        assert s.initialize_result.server_info.name == "secure-filesystem-server"
        tools = {t.name for t in (await s.list_tools()).tools}
        assert "read_text_file" in tools and "write_file" not in tools, sorted(tools)
        with anyio.fail_after(15):
            while True:
                r = await s.call_tool("read_text_file", {"path": str(home / "Documents" / "hello.txt")})
                if not r.is_error:
                    break
                await anyio.sleep(0.2)
        assert r.content[0].text == "hello from the documented entry\n"
        try:
            w = await s.call_tool("write_file", {"path": str(home / "Documents" / "x.txt"), "content": "x"})
        except MCPError:
            pass
        else:
            assert w.is_error
    assert not (home / "Documents" / "x.txt").exists()
    audit = re.search(r'^path\s*=\s*"([^"]+)"', local(fenced(doc, "toml")), re.M)
    if audit:
        # The state directory on Linux, for this HOME (no XDG_STATE_HOME).
        state = home / ".local/state/mcp-chain"
        log = Path(audit.group(1).replace("${MCP_CHAIN_STATE_DIR}", str(state)))
        assert log.is_file() and log.read_text().strip(), f"no audit lines in {log}"
