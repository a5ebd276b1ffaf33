//! A shared session's (2026-07-28) notifications that are not progress:
//! each belongs to the `subscriptions/listen` stream its `_meta` names, as
//! the server stamped it. mcp-chain's own `list_changed` (after a reload)
//! names none: it goes to every stream whose server acknowledged that
//! kind, stamped with each stream's id, since a listener must get only
//! what it subscribed to.

use super::{has_room, written, Outgoing, Post, Routes};
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::{Message, RequestId};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Where a listen stream's notification names its subscription.
pub(super) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The `list_changed` notifications, and the acknowledged filter's key of each.
const KINDS: [(&str, &str); 3] = [
    (method::NOTIFICATION_TOOLS_LIST_CHANGED, "toolsListChanged"),
    (
        method::NOTIFICATION_PROMPTS_LIST_CHANGED,
        "promptsListChanged",
    ),
    (
        method::NOTIFICATION_RESOURCES_LIST_CHANGED,
        "resourcesListChanged",
    ),
];

const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

impl Routes {
    /// A shared session's notification that is not progress: it belongs
    /// to the `subscriptions/listen` stream its `_meta` names (the server
    /// stamps the listen request's id, the front's, given back here). A
    /// `notifications/cancelled` for a listen request ends its stream, as
    /// a stdio server ends one.
    pub(super) fn subscription(
        &mut self,
        mut message: Message,
    ) -> Vec<(mpsc::Sender<Outgoing>, Outgoing)> {
        let params = message.params();
        if message.method() == Some(method::NOTIFICATION_CANCELLED) {
            let id = params.and_then(|p| p.member("requestId").ok().flatten());
            let listen = id
                .as_ref()
                .and_then(RequestId::from_value)
                .and_then(|id| self.listen_post(&id));
            if let Some(n) = listen {
                self.close_post(n);
                return Vec::new();
            }
        }
        let meta = params.and_then(|p| p.member("_meta").ok().flatten());
        let stamped = meta
            .as_ref()
            .and_then(|m| m.get(SUBSCRIPTION_ID))
            .and_then(RequestId::from_value);
        if stamped.is_none() {
            return self.announced(&message);
        }
        if message.method() == Some(ACKNOWLEDGED) {
            let listen = stamped.as_ref().and_then(|id| self.listen_post(id));
            if let Some(post) = listen.and_then(|n| self.posts.get_mut(&n)) {
                post.kinds = acknowledged(&message);
            }
        }
        let Some((n, post)) = stamped
            .and_then(|id| self.listen_post(&id))
            .and_then(|n| Some((n, self.posts.get(&n)?)))
        else {
            tracing::debug!(
                method = message.method(),
                "a shared session's notification no listen stream asked for; dropped"
            );
            return Vec::new();
        };
        if let (Some(restore), Some(mut meta)) = (&post.restore, meta) {
            meta[SUBSCRIPTION_ID] = restore.id.to_value();
            if let Some(params) = message.params_mut() {
                let _ = params.set_member("_meta", meta);
            }
        }
        if !has_room(post) {
            // A listener that stopped reading is not waited for: its
            // stream ends, and the client listens (and lists) anew.
            tracing::debug!("a listen stream's reader fell behind; its stream is ended");
            self.close_post(n);
            return Vec::new();
        }
        vec![(post.tx.clone(), Outgoing::event(None, written(&message)))]
    }

    /// The open `subscriptions/listen` POST waiting for `id`.
    fn listen_post(&self, id: &RequestId) -> Option<u64> {
        let n = *self.answers.get(id)?;
        self.posts.get(&n).filter(|p| p.listen).map(|_| n)
    }

    /// An unstamped `list_changed` (mcp-chain's own): to every listener
    /// whose server acknowledged its kind, stamped for each.
    fn announced(&mut self, message: &Message) -> Vec<(mpsc::Sender<Outgoing>, Outgoing)> {
        let Some(bit) = message.method().and_then(kind_bit) else {
            tracing::debug!(
                method = message.method(),
                "a shared session's notification no listen stream asked for; dropped"
            );
            return Vec::new();
        };
        let mut sent = Vec::new();
        for post in self
            .posts
            .values()
            .filter(|p| p.listen && p.kinds & bit != 0)
        {
            let Some(id) = client_id(post) else { continue };
            if !has_room(post) {
                continue;
            }
            let stamped = Message::notification(
                message.method().unwrap_or_default(),
                Some(json!({"_meta": {SUBSCRIPTION_ID: id.to_value()}})),
            );
            sent.push((post.tx.clone(), Outgoing::event(None, written(&stamped))));
        }
        sent
    }
}

/// The bit of a `list_changed` method.
fn kind_bit(method: &str) -> Option<u8> {
    KINDS.iter().position(|(m, _)| *m == method).map(|n| 1 << n)
}

/// The kinds an acknowledgement's filter honors.
fn acknowledged(message: &Message) -> u8 {
    let filter = message
        .params()
        .and_then(|p| p.member("notifications").ok().flatten());
    let Some(Value::Object(filter)) = filter else {
        return 0;
    };
    KINDS
        .iter()
        .enumerate()
        .filter(|(_, (_, key))| filter.get(*key) == Some(&Value::Bool(true)))
        .fold(0, |bits, (n, _)| bits | 1 << n)
}

/// What the listen stream's client called its request.
fn client_id(post: &Post) -> Option<RequestId> {
    match &post.restore {
        Some(restore) => Some(restore.id.clone()),
        None => post.waiting.first().cloned(),
    }
}
