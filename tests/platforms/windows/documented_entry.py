"""docs/claude-desktop.md's Windows entry, launched under Wine as Claude
Desktop on Windows would launch it (make check-platforms).

The doc's second ```json block is the Windows `mcpServers` entry, its
```toml block the config it names. Run as written but for:

- the example home `C:\\Users\\me` becomes the Wine prefix's profile
  (`C:\\users\\<user>`);
- `command` becomes the mcp-chain.exe under test;
- `-- <demo server>` is appended to the args: the config's npx server needs
  a Windows node, which this Wine has not; the command after `--` replaces
  [upstream], as the doc says.

The session must see the filter (only reading tools), and the audit log
must appear in the state directory, %LOCALAPPDATA%\\mcp-chain.

Usage: documented_entry.py WINE PREFIX MCP_CHAIN_EXE DEMO_EXE
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

wine, prefix, exe, demo = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
repo = Path(__file__).resolve().parents[3]
doc = (repo / "docs/claude-desktop.md").read_text()
blocks = re.findall(r"^```json\n(.*?)^```", doc, re.S | re.M)
assert len(blocks) >= 2, "docs/claude-desktop.md: no second ```json block (the Windows entry)"
(name, entry), = json.loads(blocks[1])["mcpServers"].items()
toml = re.search(r"^```toml\n(.*?)^```", doc, re.S | re.M).group(1)
assert entry["command"].endswith("mcp-chain.exe"), entry["command"]

profiles = prefix / "drive_c/users"
user = next(p.name for p in profiles.iterdir() if (p / "AppData/Local").is_dir())
home_win = f"C:\\users\\{user}"
home = profiles / user


def local(value: str) -> str:
    return value.replace("C:\\Users\\me", home_win)


def unix_path(windows_path: str) -> Path:
    drive, rest = windows_path.split(":\\", 1)
    assert drive.upper() == "C", windows_path
    return prefix / "drive_c" / Path(*rest.split("\\"))


args = [local(a) for a in entry["args"]]
env = {k: local(v) for k, v in entry.get("env", {}).items()}
config = unix_path(args[args.index("--config") + 1])
config.parent.mkdir(parents=True, exist_ok=True)
config.write_text(toml)
unix_path(env["DOCUMENTS_DIR"]).mkdir(parents=True, exist_ok=True)

lines = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "claude-desktop-like", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
     "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
]
run_env = {k: v for k, v in os.environ.items() if k != "MCP_CHAIN_STATE_DIR"}
run = subprocess.run(
    [wine, exe, *args, "--", demo],
    input="".join(json.dumps(m) + "\n" for m in lines),
    capture_output=True, text=True, timeout=180, env={**run_env, **env},
)
assert run.returncode == 0, f"entry {name!r} exited {run.returncode}: {run.stderr[-2000:]}"
answers = {m["id"]: m for m in map(json.loads, run.stdout.splitlines())}
tools = {t["name"] for t in answers[2]["result"]["tools"]}
assert tools and all(re.match(r"(read_|list_)", t) for t in tools), tools
assert answers[3]["error"]["code"] == -32602, answers[3]
audit = home / "AppData/Local/mcp-chain/documents-audit.jsonl"
assert audit.is_file(), f"no audit log at {audit}"
assert len(audit.read_text().splitlines()) >= 2, audit.read_text()
print(f"windows: the documented entry {name!r} ran: tools {sorted(tools)}, audit at {audit}")
