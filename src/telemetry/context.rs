//! W3C trace context in `params._meta`, as the MCP conventions carry it:
//! `traceparent` (and `tracestate`) from a peer start the parent of the
//! SERVER span; the CLIENT span's context is written into what mcp-chain
//! sends on. Read and written with OpenTelemetry's own propagator, which
//! refuses a malformed header (a new trace starts instead).

use mcp_chain_middleware::payload::Payload;
use mcp_chain_middleware::Message;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};

/// The `_meta` keys the propagator reads and writes.
const KEYS: [&str; 2] = ["traceparent", "tracestate"];

/// The context `params._meta` names, if it names a valid one.
pub(super) fn extract(message: &Message) -> Option<Context> {
    let meta = message.params()?.member("_meta").ok()??;
    let Value::Object(meta) = meta else {
        return None;
    };
    if !meta.contains_key("traceparent") {
        return None;
    }
    Some(TraceContextPropagator::new().extract(&Meta(&meta)))
}

/// Writes `context` into the message's `params._meta` (made when there is
/// none); the other members of both stay as they were. Params that are
/// not an object (JSON-RPC allows an array) are left alone.
pub(super) fn inject(context: &Context, message: &mut Message) {
    let mut fields = Fields(Map::new());
    TraceContextPropagator::new().inject_context(context, &mut fields);
    if fields.0.is_empty() {
        return;
    }
    let params = match message {
        Message::Request(r) => &mut r.params,
        Message::Notification(n) => &mut n.params,
        Message::Response(_) | Message::Error(_) => return,
    };
    let params = params.get_or_insert_with(|| Payload::from(Value::Object(Map::new())));
    let mut meta = match params.member("_meta") {
        Ok(Some(Value::Object(meta))) => meta,
        Ok(None | Some(Value::Null)) => Map::new(),
        // `_meta` is something else, or params cannot be read: sent as is.
        Ok(Some(_)) | Err(_) => return,
    };
    for key in KEYS {
        meta.remove(key);
    }
    meta.extend(fields.0);
    let _ = params.set_member("_meta", Value::Object(meta));
}

/// `_meta` as the propagator reads it.
struct Meta<'a>(&'a Map<String, Value>);

impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// What the propagator writes.
struct Fields(Map<String, Value>);

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        // An empty `tracestate` is no state: not sent.
        if !value.is_empty() {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
}
