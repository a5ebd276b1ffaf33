//! The client's handshake, as the server last saw it, kept so a restarted
//! server can be brought to the same state (`initialize`, then
//! `notifications/initialized`) without the client noticing.

use mcp_chain_middleware::message::Payload;
use serde_json::Value;

#[derive(Debug, Clone, Default)]
pub(crate) struct Handshake {
    /// `params` of the client's `initialize`, after every layer.
    pub(crate) initialize: Option<Payload>,
    /// The server's answer to it (its capabilities say which
    /// `list_changed` notifications it can send).
    pub(crate) result: Option<Value>,
    /// Whether the client sent `notifications/initialized`.
    pub(crate) initialized: bool,
}

impl Handshake {
    /// Whether the server declared a capability (`tools`, `prompts`,
    /// `resources`) in its answer to `initialize`.
    pub(crate) fn declares(result: &Value, capability: &str) -> bool {
        result
            .get("capabilities")
            .and_then(|c| c.get(capability))
            .is_some()
    }
}
