"""Telemetry with real software: mcp-chain's OTLP/HTTP export decoded with
the official OpenTelemetry protobufs (opentelemetry-proto), Debian's
Prometheus scraping /metrics during a session and queried through its HTTP
API, W3C trace context through params._meta both ways, and nothing secret
in any span, event, metric or label.

The server is mcp-chain's fake server (its `echo` tool returns the params it
received, `_meta` included; `ask` sends the client a request); the client is
the official Python SDK, or raw JSON-RPC where a test sends its own
`traceparent`."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

import harness
from harness import REPO, Chain, open_session
from otlp_receiver import Receiver

pytestmark = pytest.mark.anyio

FAKE = REPO / "target/debug/fake-mcp-server"
SECRET_ENV = "sk-live-TELEMETRY-ENV-5c1e7"
SECRET_ARG = "AKIAIOSFODNN7EXAMPLE"  # an AWS access key id: redacted by @aws_access_key
SECRET_TOKEN = "front-token-TELEMETRY-9f3a"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"

CHAIN = """
[upstream]
command = "{fake}"
env = {{ API_KEY = "{secret}" }}

[telemetry]
otlp_endpoint = "{url}"
service_name = "interop-telemetry"
{extra}

[[middleware]]
type = "filter"
tools = {{ deny = ["crash"] }}

[[middleware]]
type = "rewrite"
[[middleware.redact]]
pattern = "@aws_access_key"

[[middleware]]
type = "approve"
tools = ["ask"]
"""


def chain_config(receiver: Receiver, extra: str = "") -> Chain:
    fd, name = tempfile.mkstemp(prefix="mcp-telemetry-", suffix=".toml")
    Path(name).write_text(CHAIN.format(fake=FAKE, secret=SECRET_ENV, url=receiver.url, extra=extra))
    return Chain("telemetry", Path(name))


def spans_named(receiver: Receiver, name: str, kind: str) -> list[dict]:
    return [s for s in receiver.snapshot() if s["name"] == name and s["kind"] == kind]


def events(span: dict, name: str) -> list[dict]:
    return [e["attributes"] for e in span["events"] if e["name"] == name]


async def elicit_allow(context, params):
    return types.ElicitResult(action="accept", content={"decision": "allow_once"})


async def roots(context):
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/telemetry", name="t")])


async def test_a_python_sdk_session_is_traced_with_the_conventions_and_the_layers_decisions():
    harness.require_proxy_binary()
    with Receiver() as receiver:
        chain = chain_config(receiver)
        argv = [str(harness.MCP_CHAIN), "--config", str(chain.config)]
        async with open_session(
            argv, chain, exact_argv=True, label="telemetry",
            elicitation_callback=elicit_allow, list_roots_callback=roots,
        ) as conn:
            echoed = await conn.session.call_tool("echo", {"text": f"key {SECRET_ARG}"})
            assert SECRET_ARG not in json.dumps(echoed.model_dump()), "the redaction did its work"
            with pytest.raises(MCPError):
                await conn.session.call_tool("crash", {})
            asked = await conn.session.call_tool("ask", {"method": "roots/list"})
            assert "file:///tmp/telemetry" in json.dumps(asked.model_dump())
            await conn.session.list_tools()
            await conn.session.get_prompt("greet", {"name": "ada"})
            await conn.session.read_resource("file:///srv/readme.txt")
        # mcp-chain flushes its spans as it exits (the session ended above).
        harness.wait_until(lambda: spans_named(receiver, "tools/call ask", "server"), timeout=10)

        assert receiver.resources[0]["service.name"] == "interop-telemetry"
        init = spans_named(receiver, "initialize", "server")[0]
        negotiated = next(m["result"]["protocolVersion"] for m in conn.incoming() if "protocolVersion" in m.get("result", {}))
        assert init["attributes"]["mcp.method.name"] == "initialize"
        assert init["attributes"]["network.transport"] == "pipe"

        # tools/call echo: a SERVER span, its CLIENT child, the conventions' attributes.
        server = spans_named(receiver, "tools/call echo", "server")[0]
        client = spans_named(receiver, "tools/call echo", "client")[0]
        assert client["parent"] == server["span_id"] and client["trace_id"] == server["trace_id"]
        attrs = server["attributes"]
        assert attrs["mcp.method.name"] == "tools/call"
        assert attrs["gen_ai.tool.name"] == "echo"
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert attrs["jsonrpc.request.id"] == str(conn.outgoing("tools/call")[0]["id"])
        assert attrs["mcp.protocol.version"] == negotiated
        assert attrs["network.transport"] == "pipe"
        assert "error.type" not in attrs and server["status"] == 0
        redacted = events(server, "mcp_chain.rewrite.redacted")
        assert redacted and redacted[0]["count"] >= 1 and redacted[0]["what"] == "answer", server["events"]

        # A prompt, a resource, a list: each names what it is about, and only that.
        prompt = spans_named(receiver, "prompts/get greet", "server")[0]["attributes"]
        assert prompt["gen_ai.prompt.name"] == "greet" and "gen_ai.tool.name" not in prompt
        resource = spans_named(receiver, "resources/read", "server")[0]["attributes"]
        assert resource["mcp.resource.uri"] == "file:///srv/readme.txt"
        assert "gen_ai.prompt.name" not in resource and "gen_ai.operation.name" not in resource
        listed = spans_named(receiver, "tools/list", "server")[0]["attributes"]
        assert not {"gen_ai.tool.name", "gen_ai.operation.name", "mcp.resource.uri"} & set(listed)
        assert listed["jsonrpc.request.id"] in {str(m["id"]) for m in conn.outgoing("tools/list")}

        # The denied call: refused by the filter, the rule named, no CLIENT span.
        denied_span = spans_named(receiver, "tools/call crash", "server")[0]
        assert events(denied_span, "mcp_chain.filter.denied")[0]["rule"] == 'tools: deny "crash"'
        assert denied_span["attributes"]["error.type"] == "-32602"
        assert denied_span["attributes"]["rpc.response.status_code"] == "-32602"
        assert denied_span["status"] == 2  # STATUS_CODE_ERROR
        assert not spans_named(receiver, "tools/call crash", "client")

        # The approved call: asked, answered; and the server's own request to
        # the client (roots/list) has its spans, on the server's side.
        ask = spans_named(receiver, "tools/call ask", "server")[0]
        assert events(ask, "mcp_chain.approve.asked")
        assert events(ask, "mcp_chain.approve.answered")[0]["decision"] == "allowed_once"
        from_server = spans_named(receiver, "roots/list", "server")[0]
        to_client = spans_named(receiver, "roots/list", "client")[0]
        assert to_client["parent"] == from_server["span_id"]


def raw_session(config: Path, stderr: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [str(harness.MCP_CHAIN), "--config", str(config)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(stderr, "w"), text=True,
    )


def rpc(proc: subprocess.Popen, message: dict) -> dict | None:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    return json.loads(proc.stdout.readline())


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
PARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"


def test_a_clients_traceparent_is_the_parent_and_the_server_gets_a_child_context():
    harness.require_proxy_binary()
    with Receiver() as receiver:
        chain = chain_config(receiver)
        proc = raw_session(chain.config, harness.new_stderr_file("telemetry-context"))
        rpc(proc, INIT)
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        meta = {"traceparent": f"00-{PARENT_TRACE}-{PARENT_SPAN}-01", "tracestate": "vendor=1", "keep": "me"}
        answer = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {}, "_meta": meta}})
        # A string id (with a quote in it): the span names the id itself.
        plain = rpc(proc, {"jsonrpc": "2.0", "id": 'call-"two"', "method": "tools/call",
                           "params": {"name": "echo", "arguments": {}}})
        proc.stdin.close()
        assert proc.wait(20) == 0
        received = answer["result"]["structuredContent"]["received"]["_meta"]
        version, trace, parent, flags = received["traceparent"].split("-")
        assert (version, trace, flags) == ("00", PARENT_TRACE, "01")
        assert received["tracestate"] == "vendor=1" and received["keep"] == "me"
        harness.wait_until(lambda: len(spans_named(receiver, "tools/call echo", "client")) == 2, timeout=10)
        server = [s for s in spans_named(receiver, "tools/call echo", "server") if s["trace_id"] == PARENT_TRACE]
        assert len(server) == 1 and server[0]["parent"] == PARENT_SPAN
        assert server[0]["attributes"]["jsonrpc.request.id"] == "1"
        other = [s for s in spans_named(receiver, "tools/call echo", "server") if s["trace_id"] != PARENT_TRACE]
        assert other[0]["attributes"]["jsonrpc.request.id"] == 'call-"two"', "not JSON-quoted"
        client = [s for s in spans_named(receiver, "tools/call echo", "client") if s["trace_id"] == PARENT_TRACE][0]
        assert client["parent"] == server[0]["span_id"]
        assert parent == client["span_id"], "the server's parent is mcp-chain's CLIENT span"
        # No traceparent from the client: a new trace, still propagated.
        fresh = plain["result"]["structuredContent"]["received"]["_meta"]["traceparent"].split("-")[1]
        assert fresh != PARENT_TRACE and fresh != "0" * 32


def test_propagate_off_leaves_meta_as_the_client_sent_it():
    harness.require_proxy_binary()
    with Receiver() as receiver:
        chain = chain_config(receiver, extra="propagate = false")
        proc = raw_session(chain.config, harness.new_stderr_file("telemetry-nopropagate"))
        rpc(proc, INIT)
        answer = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {}}})
        proc.stdin.close()
        assert proc.wait(20) == 0
        assert "_meta" not in answer["result"]["structuredContent"]["received"]


def prometheus_query(port: int, query: str) -> list:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def prometheus_ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as r:
            return r.status == 200
    except urllib.error.HTTPError as e:
        if e.code == 503:
            return False
        raise


def raw_get(port: int, path: str, host: str) -> int:
    """The status of a GET naming `host`, as a rebinding page's would."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.putrequest("GET", path, skip_host=True)
    connection.putheader("Host", host)
    connection.endheaders()
    status = connection.getresponse().status
    connection.close()
    return status


def test_prometheus_scrapes_the_counts_the_session_made(tmp_path):
    harness.require_proxy_binary()
    if not Path(PROMETHEUS).is_file():
        pytest.fail("Debian's prometheus is not installed (.ci/run installs it)")
    metrics_port = harness.free_port()
    with Receiver() as receiver:
        chain = chain_config(receiver, extra=f'metrics_listen = "127.0.0.1:{metrics_port}"')
        proc = raw_session(chain.config, harness.new_stderr_file("telemetry-prom"))
        rpc(proc, INIT)
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n in range(5):
            rpc(proc, {"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": {"name": "echo", "arguments": {"n": n}}})
        for n in range(2):
            rpc(proc, {"jsonrpc": "2.0", "id": 20 + n, "method": "tools/call", "params": {"name": "crash", "arguments": {}}})
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s}\n"
            "scrape_configs:\n"
            f"  - job_name: mcp-chain\n    static_configs: [{{targets: ['127.0.0.1:{metrics_port}']}}]\n"
        )
        prom_port = harness.free_port()
        argv = [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{prom_port}"]
        try:
            with harness.listening(argv, prom_port, "prometheus", wait_s=30):
                # The port opens before the TSDB does: the API answers 503 until /-/ready says 200.
                assert harness.wait_until(lambda: prometheus_ready(prom_port), timeout=30, interval=0.2)
                calls = 'mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="echo"}'

                def scraped():
                    result = prometheus_query(prom_port, calls)
                    return result if result and result[0]["value"][1] == "5" else None

                result = harness.wait_until(scraped, timeout=30, interval=0.5)
                assert result[0]["metric"]["network_transport"] == "pipe"
                denied = prometheus_query(prom_port, 'mcp_chain_decisions_total{layer="filter",outcome="denied"}')
                assert denied[0]["value"][1] == "2"
                errors = prometheus_query(prom_port, 'mcp_server_operation_duration_seconds_count{gen_ai_tool_name="crash",error_type="-32602"}')
                assert errors[0]["value"][1] == "2"
                # The histogram: every call in a bucket at or under +Inf, a sum of seconds.
                inf = prometheus_query(prom_port, calls.replace("_count{", '_bucket{le="+Inf",'))
                assert inf[0]["value"][1] == "5"
                total = float(prometheus_query(prom_port, calls.replace("_count", "_sum"))[0]["value"][1])
                assert 0 < total < 60
                # DNS rebinding: a page on another site reaching 127.0.0.1 sends its own Host.
                for host, status in (("attacker.example", 403), (f"attacker.example:{metrics_port}", 403),
                                     (f"localhost:{metrics_port}", 200), (f"127.0.0.1:{metrics_port}", 200)):
                    assert raw_get(metrics_port, "/metrics", host) == status, host
        finally:
            proc.stdin.close()
            proc.wait(20)


def test_nothing_secret_reaches_spans_events_metrics_or_labels():
    harness.require_proxy_binary()
    metrics_port = harness.free_port()
    front_port = harness.free_port()
    with Receiver() as receiver:
        chain = chain_config(
            receiver, extra=f'metrics_listen = "127.0.0.1:{metrics_port}"\n\n[front]\ntokens = ["{SECRET_TOKEN}"]'
        )
        argv = [str(harness.MCP_CHAIN), "--config", str(chain.config), "--listen", f"127.0.0.1:{front_port}"]
        with harness.listening(argv, front_port, "telemetry-front"):
            base = f"http://127.0.0.1:{front_port}/mcp"
            headers = {"Authorization": f"Bearer {SECRET_TOKEN}", "Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream"}

            def post(body: dict, session: str | None = None):
                h = dict(headers, **({"Mcp-Session-Id": session} if session else {}))
                req = urllib.request.Request(base, data=json.dumps(body).encode(), headers=h, method="POST")
                with urllib.request.urlopen(req, timeout=20) as r:
                    return r.headers.get("Mcp-Session-Id"), r.read().decode()

            session, _ = post(INIT)
            post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            _, text = post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"password": "hunter2-TELEMETRY", "key": SECRET_ARG}}}, session)
            assert "hunter2-TELEMETRY" in text  # the client got its answer (echo)
            scraped = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
            assert 'network_transport="tcp"' in scraped and "mcp_chain_front_sessions" in scraped
        harness.wait_until(lambda: spans_named(receiver, "tools/call echo", "server"), timeout=10)
        span = spans_named(receiver, "tools/call echo", "server")[0]
        assert span["attributes"]["network.transport"] == "tcp"
        assert span["attributes"]["mcp.session.id"] == session[:8], "the session's id is shortened"
        exported = b"".join(receiver.raw) + scraped.encode()
        for secret in (SECRET_TOKEN, SECRET_ENV, SECRET_ARG, "hunter2-TELEMETRY", session):
            assert secret.encode() not in exported, f"{secret!r} was exported"
