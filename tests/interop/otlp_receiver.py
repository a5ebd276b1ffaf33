"""An OTLP/HTTP receiver for the telemetry tests: what mcp-chain exports,
decoded with the official OpenTelemetry protobufs (opentelemetry-proto),
kept as plain dicts. Serves POST /v1/traces and /v1/metrics on loopback in
a thread; every export is answered 200 with an empty response message."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

KINDS = {Span.SPAN_KIND_SERVER: "server", Span.SPAN_KIND_CLIENT: "client", Span.SPAN_KIND_INTERNAL: "internal"}


def value_of(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value_of(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attributes(kvs) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in kvs}


class Receiver:
    """Spans and metric data points received so far."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.metrics: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(415)
                    self.end_headers()
                    return
                if self.path == "/v1/traces":
                    receiver._traces(body)
                    answer = trace_service_pb2.ExportTraceServiceResponse()
                elif self.path == "/v1/metrics":
                    receiver._metrics(body)
                    answer = metrics_service_pb2.ExportMetricsServiceResponse()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = answer.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _traces(self, body: bytes) -> None:
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            self.raw.append(body)
            for rs in request.resource_spans:
                self.resources.append(attributes(rs.resource.attributes))
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            {
                                "name": s.name,
                                "kind": KINDS.get(s.kind, str(s.kind)),
                                "trace_id": s.trace_id.hex(),
                                "span_id": s.span_id.hex(),
                                "parent": s.parent_span_id.hex(),
                                "attributes": attributes(s.attributes),
                                "events": [{"name": e.name, "attributes": attributes(e.attributes)} for e in s.events],
                                "status": s.status.code,
                                "scope": ss.scope.name,
                            }
                        )

    def _metrics(self, body: bytes) -> None:
        request = metrics_service_pb2.ExportMetricsServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            self.raw.append(body)
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        points = getattr(m, kind).data_points
                        for p in points:
                            point = {"name": m.name, "unit": m.unit, "kind": kind, "attributes": attributes(p.attributes)}
                            if kind == "histogram":
                                point["count"] = p.count
                                point["sum"] = p.sum
                            else:
                                point["value"] = p.as_int if p.WhichOneof("value") == "as_int" else p.as_double
                            self.metrics.append(point)

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.spans)
