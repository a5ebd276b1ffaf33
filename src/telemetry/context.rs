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

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use serde_json::json;

    fn context() -> Context {
        let span = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").expect("trace id"),
            SpanId::from_hex("00f067aa0ba902b7").expect("span id"),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        Context::new().with_remote_span_context(span)
    }

    fn params(message: &Message) -> serde_json::Value {
        message
            .params()
            .expect("params")
            .to_value()
            .expect("readable")
    }

    #[test]
    fn injected_context_replaces_traceparent_and_keeps_the_rest() {
        let mut message = Message::request(
            1,
            "tools/call",
            Some(
                json!({"name": "t", "_meta": {"traceparent": "00-forged-01", "progressToken": 7}}),
            ),
        );
        inject(&context(), &mut message);
        let meta = &params(&message)["_meta"];
        assert_eq!(
            meta["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(meta["progressToken"], 7);
        assert!(
            meta.get("tracestate").is_none(),
            "an empty tracestate is not sent"
        );
        assert_eq!(params(&message)["name"], "t");
    }

    #[test]
    fn a_request_without_params_gets_them_and_array_params_are_left_alone() {
        let mut bare = Message::request(1, "tools/list", None);
        inject(&context(), &mut bare);
        assert!(params(&bare)["_meta"]["traceparent"].is_string());
        let mut positional = Message::request(2, "x", Some(json!([1, 2])));
        inject(&context(), &mut positional);
        assert_eq!(params(&positional), json!([1, 2]));
    }

    #[test]
    fn only_a_valid_traceparent_is_a_parent() {
        let valid = Message::request(
            1,
            "ping",
            Some(
                json!({"_meta": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}),
            ),
        );
        let parent = extract(&valid).expect("a context");
        assert!(parent.span().span_context().is_valid());
        for bad in [json!("00-zz-00f067aa0ba902b7-01"), json!(7), json!("")] {
            let message = Message::request(1, "ping", Some(json!({"_meta": {"traceparent": bad}})));
            let found = extract(&message).map(|c| c.span().span_context().is_valid());
            assert_ne!(found, Some(true), "{message:?}");
        }
        assert!(extract(&Message::request(1, "ping", None)).is_none());
    }
}
