//! Telling a client that what it may see changed, after a reload.
//!
//! A server announces `notifications/{tools,prompts,resources}/list_changed`
//! only for the kinds it declared `listChanged` for, and clients listen
//! for those. mcp-chain may have to announce a change the server never
//! makes (a reload that denies one more tool), so where a reload is
//! possible its answer to `initialize` declares `listChanged` for each kind
//! the server offers, and remembers which: those are the kinds announced.
//! A 2026-07-28 session has no handshake: every kind is announced, and its
//! listeners take what they subscribed to.

use crate::chain::ChainService;
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::{BoxError, Direction, Envelope, Message, ResponseFuture};
use serde_json::Value;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Service, ServiceExt};

/// The kinds and their notifications.
const KINDS: [(&str, &str); 3] = [
    ("tools", method::NOTIFICATION_TOOLS_LIST_CHANGED),
    ("prompts", method::NOTIFICATION_PROMPTS_LIST_CHANGED),
    ("resources", method::NOTIFICATION_RESOURCES_LIST_CHANGED),
];

/// Set once the client's `initialize` was answered.
const HANDSHAKE: u8 = 1 << 7;

/// The kinds a session's client was told may change (a bit each, in
/// [`KINDS`] order), and whether there was a handshake to tell it in.
#[derive(Debug, Default)]
pub(crate) struct Declared(AtomicU8);

impl Declared {
    /// The notifications a change of lists calls for.
    fn notifications(&self) -> impl Iterator<Item = &'static str> {
        let bits = self.0.load(Ordering::Acquire);
        let all = bits & HANDSHAKE == 0;
        KINDS
            .iter()
            .enumerate()
            .filter(move |(n, _)| all || bits & (1 << n) != 0)
            .map(|(_, (_, note))| *note)
    }
}

/// Around the client → server chain: `initialize`'s answer declares
/// `listChanged` for every kind the server offers.
#[derive(Clone)]
pub(crate) struct Declaring {
    pub(crate) inner: ChainService,
    pub(crate) declared: Arc<Declared>,
}

impl Service<Envelope> for Declaring {
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        let handshake =
            matches!(&env.message, Message::Request(r) if r.method == method::INITIALIZE);
        let answer = self.inner.call(env);
        if !handshake {
            return answer;
        }
        let declared = self.declared.clone();
        Box::pin(async move {
            let mut answer = answer.await?;
            if let Some(Message::Response(response)) = &mut answer {
                let mut bits = HANDSHAKE;
                let _ = response.result.edit_value(|result| {
                    bits |= declare(result);
                    bits != HANDSHAKE
                });
                declared.0.store(bits, Ordering::Release);
            }
            Ok(answer)
        })
    }
}

/// Sets `listChanged` on each kind `result.capabilities` offers; the bits
/// of those kinds.
fn declare(result: &mut Value) -> u8 {
    let Some(capabilities) = result
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    else {
        return 0;
    };
    let mut bits = 0;
    for (n, (kind, _)) in KINDS.iter().enumerate() {
        if let Some(Value::Object(offered)) = capabilities.get_mut(*kind) {
            offered.insert("listChanged".to_owned(), Value::Bool(true));
            bits |= 1 << n;
        }
    }
    bits
}

/// Tells the client, down `to_client`, to list again what it may list.
pub(crate) async fn announce(to_client: &mut ChainService, declared: &Declared) {
    for note in declared.notifications() {
        let env = Envelope::new(Direction::ToClient, Message::notification(note, None));
        if let Ok(chain) = to_client.ready().await {
            let _ = chain.call(env).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_kinds_the_server_offers_are_declared_and_announced() {
        let mut result =
            json!({"capabilities": {"tools": {}, "resources": {"subscribe": true}, "logging": {}}});
        let bits = declare(&mut result);
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(
            result["capabilities"]["resources"],
            json!({"subscribe": true, "listChanged": true})
        );
        assert!(result["capabilities"].get("prompts").is_none());
        let declared = Declared(AtomicU8::new(bits | HANDSHAKE));
        let notes: Vec<_> = declared.notifications().collect();
        assert_eq!(
            notes,
            [
                method::NOTIFICATION_TOOLS_LIST_CHANGED,
                method::NOTIFICATION_RESOURCES_LIST_CHANGED
            ]
        );
    }

    #[test]
    fn without_a_handshake_every_kind_is_announced() {
        assert_eq!(Declared::default().notifications().count(), 3);
        let none = Declared(AtomicU8::new(HANDSHAKE));
        assert_eq!(
            none.notifications().count(),
            0,
            "a server that offers nothing"
        );
    }
}
