//! The spans and durations of a session's operations, made by a service at
//! each end of each chain (OpenTelemetry semantic conventions for MCP,
//! development status, as of semantic-conventions v1.39.0):
//!
//! ```text
//! client ─▶ [SERVER span ─▶ layers ─▶ CLIENT span] ─▶ server
//! client ◀─ [CLIENT span ◀─ layers ◀─ SERVER span] ◀─ server   (sampling, roots, elicitation)
//! ```
//!
//! A SERVER span covers a request (or notification) from a peer until its
//! answer is ready; the layers work inside it, so their decisions are its
//! events. A CLIENT span covers what mcp-chain sends on, until the other
//! peer answers; its context goes out in `params._meta` when propagation
//! is on. Every span is a `tracing` span at [`SPAN_TARGET`], which only
//! the OpenTelemetry layer (and a log level that asks for it) sees.

use super::context;
use super::instruments::{Instruments, MAX_LABEL_CHARS};
use super::{active, Active, SPAN_TARGET};
use crate::chain::ChainService;
use mcp_chain_middleware::message::{meta, method};
use mcp_chain_middleware::shown::shown;
use mcp_chain_middleware::target::Target;
use mcp_chain_middleware::{BoxError, Envelope, Message, ResponseFuture};
use opentelemetry::KeyValue;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;
use tower::Service;
use tracing::field::Empty;
use tracing::{Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The longest text (a method, a name, a URI) a span attribute keeps.
const MAX_ATTRIBUTE_CHARS: usize = 256;

/// What the spans of one session share: how its peers are reached, its id,
/// the protocol revision it settled on.
struct Meta {
    /// `network.transport` of the client (`pipe`: stdio; `tcp`: the front).
    client: &'static str,
    /// `network.transport` of the server (`pipe`: a child; `tcp`: a URL).
    server: &'static str,
    /// The front session's id, its first 8 hex digits (never all of it:
    /// the whole id is what a client needs to use the session).
    id: Option<String>,
    version: OnceLock<String>,
}

/// One session's telemetry; its duration is recorded when it is dropped.
pub(crate) struct Session {
    meta: Arc<Meta>,
    started: Instant,
}

/// Which end of a chain.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A peer's request or notification, received.
    Server,
    /// What mcp-chain sends on to the other peer.
    Client,
}

/// Which peer a chain end faces.
#[derive(Clone, Copy)]
pub(crate) enum Facing {
    Client,
    Server,
}

impl Session {
    /// A session's telemetry, or `None` when telemetry is off.
    pub(crate) fn open(
        client: &'static str,
        server: &'static str,
        id: Option<&str>,
    ) -> Option<Self> {
        let active = active()?;
        if let Some(instruments) = &active.instruments {
            if client == "tcp" {
                instruments.front_sessions.add(1, &[]);
            }
        }
        Some(Self {
            meta: Arc::new(Meta {
                client,
                server,
                id: id.map(str::to_owned),
                version: OnceLock::new(),
            }),
            started: Instant::now(),
        })
    }

    /// `chain` (what a peer's messages go down) inside SERVER spans.
    pub(crate) fn received(&self, from: Facing, chain: ChainService) -> ChainService {
        self.traced(Kind::Server, from, chain)
    }

    /// `connector` (what sends to a peer) inside CLIENT spans.
    pub(crate) fn sent(&self, to: Facing, connector: ChainService) -> ChainService {
        self.traced(Kind::Client, to, connector)
    }

    fn traced(&self, kind: Kind, facing: Facing, inner: ChainService) -> ChainService {
        let transport = match facing {
            Facing::Client => self.meta.client,
            Facing::Server => self.meta.server,
        };
        ChainService::new(Traced {
            inner,
            kind,
            transport,
            meta: self.meta.clone(),
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let Some(instruments) = active().and_then(|a| a.instruments.as_ref()) else {
            return;
        };
        let mut labels = vec![KeyValue::new("network.transport", self.meta.client)];
        if let Some(version) = self.meta.version.get() {
            labels.push(KeyValue::new("mcp.protocol.version", version.clone()));
        }
        let took = self.started.elapsed().as_secs_f64();
        instruments.session_duration.record(took, &labels);
        if self.meta.client == "tcp" {
            instruments.front_sessions.add(-1, &[]);
        }
    }
}

/// The service at one end of a chain.
#[derive(Clone)]
struct Traced {
    inner: ChainService,
    kind: Kind,
    transport: &'static str,
    meta: Arc<Meta>,
}

impl Service<Envelope> for Traced {
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut env: Envelope) -> ResponseFuture {
        let (Some(active), Some(method)) = (active(), env.message.method()) else {
            return self.inner.call(env);
        };
        let operation = Operation::of(&env.message, method, &self.meta);
        let span = match active.spans {
            true => self.span(&operation),
            false => Span::none(),
        };
        if active.spans {
            match self.kind {
                Kind::Server => {
                    if let Some(parent) = context::extract(&env.message) {
                        let _ = span.set_parent(parent);
                    }
                }
                Kind::Client if active.propagate => {
                    context::inject(&span.context(), &mut env.message)
                }
                Kind::Client => {}
            }
        }
        let watch = Watch::new(
            self.kind,
            operation,
            self.transport,
            self.meta.clone(),
            active,
        );
        let answer = span.in_scope(|| self.inner.call(env));
        Box::pin(
            async move {
                let answer = answer.await;
                watch.done(&answer);
                answer
            }
            .instrument(span),
        )
    }
}

impl Traced {
    fn span(&self, op: &Operation) -> Span {
        let kind = match self.kind {
            Kind::Server => "server",
            Kind::Client => "client",
        };
        let name = match &op.name {
            Some(name) => format!("{} {name}", op.method),
            None => op.method.clone(),
        };
        let span = tracing::info_span!(
            target: SPAN_TARGET,
            "mcp",
            otel.name = name,
            otel.kind = kind,
            otel.status_code = Empty,
            "mcp.method.name" = op.method,
            "mcp.protocol.version" = Empty,
            "mcp.session.id" = Empty,
            "mcp.resource.uri" = Empty,
            "jsonrpc.request.id" = Empty,
            "jsonrpc.protocol.version" = "2.0",
            "gen_ai.tool.name" = Empty,
            "gen_ai.prompt.name" = Empty,
            "gen_ai.operation.name" = Empty,
            "network.transport" = self.transport,
            "error.type" = Empty,
            "rpc.response.status_code" = Empty,
        );
        if let Some(id) = &op.id {
            span.record("jsonrpc.request.id", id.as_str());
        }
        if let Some(version) = op
            .version
            .as_deref()
            .or_else(|| self.meta.version.get().map(String::as_str))
        {
            span.record("mcp.protocol.version", version);
        }
        if let Some(session) = &self.meta.id {
            span.record("mcp.session.id", session.as_str());
        }
        match &op.target {
            Some(Named::Tool(name)) => {
                span.record("gen_ai.tool.name", name.as_str());
                span.record("gen_ai.operation.name", "execute_tool");
            }
            Some(Named::Prompt(name)) => {
                span.record("gen_ai.prompt.name", name.as_str());
            }
            Some(Named::Resource(uri)) => {
                span.record("mcp.resource.uri", uri.as_str());
            }
            None => {}
        }
        span
    }
}

/// What a span and a measurement say about a message, read once.
struct Operation {
    /// As sent, shown safely and cut: the span's.
    method: String,
    /// MCP's method, or `_OTHER`: the label's.
    label: &'static str,
    is_request: bool,
    id: Option<String>,
    target: Option<Named>,
    /// The tool or prompt of a span's name.
    name: Option<String>,
    /// `io.modelcontextprotocol/protocolVersion` of a 2026-07-28 request.
    version: Option<String>,
}

enum Named {
    Tool(String),
    Prompt(String),
    Resource(String),
}

impl Operation {
    fn of(message: &Message, method: &str, session: &Meta) -> Self {
        let target = match Target::of(method, message.params()) {
            Ok(Some(Target::Tool(name))) => Some(Named::Tool(cut(&name))),
            Ok(Some(Target::Prompt(name))) if method == method::PROMPTS_GET => {
                Some(Named::Prompt(cut(&name)))
            }
            Ok(Some(Target::Resource(uri))) => Some(Named::Resource(cut(&uri))),
            _ => None,
        };
        let name = match &target {
            Some(Named::Tool(name) | Named::Prompt(name)) => Some(name.clone()),
            _ => None,
        };
        let version = match session.version.get() {
            Some(_) => None,
            None => revision_of(message),
        };
        Self {
            method: cut(method),
            label: known(method),
            is_request: matches!(message, Message::Request(_)),
            id: message.id().map(|id| cut(&id.to_string())),
            target,
            name,
            version,
        }
    }
}

/// The revision a 2026-07-28 request names in its `_meta`.
fn revision_of(message: &Message) -> Option<String> {
    let meta = message.params()?.member("_meta").ok()??;
    meta.get(meta::PROTOCOL_VERSION)?.as_str().map(cut)
}

/// `text` safe to show and no longer than an attribute keeps.
fn cut(text: &str) -> String {
    shown(text, MAX_ATTRIBUTE_CHARS)
}

/// `method` when it is one of MCP's, `_OTHER` otherwise: what a label may
/// say, whatever a peer sends.
fn known(method: &str) -> &'static str {
    const METHODS: [&str; 34] = [
        method::INITIALIZE,
        method::PING,
        method::SERVER_DISCOVER,
        method::SUBSCRIPTIONS_LISTEN,
        method::TOOLS_LIST,
        method::TOOLS_CALL,
        method::RESOURCES_LIST,
        method::RESOURCES_TEMPLATES_LIST,
        method::RESOURCES_READ,
        method::RESOURCES_SUBSCRIBE,
        method::RESOURCES_UNSUBSCRIBE,
        method::PROMPTS_LIST,
        method::PROMPTS_GET,
        method::COMPLETION_COMPLETE,
        method::LOGGING_SET_LEVEL,
        method::SAMPLING_CREATE_MESSAGE,
        method::ROOTS_LIST,
        method::ELICITATION_CREATE,
        method::NOTIFICATION_INITIALIZED,
        method::NOTIFICATION_CANCELLED,
        method::NOTIFICATION_PROGRESS,
        method::NOTIFICATION_MESSAGE,
        method::NOTIFICATION_TOOLS_LIST_CHANGED,
        method::NOTIFICATION_RESOURCES_LIST_CHANGED,
        method::NOTIFICATION_PROMPTS_LIST_CHANGED,
        method::NOTIFICATION_RESOURCES_UPDATED,
        method::TASKS_RESULT,
        method::TASKS_GET,
        method::TASKS_UPDATE,
        method::NOTIFICATION_TASKS,
        "tasks/list",
        "tasks/cancel",
        "notifications/roots/list_changed",
        "notifications/elicitation/complete",
    ];
    METHODS
        .into_iter()
        .find(|m| *m == method)
        .unwrap_or("_OTHER")
}

/// One operation being measured: its duration when it ends, a request in
/// flight until then (also when its future is dropped unanswered).
struct Watch {
    kind: Kind,
    op: Operation,
    transport: &'static str,
    meta: Arc<Meta>,
    started: Instant,
    instruments: Option<&'static Instruments>,
}

impl Watch {
    fn new(
        kind: Kind,
        op: Operation,
        transport: &'static str,
        meta: Arc<Meta>,
        active: &'static Active,
    ) -> Self {
        let instruments = active.instruments.as_ref();
        if let Some(instruments) = instruments.filter(|_| kind == Kind::Server && op.is_request) {
            instruments.in_flight.add(1, &[]);
        }
        Self {
            kind,
            op,
            transport,
            meta,
            started: Instant::now(),
            instruments,
        }
    }

    /// The answer is in (or the operation failed): the span's outcome,
    /// the duration.
    fn done(&self, answer: &Result<Option<Message>, BoxError>) {
        let error = error_of(&self.op, answer);
        if self.op.label == method::INITIALIZE {
            if let Ok(Some(Message::Response(response))) = answer {
                if let Ok(Some(version)) = response.result.str_member("protocolVersion") {
                    let _ = self.meta.version.set(cut(&version));
                }
            }
        }
        let span = Span::current();
        if let Some((kind, code)) = &error {
            span.record("error.type", kind.as_str());
            if let Some(code) = code {
                span.record("rpc.response.status_code", code.as_str());
            }
            span.record("otel.status_code", "error");
        }
        let Some(instruments) = self.instruments else {
            return;
        };
        let mut labels = Vec::with_capacity(6);
        labels.push(KeyValue::new("mcp.method.name", self.op.label));
        labels.push(KeyValue::new("network.transport", self.transport));
        match &self.op.target {
            Some(Named::Tool(name)) => labels.push(KeyValue::new("gen_ai.tool.name", label(name))),
            Some(Named::Prompt(name)) => {
                labels.push(KeyValue::new("gen_ai.prompt.name", label(name)))
            }
            _ => {}
        }
        let version = self
            .op
            .version
            .clone()
            .or_else(|| self.meta.version.get().cloned());
        if let Some(version) = version {
            labels.push(KeyValue::new("mcp.protocol.version", version));
        }
        if let Some((kind, code)) = error {
            labels.push(KeyValue::new("error.type", kind));
            if let Some(code) = code {
                labels.push(KeyValue::new("rpc.response.status_code", code));
            }
        }
        let took = self.started.elapsed().as_secs_f64();
        match self.kind {
            Kind::Server => instruments.server_duration.record(took, &labels),
            Kind::Client => instruments.client_duration.record(took, &labels),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(instruments) = self
            .instruments
            .filter(|_| self.kind == Kind::Server && self.op.is_request)
        {
            instruments.in_flight.add(-1, &[]);
        }
    }
}

/// A name as a label keeps it.
fn label(name: &str) -> String {
    name.chars().take(MAX_LABEL_CHARS).collect()
}

/// `error.type` and the JSON-RPC error code of an outcome, if it failed:
/// an error answer (its code), a tool's own error (`tool_error`), a
/// request left unanswered (`cancelled`), a peer gone (`_OTHER`).
fn error_of(
    op: &Operation,
    answer: &Result<Option<Message>, BoxError>,
) -> Option<(String, Option<String>)> {
    match answer {
        Ok(Some(Message::Error(e))) => {
            let code = e.error.code.0.to_string();
            Some((code.clone(), Some(code)))
        }
        Ok(Some(Message::Response(response))) if op.label == method::TOOLS_CALL => {
            match response.result.member("isError") {
                Ok(Some(serde_json::Value::Bool(true))) => Some(("tool_error".to_owned(), None)),
                _ => None,
            }
        }
        Ok(None) if op.is_request => Some(("cancelled".to_owned(), None)),
        Err(_) => Some(("_OTHER".to_owned(), None)),
        _ => None,
    }
}
