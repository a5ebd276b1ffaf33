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


def test_inspector_over_the_http_front(tmp_path):
    """The Inspector CLI as a remote client of `mcp-chain --listen`, with a
    bearer token, over Streamable HTTP and over legacy SSE."""
    if harness.DIRECT:
        pytest.skip("the front is mcp-chain's")
    token = "inspector-token-0123456789"
    config = tmp_path / "front.toml"
    config.write_text('[front]\ntokens = ["${INSPECTOR_TOKEN}"]\n')
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--shutdown-grace", "1s", "--config", str(config)]
    argv += ["--", *everything_argv()]
    with harness.listening(argv, port, "mcp-chain --listen", env={"INSPECTOR_TOKEN": token}):
        for url in [f"http://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{port}/sse"]:

            def remote(*options: str) -> subprocess.CompletedProcess:
                cmd = [NODE, str(INSPECTOR_CLI_DIR / "index.js"), url, *options]
                return subprocess.run(cmd, cwd=INSPECTOR_CLI_DIR, capture_output=True, text=True, timeout=60)

            auth = ("--header", f"Authorization: Bearer {token}")
            listed = remote(*auth, "--method", "tools/list")
            assert listed.returncode == 0, listed.stderr
            assert "get-sum" in {t["name"] for t in json.loads(listed.stdout)["tools"]}
            called = remote(*auth, "--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=40", "b=2")
            assert called.returncode == 0, called.stderr
            assert json.loads(called.stdout)["content"][0]["text"] == "The sum of 40 and 2 is 42."
            refused = remote("--method", "tools/list")
            assert refused.returncode != 0 and ("401" in refused.stderr or "bearer token is required" in refused.stderr), refused
