"""A second, independent client: the MCP Inspector's CLI (TypeScript SDK)
listing and calling through mcp-chain.

The inspector CLI takes its own options, then `--`, then the server's command
line; its own `--` split means the proxy's `--` follows a first `--`:
``index.js mcp-chain --method tools/list -- -- node server.js``.

inspector-cli 1.0.3 reads `../package.json` relative to the working directory
for its client name, so it runs from its own build/ folder.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import harness
from harness import CHAINS, INSPECTOR_CLI_DIR, NODE, Chain, everything_argv, launch_argv


@pytest.fixture(params=CHAINS, ids=lambda c: c.id)
def chain(request) -> Chain:
    harness.require_chain(request.param)
    return request.param


def inspector(chain: Chain, *options: str) -> dict:
    argv = launch_argv(everything_argv(), chain.config)
    cmd = [NODE, str(INSPECTOR_CLI_DIR / "index.js"), argv[0], *options, "--", *argv[1:]]
    stderr = harness.new_stderr_file(f"inspector+mcp-chain[{chain.id}]")
    with open(stderr, "w") as err:
        proc = subprocess.run(
            cmd,
            cwd=INSPECTOR_CLI_DIR,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            timeout=60,
            env={**os.environ, **harness.chain_env()},
        )
    out = proc.stdout.decode()
    assert proc.returncode == 0, f"inspector {' '.join(options)}: exit {proc.returncode}\n{out}"
    return json.loads(out)


def test_inspector_tools_list(chain: Chain):
    tools = {t["name"] for t in inspector(chain, "--method", "tools/list")["tools"]}
    assert {chain.tool("echo"), chain.tool("get-sum"), chain.tool("get-structured-content")} <= tools, tools
    assert all(t.startswith(chain.tool_prefix) for t in tools)
    assert not {chain.tool(t) for t in chain.hidden_tools} & tools


def test_inspector_tools_call(chain: Chain):
    result = inspector(
        chain, "--method", "tools/call", "--tool-name", chain.tool("get-sum"), "--tool-arg", "a=40", "b=2"
    )
    assert result["content"][0]["text"] == "The sum of 40 and 2 is 42.", result
    result = inspector(
        chain, "--method", "tools/call", "--tool-name", chain.tool("get-structured-content"), "--tool-arg", "location=Chicago"
    )
    assert set(result["structuredContent"]) == {"temperature", "conditions", "humidity"}, result


def test_inspector_resources_and_prompts(chain: Chain):
    read = inspector(chain, "--method", "resources/read", "--uri", "demo://resource/dynamic/text/9")
    assert read["contents"][0]["text"].startswith("Resource 9:"), read
    prompt = inspector(
        chain, "--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Porto"
    )
    assert "Porto" in prompt["messages"][0]["content"]["text"], prompt
