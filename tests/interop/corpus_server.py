"""A stdio MCP server serving scan's corpus (tests/corpus/scan) for
test_scan_corpus.py: every tool of descriptions.jsonl, its name made
unique by its line number, or one tool, `read_doc`, returning the text of
results.jsonl's line `n`. Plain JSON-RPC over stdin/stdout, so the tools
reach the proxy exactly as the corpus holds them (an SDK server would
rebuild their schemas).

    python corpus_server.py descriptions|results FILE [marker]
"""

import json
import sys

from plain_server import serve

MODE, PATH = sys.argv[1], sys.argv[2]
ITEMS = [json.loads(line) for line in open(PATH, encoding="utf-8")]


def served_name(n: int, item: dict) -> str:
    return f"{item['tool']['name']}__{n}"


def tools() -> list:
    if MODE == "results":
        return [{"name": "read_doc", "description": "Returns a stored document.",
                 "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]
    return [dict(item["tool"], name=served_name(n, item)) for n, item in enumerate(ITEMS)]


def answer(message: dict):
    method = message.get("method")
    if method == "initialize":
        return {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "scan-corpus", "version": "1"}}
    if method == "tools/list":
        return {"tools": tools()}
    if method == "tools/call":
        n = message["params"]["arguments"]["n"]
        return {"content": [{"type": "text", "text": ITEMS[n]["text"]}]}
    if method == "ping":
        return {}
    return None


serve(answer)
