//! The JSON-RPC 2.0 envelope mcp-chain relays.
//!
//! Only the envelope is modelled: `params` and `result` are [`Payload`]s,
//! `error` an [`ErrorObject`], and every member the model does not name is
//! kept in `extra`, in the sender's order, so a message no layer changed
//! leaves with everything it came with (`_meta`, fields from newer
//! revisions).
//!
//! A line is parsed once, by serde_json ([`Incoming::parse`]); `params` and
//! `result` stay the text serde_json found for them until a layer reads
//! them, from that text, with serde_json again. Of duplicate keys the last
//! counts, everywhere, as in servers: what a layer judges is what the peer
//! reads.

mod error;
mod id;
pub mod meta;
pub mod method;
mod parse;
mod write;

use crate::payload::Payload;
pub use error::{ErrorCode, ErrorObject};
pub use id::RequestId;
pub use parse::response_id;

use serde_json::{Map, Value};

/// One JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
    Error(ErrorResponse),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Option<Payload>,
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Payload>,
    pub extra: Map<String, Value>,
}

/// A success response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: RequestId,
    pub result: Payload,
    pub extra: Map<String, Value>,
}

/// An error response. `id` is `None` (written as `null`) when the request's
/// id could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    pub id: Option<RequestId>,
    /// Boxed: error answers are rare, and every message carries the size
    /// of the largest kind.
    pub error: Box<ErrorObject>,
    pub extra: Map<String, Value>,
}

/// Valid JSON that is not a JSON-RPC message; answered with -32600.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid JSON-RPC message: {reason}")]
pub struct Invalid {
    /// The id, when one could be read, so the error can be matched.
    pub id: Option<RequestId>,
    pub reason: &'static str,
}

/// What one line of input holds.
#[derive(Debug)]
pub enum Incoming {
    Single(Result<Message, Invalid>),
    /// A JSON-RPC batch (allowed by the 2025-03-26 revision). Each element is
    /// judged on its own, as JSON-RPC asks.
    Batch(Vec<Result<Message, Invalid>>),
}

// === impl Message ===

impl Message {
    /// Classifies a JSON value as a message, as [`Incoming::parse`] does a
    /// line holding it.
    pub fn from_value(value: Value) -> Result<Self, Invalid> {
        let Value::Object(map) = value else {
            return Err(parse::not_an_object());
        };
        let mut fields = parse::Fields::default();
        for (name, value) in map {
            fields.set(&name, value);
        }
        fields.into_message()
    }

    pub fn request(id: impl Into<RequestId>, method: &str, params: Option<Value>) -> Self {
        Self::Request(Request {
            id: id.into(),
            method: method.to_owned(),
            params: params.map(Payload::from),
            extra: Map::new(),
        })
    }

    pub fn notification(method: &str, params: Option<Value>) -> Self {
        Self::Notification(Notification {
            method: method.to_owned(),
            params: params.map(Payload::from),
            extra: Map::new(),
        })
    }

    pub fn response(id: RequestId, result: Value) -> Self {
        Self::Response(Response {
            id,
            result: Payload::from(result),
            extra: Map::new(),
        })
    }

    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self::Error(ErrorResponse {
            id,
            error: Box::new(error),
            extra: Map::new(),
        })
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request(r) => Some(&r.method),
            Self::Notification(n) => Some(&n.method),
            Self::Response(_) | Self::Error(_) => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Request(r) => Some(&r.id),
            Self::Response(r) => Some(&r.id),
            Self::Error(e) => e.id.as_ref(),
            Self::Notification(_) => None,
        }
    }

    /// Whether this is the answer (a response or an error) to the request
    /// `id`.
    pub fn answers(&self, id: &RequestId) -> bool {
        match self {
            Self::Response(r) => r.id == *id,
            Self::Error(e) => e.id.as_ref() == Some(id),
            Self::Request(_) | Self::Notification(_) => false,
        }
    }

    /// `params` of a request or notification.
    pub fn params(&self) -> Option<&Payload> {
        match self {
            Self::Request(r) => r.params.as_ref(),
            Self::Notification(n) => n.params.as_ref(),
            Self::Response(_) | Self::Error(_) => None,
        }
    }

    /// `params` of a request or notification, to be changed.
    pub fn params_mut(&mut self) -> Option<&mut Payload> {
        match self {
            Self::Request(r) => r.params.as_mut(),
            Self::Notification(n) => n.params.as_mut(),
            Self::Response(_) | Self::Error(_) => None,
        }
    }

    /// Sets the id of a request or an answer (what a proxy that renames
    /// ids does); a notification has none.
    pub fn set_id(&mut self, id: RequestId) {
        match self {
            Self::Request(r) => r.id = id,
            Self::Response(r) => r.id = id,
            Self::Error(e) => e.id = Some(id),
            Self::Notification(_) => {}
        }
    }

    /// `params` or `result`: the payload a message carries, if any.
    fn payload(&self) -> Option<&Payload> {
        match self {
            Self::Request(r) => r.params.as_ref(),
            Self::Notification(n) => n.params.as_ref(),
            Self::Response(r) => Some(&r.result),
            Self::Error(_) => None,
        }
    }

    fn into_payload(self) -> Option<Payload> {
        match self {
            Self::Request(r) => r.params,
            Self::Notification(n) => n.params,
            Self::Response(r) => Some(r.result),
            Self::Error(_) => None,
        }
    }

    /// A word for logs and audit lines.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Request(_) => "request",
            Self::Notification(_) => "notification",
            Self::Response(_) => "response",
            Self::Error(_) => "error",
        }
    }

    /// The message as a `Value` (for logs and tests; layers read payloads
    /// through [`Payload`]).
    pub fn to_value(&self) -> Value {
        let mut line = Vec::new();
        self.write_json(&mut line, false);
        crate::json::value::parse(&line).unwrap_or_else(|e| {
            // A payload serde_json passed as text but cannot read whole
            // (a number beyond an f64): shown as text.
            Value::String(format!(
                "unreadable message ({e}): {}",
                String::from_utf8_lossy(&line)
            ))
        })
    }
}

#[cfg(test)]
mod tests;
