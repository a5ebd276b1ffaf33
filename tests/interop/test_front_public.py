"""What the HTTP front answers anyone, before any check: /healthz,
/readyz (a load balancer's or a Kubernetes probe's question), and its
Server Card with the MCP Catalog that names it (the Server Card
extension's draft, schema v2). Nothing more: no upstream, no session, no
token, and the MCP endpoint itself still behind its token."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
from pathlib import Path

import harness
from test_front_isolation import post

DEMO = harness.REPO / "target/debug/mcp-chain-demo-server"
TOKEN = "public-test-token-0123456789abcdef"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def served(tmp: Path, config: str, server: list[str] | None = None):
    port = harness.free_port()
    path = tmp / "front.toml"
    path.write_text(config)
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(path), "--log-level", "info"]
    argv += ["--", *(server or [str(DEMO), harness.RUN_MARKER])]
    return port, harness.listening(argv, port, "front-public")


def get(port: int, path: str, method: str = "GET", headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, headers=headers or {})
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


def test_health_readiness_and_the_server_card_need_no_token(tmp_path: Path):
    port, listening = served(tmp_path, f'[front]\ntokens = ["{TOKEN}"]\n')
    with listening as stderr:
        assert get(port, "/healthz")[::2] == (200, "ok\n")
        status, headers, body = get(port, "/readyz")
        assert (status, body, headers["cache-control"]) == (200, "ready\n", "no-store")
        # The MCP endpoint is still behind its token.
        assert post(port, INIT)[0] == 401

        version = subprocess.run([str(harness.MCP_CHAIN), "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]
        cards = [get(port, p) for p in ("/mcp/server-card", "/server-card", "/.well-known/mcp/server-card.json")]
        for status, headers, body in cards:
            assert status == 200 and headers["content-type"] == "application/mcp-server-card+json"
            assert headers["access-control-allow-origin"] == "*" and headers["cache-control"] == "public, max-age=3600"
        card = json.loads(cards[0][2])
        assert all(json.loads(c[2]) == card for c in cards)
        # The draft's v2 schema, as it reads: required members, the name's pattern, the lengths.
        assert card["$schema"] == "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
        assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", card["name"]) and 3 <= len(card["name"]) <= 200
        assert 1 <= len(card["description"]) <= 100 and card["version"] == version
        [remote, legacy] = card["remotes"]
        assert remote["type"] == "streamable-http" and remote["url"] == f"http://127.0.0.1:{port}/mcp"
        assert "2026-07-28" in remote["supportedProtocolVersions"]
        assert remote["headers"] == [{"name": "Authorization", "description": remote["headers"][0]["description"],
                                      "isRequired": True, "isSecret": True}]
        assert legacy == {"type": "sse", "url": f"http://127.0.0.1:{port}/sse"}
        assert set(card) <= {"$schema", "name", "title", "description", "version", "remotes"}
        text = json.dumps(card)
        assert str(DEMO) not in text and "demo" not in text and TOKEN not in text, "nothing of the upstream, nor the token"

        status, headers, body = get(port, "/.well-known/mcp/catalog.json")
        catalog = json.loads(body)
        assert status == 200 and catalog["specVersion"] == "draft"
        [entry] = catalog["entries"]
        assert entry["type"] == "application/mcp-server-card+json"
        assert entry["url"] == f"http://127.0.0.1:{port}/mcp/server-card"
        assert entry["identifier"].startswith("urn:air:127.0.0.1:")

        # Only reading: anything else is 405, and other paths stay 404.
        assert get(port, "/healthz", "POST")[0] == 405
        assert get(port, "/server-card", "DELETE")[0] == 405
        assert get(port, "/healthzz")[0] == 404
        # What a served session answers with agrees with the card.
        status, hdrs, text = post(port, INIT, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200
        assert "ERROR" not in stderr.read_text()


def test_not_ready_at_max_sessions_nor_when_the_shared_pool_has_no_server(tmp_path: Path):
    port, listening = served(tmp_path, "[front]\nmax_sessions = 1\n")
    with listening:
        assert get(port, "/readyz")[0] == 200
        assert post(port, INIT)[0] == 200
        status, _, body = get(port, "/readyz")
        assert (status, body) == (503, "not ready\n")
        assert get(port, "/healthz")[0] == 200, "alive all the same"

    shared = '[front]\nupstream_sessions = "shared"\nshared_pool = 1\n'
    port, listening = served(tmp_path, shared, [str(tmp_path / "no-such-server")])
    with listening:
        assert get(port, "/readyz")[0] == 503
        assert get(port, "/healthz")[0] == 200
    port, listening = served(tmp_path, shared)
    with listening:
        assert harness.wait_until(lambda: get(port, "/readyz")[0] == 200, 20), "the pool's server came up"
