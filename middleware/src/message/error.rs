//! Protocol errors: the `error` member of a JSON-RPC error response, and the
//! codes mcp-chain uses. docs/errors.md lists the same table.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// A JSON-RPC error code. Kept as `i64` so a server's odd code is relayed
/// as sent instead of failing to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// Invalid JSON. Answered with id `null`: the id could not be read.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// Valid JSON that is not a JSON-RPC message.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// Unknown method, or a method a filter denies (it must look missing).
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Bad params; also an unknown or hidden tool or prompt, as the SDKs answer.
    pub const INVALID_PARAMS: Self = Self(-32602);
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// The MCP SDKs' "connection closed": the server is gone.
    pub const CONNECTION_CLOSED: Self = Self(-32000);
    /// A JSON-RPC server error: what a decision needed (the state the
    /// replicas share) could not be reached (`reason` says which).
    pub const STATE_UNAVAILABLE: Self = Self(-32000);
    /// The MCP SDKs' "request timed out".
    pub const REQUEST_TIMEOUT: Self = Self(-32001);
    /// Unknown (or hidden) resource, as the specification answers it.
    pub const RESOURCE_NOT_FOUND: Self = Self(-32002);
    /// mcp-chain's own refusals sit outside -32768..-32000 (JSON-RPC) and
    /// -32020..-32099 (reserved by the 2026-07-28 revision): plain
    /// application codes, chosen to read like their HTTP namesakes.
    pub const REFUSED: Self = Self(403);
    pub const RATE_LIMITED: Self = Self(429);
    pub const UPSTREAM_UNAVAILABLE: Self = Self(503);
    /// A message that would take mcp-chain past its budget of bytes in
    /// flight (`proxy.max_bytes_in_flight`): "Insufficient Storage".
    pub const OVER_BUDGET: Self = Self(507);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` object: `code`, `message`, optional `data`, and any other
/// member the sender added (kept for fidelity).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObject {
    pub code: ErrorCode,
    pub message: String,
    pub data: Option<Value>,
    pub extra: Map<String, Value>,
}

// === impl ErrorObject ===

impl ErrorObject {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
            extra: Map::new(),
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// An error mcp-chain answers itself on behalf of `layer`: the message
    /// names mcp-chain and the layer, `data` carries `layer` and `reason`
    /// for programs (docs/architecture.md, Errors).
    pub fn refusal(code: ErrorCode, layer: &str, reason: &str, message: &str) -> Self {
        let mut data = Map::new();
        data.insert("layer".into(), layer.into());
        data.insert("reason".into(), reason.into());
        Self::new(code, format!("mcp-chain {layer}: {message}")).with_data(Value::Object(data))
    }

    pub(crate) fn from_value(value: Value) -> Option<Self> {
        let Value::Object(mut map) = value else {
            return None;
        };
        let code = map.shift_remove("code")?.as_i64()?;
        let message = match map.shift_remove("message")? {
            Value::String(s) => s,
            _ => return None,
        };
        let data = map.shift_remove("data");
        Some(Self {
            code: ErrorCode(code),
            message,
            data,
            extra: map,
        })
    }
}

/// Written as its members in order, without building a `Value`.
impl Serialize for ErrorObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = 2 + usize::from(self.data.is_some()) + self.extra.len();
        let mut map = s.serialize_map(Some(len))?;
        map.serialize_entry("code", &self.code.0)?;
        map.serialize_entry("message", &self.message)?;
        if let Some(data) = &self.data {
            map.serialize_entry("data", data)?;
        }
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
