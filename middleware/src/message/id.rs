//! Request ids: a number or a string, echoed back exactly as the peer wrote it.

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use std::fmt;

/// A JSON-RPC request id. MCP forbids `null`; numbers keep their
/// `serde_json::Number` form so `9007199254740991` or `-0` come back as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(Number),
    String(String),
}

// === impl RequestId ===

impl RequestId {
    /// The id from a JSON value, or `None` for anything that is not a
    /// number or a string (null, bool, object, array).
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => Some(Self::Number(n.clone())),
            Value::String(s) => Some(Self::String(s.clone())),
            _ => None,
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::Number(n.clone()),
            Self::String(s) => Value::String(s.clone()),
        }
    }

    /// The id as an unsigned integer, when it is one: connectors number
    /// their own requests with `u64`s.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Self::Number(n) => n.as_u64(),
            Self::String(_) => None,
        }
    }
}

impl From<u64> for RequestId {
    fn from(n: u64) -> Self {
        Self::Number(n.into())
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}
