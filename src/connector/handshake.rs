//! The client's handshake, as the server last saw it, kept so a restarted
//! server can be brought to the same state (`initialize`, then
//! `notifications/initialized`) without the client noticing.

use mcp_chain_middleware::message::{method, Request};
use mcp_chain_middleware::payload::Payload;
use mcp_chain_middleware::{Message, RequestId};
use serde_json::Value;

/// The id of a replayed `initialize`: a string, where the connectors' own
/// ids are numbers, so the two cannot meet; its answer is read by whoever
/// replayed it, never routed.
const REPLAY_ID: &str = "mcp-chain-replay";

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
    /// The client's `initialize` (its `params`), to send a new server or
    /// session with mcp-chain's own id.
    pub(crate) fn replayed_initialize(params: Payload) -> Message {
        Message::Request(Request {
            id: Self::replay_id(),
            method: method::INITIALIZE.to_owned(),
            params: Some(params),
            extra: Default::default(),
        })
    }

    /// Whether `message` answers a replayed `initialize`.
    pub(crate) fn answers_replay(message: &Message) -> bool {
        message.answers(&Self::replay_id())
    }

    fn replay_id() -> RequestId {
        RequestId::String(REPLAY_ID.to_owned())
    }

    /// Whether the server declared a capability (`tools`, `prompts`,
    /// `resources`) in its answer to `initialize`.
    pub(crate) fn declares(result: &Value, capability: &str) -> bool {
        result
            .get("capabilities")
            .and_then(|c| c.get(capability))
            .is_some()
    }
}
