//! 2026-07-28 clients: no `initialize`, no session; each request names
//! its revision in `_meta`, and `server/discover` asks what the server
//! offers. A gateway a client of that revision speaks to first starts its
//! servers itself: each is asked `server/discover` (with the client's
//! `_meta`); one that speaks 2026-07-28 is then sent the client's
//! requests as they are, one that does not is initialized as a 2025-11-25
//! client would (the client's capabilities from its `_meta`) and sent
//! them as well (a 2025 server reads past `_meta` it does not know).
//! `server/discover` is answered with what the servers up offer, merged
//! as `initialize` is; what came before the servers answered waits for
//! them, as for a 2025 client's `initialize`.

use super::{merge, Hub, Pending, Startup, State};
use mcp_chain_middleware::message::{method, Request};
use mcp_chain_middleware::Message;
use serde_json::{json, Value};

/// The `_meta` key naming a request's revision, and the revision.
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const MODERN: &str = "2026-07-28";

/// Whether `request` is of the 2026-07-28 revision (or asks what a server
/// of it offers).
pub(super) fn is_modern(request: &Request) -> bool {
    request.method == method::SERVER_DISCOVER
        || request
            .params
            .as_ref()
            .and_then(|p| p.member("_meta").ok().flatten())
            .and_then(|meta| meta.get(VERSION_KEY).cloned())
            .is_some_and(|v| v == MODERN)
}

/// A 2025 server's result, as a 2026-07-28 client reads one: complete,
/// and a read's never kept (the server gave no caching hints).
pub(super) fn completed(result: &mut mcp_chain_middleware::payload::Payload) {
    let Ok(Value::Object(mut value)) = result.to_value() else {
        return;
    };
    value
        .entry("resultType")
        .or_insert_with(|| json!("complete"));
    if value.contains_key("contents") {
        value.entry("ttlMs").or_insert_with(|| json!(0));
        value
            .entry("cacheScope")
            .or_insert_with(|| json!("private"));
    }
    *result = Value::Object(value).into();
}

impl Hub {
    /// Starts the servers for a 2026-07-28 client whose first request is
    /// `request` (answered, if `server/discover`, once they are up).
    pub(super) fn start_modern(&mut self, request: &Request) {
        let meta = request
            .params
            .as_ref()
            .and_then(|p| p.member("_meta").ok().flatten())
            .unwrap_or_else(|| json!({}));
        let capabilities = meta.get(CAPABILITIES_KEY).cloned().unwrap_or(json!({}));
        // What a 2025 server is initialized with, for this client.
        self.client_params = Some(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "mcp-chain gateway", "version": env!("CARGO_PKG_VERSION")},
        }));
        self.modern = Some(json!({VERSION_KEY: MODERN, CAPABILITIES_KEY: capabilities}));
        let discover = request.method == method::SERVER_DISCOVER;
        self.startup = Some(Startup {
            client: discover.then(|| request.id.clone()),
            params: json!({"protocolVersion": MODERN}),
            discover,
        });
        let params = json!({"_meta": meta});
        for k in 0..self.members.len() {
            let message = Message::request(0, method::SERVER_DISCOVER, Some(params.clone()));
            if !self.send_server(k, message, Pending::Discover) {
                self.members[k].state =
                    State::Down("its session did not take server/discover".into());
            }
        }
    }

    /// Server `k`'s answer to `server/discover`: up, if it speaks
    /// 2026-07-28; else it is initialized as a 2025 server.
    pub(super) async fn discovered(&mut self, k: usize, answer: &Message) {
        let result = match answer {
            Message::Response(r) => r.result.to_value().ok(),
            _ => None,
        };
        let speaks = result.as_ref().is_some_and(|r| {
            r.get("supportedVersions")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|v| v == MODERN))
        });
        match result {
            Some(result) if speaks => {
                self.members[k].state = State::Up(result);
                self.up_modern(k).await;
            }
            _ => self.send_initialize(k),
        }
    }

    /// Server `k` is up for a 2026-07-28 client.
    pub(super) async fn up_modern(&mut self, k: usize) {
        if self.startup.is_none() {
            self.joined(k).await;
        } else {
            self.answer_initialize(false).await;
        }
    }

    /// The `_meta` of the gateway's own requests to server `k` (listings
    /// it learns from, `logging/setLevel`), for a 2026-07-28 client.
    pub(super) fn own_params(&self) -> Value {
        match &self.modern {
            Some(meta) => json!({"_meta": meta}),
            None => json!({}),
        }
    }

    /// `server/discover` asked after the servers started: what they offer
    /// now.
    pub(super) async fn discover_now(&self, id: mcp_chain_middleware::RequestId) {
        let result = merge::discover(&self.up_answers());
        self.send_client(Message::response(id, result)).await;
    }

    /// Whether server `k` was found speaking 2026-07-28 (its answer is a
    /// `server/discover` result).
    pub(super) fn speaks_modern(&self, k: usize) -> bool {
        match &self.members[k].state {
            State::Up(result) => result.get("supportedVersions").is_some(),
            _ => false,
        }
    }

    /// The servers up, by name, with what they answered.
    pub(super) fn up_answers(&self) -> Vec<(&str, &Value)> {
        self.members
            .iter()
            .filter_map(|m| match &m.state {
                State::Up(result) => Some((m.name.as_str(), result)),
                _ => None,
            })
            .collect()
    }
}
