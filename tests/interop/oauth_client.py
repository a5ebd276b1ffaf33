"""A client command for the conformance suite's authorization scenarios
(`conformance client --command "python oauth_client.py" …`): mcp-chain
over stdio in front of the suite's server URL (the last argument), logging
in with the headless hook (open_url.py). It initializes, lists the tools
and calls the first one through mcp-chain, and exits 0 when each got a
result. What the suite gives for a scenario (MCP_CONFORMANCE_CONTEXT: a
pre-registered client, client credentials) goes into [upstream.oauth];
`basic-cimd` names a Client ID Metadata Document, as a user would."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CIMD = "https://conformance-test.local/client-metadata.json"


def config_for(url: str, scenario: str, context: dict) -> str:
    lines = ["[upstream]", f"url = {json.dumps(url)}", "[upstream.oauth]", 'login_timeout = "20s"']
    if context.get("client_id"):
        lines.append(f"client_id = {json.dumps(context['client_id'])}")
    if context.get("client_secret"):
        lines.append(f"client_secret = {json.dumps(context['client_secret'])}")
    if scenario.startswith("auth/client-credentials"):
        lines.append('grant = "client_credentials"')
    if scenario == "auth/basic-cimd":
        lines.append(f"client_id = {json.dumps(CIMD)}")
    return "\n".join(lines) + "\n"


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    binary = os.environ.get("MCP_CHAIN_BIN", str(ROOT / "target" / "debug" / "mcp-chain"))
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "c.toml"
        config.write_text(config_for(url, scenario, context))
        env = dict(os.environ)
        env["MCP_CHAIN_STATE_DIR"] = str(Path(tmp) / "state")
        env["MCP_CHAIN_OPEN_URL"] = f"{sys.executable} {HERE / 'open_url.py'}"
        proc = subprocess.Popen(
            [binary, "--config", str(config), "--log-level", "info"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
        )
        ok = True

        def ask(id_, method, params):
            nonlocal ok
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                ok = False
                return None
            answer = json.loads(line)
            if "error" in answer:
                print(f"oauth_client: {method}: {answer['error']}", file=sys.stderr)
                ok = False
                return None
            return answer["result"]

        init = ask(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "oauth-client", "version": "1"}})
        if init is not None:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
            proc.stdin.flush()
            tools = ask(2, "tools/list", {})
            if tools and tools.get("tools"):
                ask(3, "tools/call", {"name": tools["tools"][0]["name"], "arguments": {}})
        proc.stdin.close()
        proc.wait(timeout=30)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
