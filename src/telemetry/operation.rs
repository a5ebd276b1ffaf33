//! What telemetry reads of one operation (a request or notification at
//! one end of a chain), once: its method as a span shows it and as a label
//! may say it, its target, its id, its revision; and the [`Watch`] that
//! measures it and records its outcome when the answer comes.

use super::instruments::{Instruments, MAX_LABEL_CHARS};
use super::spans::{Kind, Meta};
use super::Active;
use mcp_chain_middleware::message::{meta, method};
use mcp_chain_middleware::shown::shown;
use mcp_chain_middleware::target::Target;
use mcp_chain_middleware::{BoxError, Message, RequestId};
use opentelemetry::KeyValue;
use std::sync::Arc;
use std::time::Instant;
use tracing::Span;

/// The longest text (a method, a name, a URI) a span attribute keeps.
const MAX_ATTRIBUTE_CHARS: usize = 256;

/// What a span and a measurement say about a message, read once.
pub(super) struct Operation {
    /// As sent, shown safely and cut: the span's.
    pub(super) method: String,
    /// MCP's method, or `_OTHER`: the label's.
    label: &'static str,
    is_request: bool,
    pub(super) id: Option<String>,
    pub(super) target: Option<Named>,
    /// The tool or prompt of a span's name.
    pub(super) name: Option<String>,
    /// `io.modelcontextprotocol/protocolVersion` of a 2026-07-28 request.
    pub(super) version: Option<String>,
}

pub(super) enum Named {
    Tool(String),
    Prompt(String),
    Resource(String),
}

impl Operation {
    pub(super) fn of(message: &Message, method: &str, session: &Meta) -> Self {
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
            id: message.id().map(|id| match id {
                // The id itself, as the conventions want: not JSON-quoted.
                RequestId::String(text) => cut(text),
                RequestId::Number(n) => n.to_string(),
            }),
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
pub(super) struct Watch {
    kind: Kind,
    op: Operation,
    transport: &'static str,
    meta: Arc<Meta>,
    started: Instant,
    instruments: Option<&'static Instruments>,
}

impl Watch {
    pub(super) fn new(
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
    pub(super) fn done(&self, answer: &Result<Option<Message>, BoxError>) {
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
