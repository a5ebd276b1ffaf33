"""A scriptable Streamable HTTP server for the fault cases of a URL upstream:
what real servers do now and then, on demand. It runs in a thread of the
test process (standard library only), records every request it gets, and
answers `tools/call` by the tool's name:

- ``echo``: an SSE stream with a progress notification, then the answer;
- ``json``: one JSON body;
- ``expire``: the first time, forgets every session, so this call (sent
  with the old session id) gets 404 (``unknown_status``: 400, as
  server-everything answers), and the proxy must start a new session and
  retry; the retry is answered "renewed";
- ``cut``: an SSE stream with a priming event (id, retry) that ends before
  the answer; a GET with that Last-Event-ID resumes it with the answer;
- ``cut-for-good``: an SSE stream that ends before the answer, no event id;
- ``status-NNN``: that HTTP status, with a short text body (401 with a
  WWW-Authenticate challenge);
- ``rpc-error``: HTTP 400 whose body is a JSON-RPC error for the request;
- ``accepted``: 202 with no body, for a request;
- ``redirect-away``: 307 to another origin (``away``, a second fixture);
- ``big``: an SSE event of ``big_bytes`` bytes;
- anything else: ``isError`` result naming it.

``subscriptions/listen`` (2026-07-28) answers with an event stream: two
notifications at once, then, once the test sets ``listen_until``, the
answer.

A request without a session is served when it names 2026-07-28 in its
``_meta`` (that revision has no sessions).

At ``/sse`` it is a legacy HTTP+SSE (2024-11-05) server instead: a GET opens
the stream, whose first event names the message endpoint
(``legacy_endpoint``, by default ``/messages?sessionId=…``); a POST there is
answered 202 and its answer sent on the stream. Tool ``drop`` ends the
stream without answering. A POST to ``/sse`` itself gets 405.
"""

from __future__ import annotations

import json
import queue
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    method: str
    headers: dict[str, str]
    body: Any


@dataclass
class State:
    sessions: set[str] = field(default_factory=set)
    seen: list[Seen] = field(default_factory=list)
    # Events kept for resumption: event id -> message.
    resumable: dict[str, Any] = field(default_factory=dict)
    away: str = ""
    big_bytes: int = 0
    expired: bool = False
    # `subscriptions/listen` holds its stream open until this is set.
    listen_until: threading.Event = field(default_factory=threading.Event)
    # Legacy HTTP+SSE: the stream of each session, and where the endpoint
    # event points ("" for the default).
    streams: dict[str, queue.Queue] = field(default_factory=dict)
    legacy_endpoint: str = ""
    get_stream: bool = False
    get_count: int = 0
    # What a request naming a session the server does not know gets: 404
    # as the specification says, or 400 as server-everything answers.
    unknown_status: int = 404
    # This many coming `initialize`s are refused with a JSON-RPC error
    # (HTTP 200, no session id).
    refuse_initialize: int = 0
    # GET streams fail with 503 while set (an outage of the stream).
    get_down: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def posts(self, rpc_method: str | None = None) -> list[Seen]:
        with self.lock:
            return [
                s
                for s in self.seen
                if s.method == "POST" and (rpc_method is None or (s.body or {}).get("method") == rpc_method)
            ]

    def requests(self, http_method: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.method == http_method]


# What tools/list says: one tool whose parameter is mirrored into a header
# (2026-07-28 `x-mcp-header`), one whose mark breaks the rules.
TOOLS = [
    {
        "name": "marked",
        "inputSchema": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
        },
    },
    {
        "name": "broken",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}},
    },
    {"name": "json", "inputSchema": {"type": "object"}},
]


def result(rid: Any, text: str, error: bool = False) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}], "isError": error}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def record(self, body: Any) -> None:
        with self.state.lock:
            self.state.seen.append(Seen(self.command, {k.lower(): v for k, v in self.headers.items()}, body))

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_status(self, status: int, extra: dict[str, str] | None = None) -> None:
        data = f"status {status}".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def start_events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

    def event(self, message: Any = None, event_id: str | None = None, retry: int | None = None) -> None:
        out = ""
        if event_id:
            out += f"id: {event_id}\n"
        if retry is not None:
            out += f"retry: {retry}\n"
        out += f"data: {json.dumps(message) if message is not None else ''}\n\n"
        self.wfile.write(out.encode())
        self.wfile.flush()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"null")
        self.record(body)
        if self.path == "/sse":
            return self.send_status(405)
        if self.path.startswith("/messages"):
            return self.legacy_post(body)
        method, rid = body.get("method"), body.get("id")
        sid = self.headers.get("Mcp-Session-Id")
        if method == "initialize":
            with self.state.lock:
                refuse = self.state.refuse_initialize > 0
                self.state.refuse_initialize -= int(refuse)
            if refuse:
                return self.send_json(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "not now"}})
            sid = uuid.uuid4().hex
            with self.state.lock:
                self.state.sessions.add(sid)
            answer = {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": body["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "http-fixture", "version": "1"},
                },
            }
            return self.send_json(200, answer, {"Mcp-Session-Id": sid})
        meta = ((body.get("params") or {}).get("_meta") or {}) if isinstance(body, dict) else {}
        stateless = meta.get("io.modelcontextprotocol/protocolVersion") == "2026-07-28"
        with self.state.lock:
            known = sid in self.state.sessions or (sid is None and stateless)
        if not known:
            return self.send_status(self.state.unknown_status if sid else 400)
        if rid is None or method is None:  # a notification or an answer
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "subscriptions/listen":
            self.start_events()
            for n in range(2):
                self.event({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": f"file:///{n}"}})
            self.state.listen_until.wait(20)
            self.event({"jsonrpc": "2.0", "id": rid, "result": {}})
            return
        if method == "tools/list":
            return self.send_json(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        if method != "tools/call":
            return self.send_json(200, {"jsonrpc": "2.0", "id": rid, "result": {}})
        name = body["params"]["name"]
        if name == "echo":
            self.start_events()
            progress = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}}
            self.event(progress)
            self.event(result(rid, "echoed"))
        elif name == "json":
            self.send_json(200, result(rid, "plain json"))
        elif name == "expire":
            with self.state.lock:
                first, self.state.expired = not self.state.expired, True
                if first:
                    self.state.sessions.clear()
            if first:
                self.send_status(self.state.unknown_status)
            else:
                self.send_json(200, result(rid, "renewed"))
        elif name == "cut":
            event_id = uuid.uuid4().hex
            with self.state.lock:
                self.state.resumable[event_id] = result(rid, "resumed")
            self.start_events()
            self.event(None, event_id=event_id, retry=100)
        elif name == "cut-for-good":
            self.start_events()
            self.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "bye"}})
        elif name.startswith("status-"):
            status = int(name.split("-")[1])
            extra = {"WWW-Authenticate": 'Bearer realm="fixture"'} if status == 401 else None
            self.send_status(status, extra)
        elif name == "rpc-error":
            error = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "the fixture says no"}}
            self.send_json(400, error)
        elif name == "accepted":
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif name == "redirect-away":
            self.send_response(307)
            self.send_header("Location", self.state.away)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif name == "big":
            self.start_events()
            self.event(result(rid, "x" * self.state.big_bytes))
        else:
            self.send_json(200, result(rid, f"no such tool: {name}", error=True))

    def legacy_post(self, body: Any) -> None:
        sid = self.path.partition("sessionId=")[2]
        with self.state.lock:
            stream = self.state.streams.get(sid)
        if stream is None:
            return self.send_status(404)
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()
        method, rid = body.get("method"), body.get("id")
        if rid is None or method is None:
            return
        if method == "initialize":
            stream.put({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "http-fixture-legacy", "version": "1"},
            }})
        elif method == "tools/call" and body["params"]["name"] == "drop":
            stream.put(None)
        elif method == "tools/call":
            stream.put(result(rid, "legacy " + body["params"]["name"]))
        else:
            stream.put({"jsonrpc": "2.0", "id": rid, "result": {}})

    def legacy_stream(self) -> None:
        sid = uuid.uuid4().hex
        stream: queue.Queue = queue.Queue()
        with self.state.lock:
            self.state.streams[sid] = stream
        self.start_events()
        endpoint = self.state.legacy_endpoint or f"/messages?sessionId={sid}"
        self.wfile.write(f"event: endpoint\ndata: {endpoint}\n\n".encode())
        self.wfile.flush()
        while True:
            try:
                message = stream.get(timeout=0.1)
            except queue.Empty:
                continue
            if message is None:
                with self.state.lock:
                    del self.state.streams[sid]
                return
            self.wfile.write(f"event: message\ndata: {json.dumps(message)}\n\n".encode())
            self.wfile.flush()

    def do_GET(self) -> None:
        self.record(None)
        if self.path == "/sse":
            return self.legacy_stream()
        last = self.headers.get("Last-Event-ID")
        with self.state.lock:
            resumed = self.state.resumable.pop(last, None) if last else None
            get_stream = self.state.get_stream
        if resumed is not None:
            self.start_events()
            self.event(resumed, event_id=uuid.uuid4().hex)
            return
        if not get_stream:
            return self.send_status(405)
        sid = self.headers.get("Mcp-Session-Id")
        with self.state.lock:
            known, down = sid in self.state.sessions, self.state.get_down
        if down:
            return self.send_status(503)
        if not known:
            return self.send_status(self.state.unknown_status)
        # Each GET stream says one thing, with an event id and a short
        # retry, and ends: the client reopens it after the id it last saw.
        self.start_events()
        with self.state.lock:
            self.state.get_count += 1
            n = self.state.get_count
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": f"stream {n}"}}
        self.event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} if n == 1 else note, event_id=f"g{n}", retry=50)

    def do_DELETE(self) -> None:
        self.record(None)
        self.send_status(200)


class Fixture:
    """The fixture server on a free loopback port; with `tls` (a certificate
    chain file and its key file), over HTTPS."""

    def __init__(self, tls: tuple[str, str] | None = None) -> None:
        self.state = State()
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}/mcp"

    @property
    def sse_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/sse"

    def __enter__(self) -> Fixture:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
