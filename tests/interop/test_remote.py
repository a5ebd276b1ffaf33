"""A URL upstream's fault cases, against the scriptable fixture server in
http_fixture.py: what mcp-chain sends (headers, session, order) and what the
client gets when the server misbehaves. The client here is a plain pipe of
JSON lines (as `printf … | mcp-chain -- URL | jq` is), every read bounded.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any

import pytest

import harness
from http_fixture import Fixture

READ_TIMEOUT_S = 20
SECRET = "s3cr3t-t0ken-never-logged"


class Proxy:
    """mcp-chain in front of `url`, spoken to line by line."""

    def __init__(self, url: str, *args: str) -> None:
        harness.require_proxy_binary()
        if harness.DIRECT:
            pytest.skip("MCP_CHAIN_DIRECT=1: these cases test the proxy's own HTTP client")
        self.stderr = harness.new_stderr_file("mcp-chain[remote]")
        self.proc = subprocess.Popen(
            [str(harness.MCP_CHAIN), "--log-level", "debug", *args, "--", url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self.stderr, "w"),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=READ_TIMEOUT_S))
        except queue.Empty:
            raise AssertionError(f"no message from mcp-chain within {READ_TIMEOUT_S}s") from None

    def answer(self, rid: Any) -> dict[str, Any]:
        """Reads until the answer to `rid`; what came before it is kept in `before`."""
        self.before: list[dict[str, Any]] = []
        while True:
            message = self.read()
            if message.get("id") == rid and "method" not in message:
                return message
            self.before.append(message)

    def initialize(self) -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}},
            }
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self.answer("init")

    def call(self, rid: Any, name: str) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": {}}})
        return self.answer(rid)

    def call_once_back(self, first_id: int, name: str) -> dict[str, Any]:
        """Calls `name` until the server is back after a lost connection:
        503 while mcp-chain reconnects, then the server's answer (bounded)."""
        for rid in range(first_id, first_id + 50):
            answer = self.call(rid, name)
            if "result" in answer:
                return answer
            assert answer["error"]["code"] == 503, answer  # while reconnecting
            time.sleep(0.1)
        raise AssertionError(f"{name} still refused after 50 tries")

    def close(self) -> str:
        """Ends the session as a client does; returns mcp-chain's stderr."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=READ_TIMEOUT_S) == 0, self.stderr.read_text()
        return self.stderr.read_text()


@pytest.fixture
def fixture():
    with Fixture() as f:
        yield f


def text(answer: dict[str, Any]) -> str:
    return answer["result"]["content"][0]["text"]


def test_session_headers_order_and_end(fixture: Fixture):
    proxy = Proxy(fixture.url, "--header", f"Authorization: Bearer {SECRET}")
    init = proxy.initialize()
    assert init["result"]["serverInfo"]["name"] == "http-fixture"
    answer = proxy.call(1, "echo")
    assert text(answer) == "echoed"
    assert [m.get("method") for m in proxy.before] == ["notifications/message"], "the stream's notification comes first"
    assert text(proxy.call(2, "json")) == "plain json"
    log = proxy.close()

    posts = fixture.state.posts()
    assert [p.body.get("method") for p in posts] == ["initialize", "notifications/initialized", "tools/call", "tools/call"]
    session = posts[0]
    assert [p.headers.get("mcp-name") for p in posts[2:]] == ["echo", "json"]
    for post in posts:
        assert post.headers["authorization"] == f"Bearer {SECRET}"
        assert "application/json" in post.headers["accept"] and "text/event-stream" in post.headers["accept"]
        assert post.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in session.headers
    sid = {p.headers.get("mcp-session-id") for p in posts[1:]}
    assert len(sid) == 1 and None not in sid, "every request after initialize carries the session"
    assert {p.headers.get("mcp-protocol-version") for p in posts[1:]} == {"2025-11-25"}
    # The GET stream was asked for (405 here) before initialized was sent.
    order = [s.method + ":" + str((s.body or {}).get("method")) for s in fixture.state.seen]
    assert order.index("GET:None") < order.index("POST:notifications/initialized"), order
    deletes = fixture.state.requests("DELETE")
    assert len(deletes) == 1 and deletes[0].headers["mcp-session-id"] in sid
    assert SECRET not in log, "a header value was logged"


def test_routing_headers_say_what_the_body_says_after_the_chain(fixture: Fixture, tmp_path):
    """A 2026-07-28 client: no handshake, no session, no GET stream; every
    POST carries Mcp-Method, Mcp-Name (the server's name for the tool, after
    the rewrite took the prefix off) and the protocol version the request
    names."""
    config = tmp_path / "prefix.toml"
    config.write_text('[[middleware]]\ntype = "rewrite"\ntool_prefix = "fx_"\n')
    proxy = Proxy(fixture.url, "--config", str(config))
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    proxy.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
    assert proxy.answer(1)["result"] == {}
    call = {"name": "fx_json", "arguments": {}, "_meta": meta}
    proxy.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    assert text(proxy.answer(2)) == "plain json"
    proxy.close()
    discover, posted = fixture.state.posts()
    assert discover.headers["mcp-method"] == "server/discover"
    assert "mcp-name" not in discover.headers
    assert posted.body["params"]["name"] == "json"
    assert posted.headers["mcp-method"] == "tools/call"
    assert posted.headers["mcp-name"] == "json"
    for post in (discover, posted):
        assert post.headers["mcp-protocol-version"] == "2026-07-28"
        assert "mcp-session-id" not in post.headers
    assert fixture.state.requests("GET") == [] and fixture.state.requests("DELETE") == []


def test_marked_parameters_are_mirrored_into_headers(fixture: Fixture):
    """A tool whose schema marks a parameter with x-mcp-header gets it as an
    Mcp-Param-* header on each call; a tool whose mark breaks the revision's
    rules is left out of the listing."""
    proxy = Proxy(fixture.url)
    proxy.initialize()
    proxy.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert [t["name"] for t in proxy.answer(1)["result"]["tools"]] == ["marked", "json"]
    proxy.send(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "marked", "arguments": {"region": "Zürich", "query": "q"}}}
    )
    proxy.answer(2)
    log = proxy.close()
    call = fixture.state.posts("tools/call")[-1]
    assert call.headers["mcp-param-region"] == "=?base64?WsO8cmljaA==?="
    assert not any(h.startswith("mcp-param-") and h != "mcp-param-region" for h in call.headers)
    assert "broken" in log and "x-mcp-header" in log


def test_a_listen_streams_events_as_they_come(fixture: Fixture):
    """subscriptions/listen's answer is a stream held open: its events reach
    the client while it is, not when it ends."""
    proxy = Proxy(fixture.url)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    proxy.send({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"_meta": meta}})
    updated = [proxy.read(), proxy.read()]
    assert [m["params"]["uri"] for m in updated] == ["file:///0", "file:///1"]
    assert not fixture.state.listen_until.is_set(), "the stream is still open"
    fixture.state.listen_until.set()
    assert proxy.answer(1)["result"] == {}
    proxy.close()


def test_expired_session_is_renewed_with_the_clients_handshake(fixture: Fixture):
    proxy = Proxy(fixture.url)
    proxy.initialize()
    assert harness.wait_until(lambda: fixture.state.posts("notifications/initialized"), READ_TIMEOUT_S)
    old = fixture.state.posts("notifications/initialized")[0].headers["mcp-session-id"]
    assert text(proxy.call(1, "expire")) == "renewed"
    inits = fixture.state.posts("initialize")
    assert len(inits) == 2, "the handshake was replayed once"
    assert inits[1].body["params"] == inits[0].body["params"]
    assert inits[1].body["id"] != "init", "the replay uses mcp-chain's own id"
    assert len(fixture.state.posts("notifications/initialized")) == 2
    # The retry went in the new session, and the client saw no replay.
    calls = fixture.state.posts("tools/call")
    assert [c.headers["mcp-session-id"] == old for c in calls] == [True, False]
    assert proxy.before == []
    assert text(proxy.call(2, "json")) == "plain json"
    proxy.close()


def test_a_stream_cut_short_is_resumed_from_its_last_event(fixture: Fixture):
    proxy = Proxy(fixture.url)
    proxy.initialize()
    assert text(proxy.call(1, "cut")) == "resumed"
    resumes = [g for g in fixture.state.requests("GET") if "last-event-id" in g.headers]
    assert len(resumes) == 1
    proxy.close()


@pytest.mark.parametrize(
    "tool, reason, status",
    [
        ("cut-for-good", "stream_ended", None),
        ("status-500", "server_error", 500),
        ("status-401", "unauthorized", 401),
        ("status-403", "forbidden", 403),
        ("accepted", "no_answer", None),
        ("redirect-away", "redirect", None),
    ],
)
def test_a_failure_answers_its_request_and_the_session_goes_on(fixture: Fixture, tool: str, reason: str, status: int | None):
    with Fixture() as away:
        fixture.state.away = away.url
        proxy = Proxy(fixture.url, "--header", f"Authorization: Bearer {SECRET}")
        proxy.initialize()
        answer = proxy.call(1, tool)
        error = answer["error"]
        assert error["code"] == -32000, error
        assert error["message"].startswith("mcp-chain: "), error
        assert error["data"]["layer"] == "upstream" and error["data"]["reason"] == reason, error
        assert error["data"].get("status") == status, error
        assert text(proxy.call(2, "json")) == "plain json"
        log = proxy.close()
        assert away.state.seen == [], "nothing, credentials least of all, went to another origin"
    if status == 401:
        assert 'realm="fixture"' in log, "the server's challenge is logged"
    assert SECRET not in log


def test_a_json_rpc_error_is_an_answer_whatever_its_status(fixture: Fixture):
    proxy = Proxy(fixture.url)
    proxy.initialize()
    answer = proxy.call(1, "rpc-error")
    assert answer["error"] == {"code": -32602, "message": "the fixture says no"}
    proxy.close()


def test_an_event_over_the_cap_is_dropped_not_buffered(fixture: Fixture):
    fixture.state.big_bytes = 200_000
    proxy = Proxy(fixture.url, "--max-message-bytes", "65536")
    proxy.initialize()
    answer = proxy.call(1, "big")
    assert answer["error"]["code"] == -32603, answer
    assert "over the limit of 65536 bytes" in answer["error"]["message"]
    assert text(proxy.call(2, "json")) == "plain json"
    proxy.close()


def test_the_servers_own_stream_is_relayed_and_reopened_after_its_last_event(fixture: Fixture):
    fixture.state.get_stream = True
    proxy = Proxy(fixture.url)
    proxy.initialize()
    seen = proxy.read()
    assert seen == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    # The stream ended; reopened after the server's retry, from its last id.
    again = proxy.read()
    assert again["params"]["data"] == "stream 2", again
    proxy.close()
    gets = [g.headers.get("last-event-id") for g in fixture.state.requests("GET")]
    assert gets[:2] == [None, "g1"], gets


def test_an_unreachable_server_fails_each_request_and_nothing_hangs():
    port = harness.free_port()
    proxy = Proxy(f"http://127.0.0.1:{port}/mcp")
    init = proxy.initialize()
    assert init["error"]["data"] == {"layer": "upstream", "reason": "connect"}, init
    assert f"127.0.0.1:{port}" in init["error"]["message"]
    proxy.close()


# === legacy HTTP+SSE ===


def test_auto_falls_back_to_legacy_sse_and_keeps_order(fixture: Fixture):
    proxy = Proxy(fixture.sse_url, "--header", f"Authorization: Bearer {SECRET}")
    init = proxy.initialize()
    assert init["result"]["serverInfo"]["name"] == "http-fixture-legacy"
    for n in range(1, 6):
        proxy.send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": f"t{n}", "arguments": {}}})
    assert [text(proxy.answer(n)) for n in range(1, 6)] == [f"legacy t{n}" for n in range(1, 6)]
    log = proxy.close()
    posts = fixture.state.posts()
    # The probe (a POST to the SSE URL: 405), then every message to the
    # endpoint, in the order sent, with the configured header.
    assert posts[0].body["method"] == "initialize" and posts[0].headers.get("mcp-session-id") is None
    to_endpoint = [p.body.get("method") or "answer" for p in posts[1:]]
    assert to_endpoint == ["initialize", "notifications/initialized"] + ["tools/call"] * 5
    assert [p.body["params"]["name"] for p in posts[3:]] == [f"t{n}" for n in range(1, 6)]
    assert all(p.headers["authorization"] == f"Bearer {SECRET}" for p in posts)
    assert "legacy HTTP+SSE" in log and SECRET not in log


def test_a_lost_legacy_stream_fails_what_was_in_flight_and_reconnects(fixture: Fixture):
    proxy = Proxy(fixture.sse_url)
    proxy.initialize()
    lost = proxy.call(1, "drop")
    assert lost["error"]["code"] == -32000, lost
    # Reconnected, with the client's handshake replayed: the next call works.
    assert text(proxy.call_once_back(2, "after")) == "legacy after"
    inits = fixture.state.posts("initialize")
    assert len(inits) == 3, "the probe, the client's, the replay"
    assert inits[2].body["params"] == inits[1].body["params"]
    assert inits[2].body["id"] != "init"
    assert len(fixture.state.requests("GET")) == 2
    assert all(m.get("id") != inits[2].body["id"] for m in proxy.before)
    proxy.close()


def test_a_legacy_endpoint_on_another_origin_is_refused(fixture: Fixture):
    with Fixture() as away:
        fixture.state.legacy_endpoint = away.url.replace("/mcp", "/messages?sessionId=x")
        proxy = Proxy(fixture.sse_url, "--header", f"Authorization: Bearer {SECRET}")
        init = proxy.initialize()
        assert init["error"]["data"]["reason"] == "endpoint", init
        assert "another origin" in init["error"]["message"]
        proxy.close()
        assert away.state.seen == []


# === a 2026-07-28 server on the official Python SDK ===


STATELESS_SERVER = harness.INTEROP / "stateless_server.py"


def test_a_stateless_server_takes_the_routing_headers_after_a_rename(tmp_path):
    """The Python SDK's 2026-07-28 server refuses (-32020, HTTP 400) a request
    whose Mcp-Name differs from the body's name: through a prefixing rewrite,
    the header must name the tool the server has, not the one the client
    called."""
    port = harness.free_port()
    python = str(harness.REPO / ".venv/bin/python")
    with harness.listening([python, str(STATELESS_SERVER), str(port)], port, "stateless-server", wait_s=30):
        config = tmp_path / "prefix.toml"
        config.write_text('[[middleware]]\ntype = "rewrite"\ntool_prefix = "py_"\n')
        proxy = Proxy(f"http://127.0.0.1:{port}/mcp", "--config", str(config))
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "pipe", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        proxy.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
        assert "2026-07-28" in proxy.answer(1)["result"]["supportedVersions"]
        proxy.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}})
        assert [t["name"] for t in proxy.answer(2)["result"]["tools"]] == ["py_add"]
        call = {"name": "py_add", "arguments": {"a": 2, "b": 3}, "_meta": meta}
        proxy.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        answer = proxy.answer(3)
        assert answer["result"]["structuredContent"] == {"result": 5}, answer
        proxy.close()


# === TLS ===


def _certificates(directory) -> tuple[str, str, str]:
    """A private CA and a certificate it signed for 127.0.0.1: (ca file,
    server chain file, server key file)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    valid = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=1))

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("mcp-chain test CA"))
        .issuer_name(name("mcp-chain test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = (directory / "ca.pem", directory / "server.pem", directory / "server.key")
    paths[0].write_bytes(ca.public_bytes(pem))
    paths[1].write_bytes(cert.public_bytes(pem))
    paths[2].write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return tuple(str(p) for p in paths)


def test_tls_is_verified_and_a_private_ca_can_be_trusted(tmp_path):
    ca, chain, key = _certificates(tmp_path)
    with Fixture(tls=(chain, key)) as server:
        # The platform does not know the private CA: refused.
        proxy = Proxy(server.url)
        init = proxy.initialize()
        assert init["error"]["data"] == {"layer": "upstream", "reason": "connect"}, init
        assert "certificate" in init["error"]["message"].lower(), init
        proxy.close()
        assert server.state.seen == [], "nothing was sent over an unverified connection"
        # With ca_file, the same server is trusted.
        config = tmp_path / "ca.toml"
        config.write_text(f'[upstream]\nurl = "{server.url}"\nca_file = "{ca}"\n')
        proxy = Proxy(server.url, "--config", str(config))
        assert proxy.initialize()["result"]["serverInfo"]["name"] == "http-fixture"
        assert text(proxy.call(1, "json")) == "plain json"
        proxy.close()


def test_a_server_that_answers_an_unknown_session_with_400_is_renewed(fixture: Fixture):
    """server-everything, restarted, answers a session it does not know with
    400, not 404: a 400 that is no JSON-RPC answer renews the session once."""
    fixture.state.unknown_status = 400
    proxy = Proxy(fixture.url)
    proxy.initialize()
    assert text(proxy.call(1, "expire")) == "renewed"
    assert len(fixture.state.posts("initialize")) == 2
    # A JSON-RPC error with status 400 is still an answer, not a renewal.
    assert proxy.call(2, "rpc-error")["error"]["message"] == "the fixture says no"
    assert len(fixture.state.posts("initialize")) == 2
    assert text(proxy.call(3, "json")) == "plain json"
    proxy.close()


def test_a_refused_replay_keeps_the_old_session_and_the_next_request_renews(fixture: Fixture):
    proxy = Proxy(fixture.url)
    proxy.initialize()
    assert harness.wait_until(lambda: fixture.state.posts("notifications/initialized"), READ_TIMEOUT_S)
    with fixture.state.lock:
        fixture.state.sessions.clear()
        fixture.state.refuse_initialize = 1
    refused = proxy.call(1, "json")
    assert "refused the replayed initialize" in refused["error"]["message"], refused
    # Not "no session" from now on: the next request meets the 404 again
    # and starts a fresh handshake, which the server takes.
    assert text(proxy.call(2, "json")) == "plain json"
    assert all("mcp-session-id" in c.headers for c in fixture.state.posts("tools/call"))
    proxy.close()


def test_a_renewed_session_gets_its_event_stream_back_after_a_long_outage(fixture: Fixture):
    fixture.state.get_stream = True
    proxy = Proxy(fixture.url)
    proxy.initialize()
    assert proxy.read()["method"] == "notifications/tools/list_changed"
    with fixture.state.lock:
        fixture.state.get_down = True
    # Long enough for mcp-chain to give the stream up (five failures).
    stderr = proxy.stderr
    assert harness.wait_until(lambda: "giving up the server's event stream" in stderr.read_text(), 40, 0.2)
    with fixture.state.lock:
        fixture.state.get_down = False
        fixture.state.sessions.clear()  # the server restarted meanwhile
    assert text(proxy.call(1, "json")) == "plain json"
    assert len(fixture.state.posts("initialize")) == 2, "renewed once"
    # The renewed session's stream: its events reach the client again.
    message = proxy.read()
    assert message.get("method") in ("notifications/message", "notifications/tools/list_changed"), message
    proxy.close()


def test_server_everything_restarted_is_reached_again():
    port = harness.free_port()
    argv = [harness.NODE, str(harness.EVERYTHING), "streamableHttp"]
    env = {"PORT": str(port)}
    with harness.listening(argv, port, "server-everything[1]", env=env):
        proxy = Proxy(f"http://127.0.0.1:{port}/mcp")
        proxy.initialize()
        proxy.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "one"}}})
        assert "one" in proxy.answer(1)["result"]["content"][0]["text"]
    with harness.listening(argv, port, "server-everything[2]", env=env):
        proxy.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "two"}}})
        answer = proxy.answer(2)
        assert "two" in answer["result"]["content"][0]["text"], answer
        proxy.close()
