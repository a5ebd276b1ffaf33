"""A stdio MCP server holding many tools, for test_search.py: every line
of a JSONL file of {"server", "tool"} served as `SERVER__NAME` (the way a
gateway names them), or only the first N. A call answers with the name
and arguments it got; `fixture__add_tool` adds a tool and says the list
changed. Plain JSON-RPC over stdin/stdout: the tools reach the proxy as
the file holds them.

    python tools_server.py FILE [N] [marker]
"""

import json
import sys

from plain_server import send, serve

PATH = sys.argv[1]
LIMIT = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else None
TOOLS = []
for line in open(PATH, encoding="utf-8"):
    entry = json.loads(line)
    TOOLS.append(dict(entry["tool"], name=f"{entry['server']}__{entry['tool']['name']}"))
TOOLS = TOOLS[:LIMIT]
TOOLS.append({"name": "fixture__add_tool", "description": "Adds a tool to this fixture's list.",
              "inputSchema": {"type": "object", "properties": {"name": {"type": "string"},
                                                                "description": {"type": "string"}}}})


def answer(message: dict):
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "many-tools", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "fixture__add_tool":
            TOOLS.append({"name": arguments["name"], "description": arguments["description"],
                          "inputSchema": {"type": "object"}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return {"content": [{"type": "text", "text": json.dumps({"called": name, "arguments": arguments})}]}
    if method == "ping":
        return {}
    return None


serve(answer)
