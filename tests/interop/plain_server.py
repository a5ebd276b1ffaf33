"""The JSON-RPC loop of the plain fixture servers (corpus_server.py,
tools_server.py): a line read from stdin, the answer `answer(message)`
gives written to stdout (None: method not found). No SDK, so what they
serve reaches the proxy exactly as written."""

import json
import sys


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve(answer) -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        result = answer(message)
        if result is None:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "method not found"}})
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
