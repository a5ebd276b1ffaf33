"""The HTTP front as a hostile client of it would try it: one client must not
name, cancel, read, end or slow down another's requests or sessions.

- 2026-07-28 requests share a small pool of server sessions; a client's
  `notifications/cancelled` reaches the server only for its own request,
  renamed; one client that stops reading its answer's stream never stalls
  the pool; requests spread over the pool.
- A 2025-era session belongs to the token that opened it: with another
  token, its id is a session that does not exist (404), for POST, GET,
  DELETE and legacy /messages alike.

The server is the fake server, which says which process answered (`env`)
and sleeps or floods on demand."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import tempfile
import threading
import time
from pathlib import Path

import harness

FAKE = harness.REPO / "target/debug/fake-mcp-server"
VICTIM = "victim-token-0123456789abcdef"
ATTACKER = "attacker-token-0123456789abcd"
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN}


@contextlib.contextmanager
def served(config: str = "", *extra: str):
    port = harness.free_port()
    path = Path(tempfile.mkdtemp()) / "front.toml"
    path.write_text(config)
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(path), "--log-level", "info", *extra]
    argv += ["--", str(FAKE), "--label", harness.RUN_MARKER]
    with harness.listening(argv, port, "mcp-chain --listen") as stderr:
        yield port, stderr


TOKENS = f"""
[front]
tokens = [{{ name = "victim", token = "{VICTIM}" }}, {{ name = "attacker", token = "{ATTACKER}" }}]
"""


def post(port: int, body, headers: dict | None = None, timeout: float = 20, path: str = "/mcp"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    hdrs.update(headers or {})
    conn.request("POST", path, body=json.dumps(body).encode(), headers=hdrs)
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, text


def request(method: str, port: int, headers: dict, path: str = "/mcp"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request(method, path, headers=headers)
    resp = conn.getresponse()
    status = resp.status
    conn.close()
    return status


def modern_call(id_, tool: str, arguments: dict, token: str | None = None, progress=None):
    meta = dict(META)
    if progress is not None:
        meta["progressToken"] = progress
    body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": meta}}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return body, headers


def messages(text: str) -> list[dict]:
    if text.startswith("{"):
        return [json.loads(text)]
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def answer(text: str) -> dict:
    found = [m for m in messages(text) if "result" in m or "error" in m]
    assert len(found) == 1, text
    return found[0]


def test_a_2026_client_cannot_cancel_another_clients_request():
    with served(TOKENS) as (port, _):
        got: dict = {}

        def victim():
            body, headers = modern_call(7, "delay", {"ms": 1500}, VICTIM)
            got["status"], _, got["text"] = post(port, body, headers)

        thread = threading.Thread(target=victim)
        thread.start()
        time.sleep(0.4)
        # Every id the front could have given it, and the victim's own id,
        # each more than once, so that each reaches every pool session.
        names = ([f"mcp-chain-{n}" for n in range(31)] + [7, "7"]) * 3
        for name in names:
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": name, "_meta": META}}
            headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "notifications/cancelled", "Authorization": f"Bearer {ATTACKER}"}
            status, _, _ = post(port, cancel, headers)
            assert status == 202
        thread.join(20)
        assert got.get("status") == 200, got
        result = answer(got["text"])
        assert result["id"] == 7 and result["result"]["content"][0]["text"] == "slept 1500 ms", result


def test_a_2026_client_cancels_its_own_request_and_its_post_ends():
    with served(TOKENS) as (port, _):
        got: dict = {}

        def victim():
            body, headers = modern_call(9, "delay", {"ms": 30000}, VICTIM)
            started = time.monotonic()
            got["status"], _, got["text"] = post(port, body, headers, timeout=25)
            got["took"] = time.monotonic() - started

        thread = threading.Thread(target=victim)
        thread.start()
        time.sleep(0.4)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "_meta": META}}
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "notifications/cancelled", "Authorization": f"Bearer {VICTIM}"}
        assert post(port, cancel, headers)[0] == 202
        thread.join(25)
        # Ended without the server's answer, long before the delay was over.
        assert "took" in got and got["took"] < 20, got
        assert "slept" not in got["text"], got


def test_a_2026_client_that_stops_reading_does_not_stall_the_pool():
    """A client asks for a flood of progress on an event stream and never
    reads it; every other client's calls, on either pool session, are still
    answered."""
    with served() as (port, _):
        body, headers = modern_call(1, "notify", {"count": 200000}, progress="p")
        raw = json.dumps(body).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        stalled = socket.create_connection(("127.0.0.1", port))
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.sendall(
            (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: text/event-stream\r\n{head}Content-Length: {len(raw)}\r\n\r\n"
            ).encode()
            + raw
        )
        try:
            time.sleep(3)  # the flood fills every buffer between it and the client
            for n in range(6):
                body, headers = modern_call(100 + n, "echo", {"n": n})
                status, _, text = post(port, body, headers, timeout=10)
                assert status == 200 and answer(text)["id"] == 100 + n, text
        finally:
            stalled.close()


def test_2026_requests_spread_over_the_pool():
    with served() as (port, _):
        pids = []
        for n in range(8):
            body, headers = modern_call(n, "env", {"names": []})
            status, _, text = post(port, body, headers)
            assert status == 200, text
            pids.append(answer(text)["result"]["structuredContent"]["pid"])
        # Two servers, and once both are started, calls still take turns.
        assert len(set(pids)) == 2, pids
        assert all(a != b for a, b in zip(pids[2:], pids[3:])), pids


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def test_a_session_belongs_to_the_token_that_opened_it():
    with served(TOKENS + "legacy_sse = true\n") as (port, _):
        mine = {"Authorization": f"Bearer {VICTIM}"}
        theirs = {"Authorization": f"Bearer {ATTACKER}"}
        status, hdrs, _ = post(port, INIT, mine)
        assert status == 200
        session = hdrs["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}
        # Another token holder who knows the id: no such session, whatever it tries.
        assert post(port, call, {**theirs, "Mcp-Session-Id": session})[0] == 404
        stream = {**theirs, "Mcp-Session-Id": session, "Accept": "text/event-stream"}
        assert request("GET", port, stream) == 404
        assert request("DELETE", port, {**theirs, "Mcp-Session-Id": session}) == 404
        # The opener's session is untouched.
        assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**mine, "Mcp-Session-Id": session})[0] == 202
        status, _, text = post(port, call, {**mine, "Mcp-Session-Id": session})
        assert status == 200 and answer(text)["id"] == 2, text
        assert request("DELETE", port, {**mine, "Mcp-Session-Id": session}) == 200


def test_a_legacy_session_belongs_to_the_token_that_opened_it():
    with served(TOKENS + "legacy_sse = true\n") as (port, _):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/sse", headers={"Authorization": f"Bearer {VICTIM}", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        assert resp.status == 200
        endpoint = ""
        while not endpoint.startswith("data: "):
            endpoint = resp.fp.readline().decode().strip()
        path = endpoint[len("data: ") :]
        theirs = {"Authorization": f"Bearer {ATTACKER}"}
        assert post(port, INIT, theirs, path=path)[0] == 404
        assert post(port, INIT, {"Authorization": f"Bearer {VICTIM}"}, path=path)[0] == 202
        conn.close()


def raw_exchange(port: int, request: bytes, wait: float = 10) -> bytes:
    """Sends `request` as it is on its own connection; the first bytes of
    the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(request)
        return s.recv(4096)


def test_ambiguous_authorities_are_refused():
    with served() as (port, _):
        body = json.dumps(INIT).encode()

        def post_with(head: str) -> bytes:
            request = f"{head}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            return raw_exchange(port, request.encode() + body)

        for head, expected in [
            (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example", 400),
            (f"POST /mcp HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1:{port}", 400),
            (f"POST http://evil.example/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}", 400),
            ("POST /mcp HTTP/1.1\r\nHost: [::1]junk", 400),
            (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://[::1]junk", 403),
        ]:
            answer = raw_exchange_status(post_with(head))
            assert answer == expected, (head, answer)
        assert raw_exchange_status(post_with(f"POST http://127.0.0.1:{port}/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}")) == 200


def raw_exchange_status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def test_a_trickled_body_is_cut_off():
    with served('[front]\nbody_timeout = "1s"\n') as (port, _):
        with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
            s.sendall(
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{{".encode()
            )
            started = time.monotonic()
            answer = b""
            with contextlib.suppress(OSError):
                for _ in range(10):
                    s.sendall(b" ")
                    time.sleep(0.3)
                    s.setblocking(False)
                    with contextlib.suppress(BlockingIOError):
                        answer += s.recv(4096)
                    s.setblocking(True)
                    if answer:
                        break
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert time.monotonic() - started < 10


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_server_that_cannot_start_is_an_error_at_once_and_nothing_is_kept():
    port = harness.free_port()
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--", "/nonexistent/mcp-server", harness.RUN_MARKER]
    with harness.listening(argv, port, "mcp-chain --listen") as stderr:
        status, _, text = post(port, INIT, timeout=10)
        error = answer(text)
        assert error["id"] == 1 and error["error"]["code"] == -32000, (status, text)
        # The legacy stream: its endpoint, then its end (not silence).
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/sse", headers={"Accept": "text/event-stream"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert b"endpoint" in resp.read()  # returns once the stream ends
        conn.close()
        pid = next(p for p in harness.processes_with(harness.RUN_MARKER, include_proxy=True) if "--listen" in Path(f"/proc/{p}/cmdline").read_text())
        for _ in range(100):
            post(port, INIT, timeout=10)
        before = rss_kib(pid)
        for _ in range(1000):
            assert answer(post(port, INIT, timeout=10)[2])["error"]["code"] == -32000
        grown = rss_kib(pid) - before
        assert grown < 1024, f"{grown} KiB kept over 1,000 attempts"
        assert "cannot start the server" in stderr.read_text()


def test_a_session_with_a_call_in_flight_is_not_idle():
    """Idle time counts from the last request or answer; a session whose
    server is slow to start is not reaped under its initialize."""
    # init_timeout is not what is tested: long, so a slow machine's gap
    # between initialize and initialized never reaps the session.
    with served('[front]\nsession_idle = "2s"\ninit_timeout = "60s"\n') as (port, _):
        status, hdrs, _ = post(port, INIT)
        session = {"Mcp-Session-Id": hdrs["mcp-session-id"]}
        assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "delay", "arguments": {"ms": 3000}}}
        status, _, text = post(port, call, session)
        assert status == 200 and answer(text)["result"]["content"][0]["text"] == "slept 3000 ms", text
        time.sleep(0.8)
        status, _, text = post(port, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
        assert status == 200 and answer(text)["result"] == {}, (status, text)


def test_a_session_is_never_handed_out_already_ended():
    port = harness.free_port()
    config = Path(tempfile.mkdtemp()) / "front.toml"
    config.write_text('[front]\ninit_timeout = "1s"\n')
    slow = f"sleep 2; exec {FAKE} --label {harness.RUN_MARKER}"
    argv = [str(harness.MCP_CHAIN), "--listen", f"127.0.0.1:{port}", "--config", str(config), "--", "sh", "-c", slow]
    with harness.listening(argv, port, "mcp-chain --listen"):
        status, hdrs, text = post(port, INIT)
        assert status == 200 and "result" in answer(text), text
        session = {"Mcp-Session-Id": hdrs["mcp-session-id"]}
        assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
        status, _, text = post(port, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, session)
        assert status == 200 and answer(text)["result"] == {}, (status, text)


def test_a_chatty_server_with_no_reader_is_one_warning_per_burst():
    with served() as (port, stderr):
        status, hdrs, _ = post(port, INIT)
        session = {"Mcp-Session-Id": hdrs["mcp-session-id"], "Accept": "application/json"}
        assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "notify", "arguments": {"count": 5000, "method": "notifications/message"}}}
        status, _, text = post(port, call, session)
        assert status == 200 and answer(text)["id"] == 2, text
        # The session goes on; its end says the rest.
        assert request("DELETE", port, {"Mcp-Session-Id": hdrs["mcp-session-id"]}) == 200
        assert harness.wait_until(lambda: "session ended session=" in stderr.read_text(), 10, 0.1)
        warnings = [line for line in stderr.read_text().splitlines() if "backlog was full" in line]
        assert 1 <= len(warnings) <= 2, warnings
        dropped = sum(int(re.search(r"dropped=(\d+)", line).group(1)) for line in warnings)
        assert dropped == 5000 - 1024, warnings


def test_bodies_share_one_budget_of_bytes_in_flight():
    """Three clients each send most of a 900 KiB body and hold it; the
    process's budget (2 MiB) has room for two: the third is refused at
    once with a clear error, the two others finish normally, and once they
    are done a new big body is taken again."""
    config = "[proxy]\nmax_message_bytes = 1048576\nmax_bytes_in_flight = 2097152\n"
    with served(config) as (port, _):
        status, hdrs, _ = post(port, INIT)
        session = hdrs["mcp-session-id"]
        big = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"pad": "x" * (900 * 1024)}}}
        raw = json.dumps(big).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json\r\nMcp-Session-Id: {session}\r\nContent-Length: {len(raw)}\r\n\r\n"
        ).encode()
        held = []
        for _ in range(2):
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            s.sendall(head + raw[:-10])
            held.append(s)
        time.sleep(0.5)
        third = socket.create_connection(("127.0.0.1", port), timeout=20)
        third.sendall(head + raw[:-10])
        refused = third.recv(4096)
        assert refused.startswith(b"HTTP/1.1 503"), refused
        assert b"max_bytes_in_flight" in refused and b"507" in refused, refused
        third.close()
        for s in held:
            s.sendall(raw[-10:])
            reply = b""
            while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < 100:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
            s.close()
        status, _, text = post(port, big, {"Mcp-Session-Id": session, "Accept": "application/json"})
        assert status == 200 and answer(text)["id"] == 7, text[:200]


def test_a_session_its_client_uses_is_not_ended_for_a_lost_initialized():
    """A client that pipelines its first lines may send
    notifications/initialized before it knows the session's id (and lose
    it); the session's next request ends its handshake just as well."""
    # The listing must come within init_timeout of the initialize: 3 s
    # leaves a slow machine room for one request.
    with served('[front]\ninit_timeout = "3s"\n') as (port, stderr):
        status, hdrs, _ = post(port, INIT)
        session = {"Mcp-Session-Id": hdrs["mcp-session-id"]}
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        assert post(port, listing, session)[0] == 200
        time.sleep(4)  # past init_timeout
        status, _, text = post(port, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session)
        assert status == 200 and answer(text)["result"] == {}, (status, text)
        assert "never finished the handshake" not in stderr.read_text()
