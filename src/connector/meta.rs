//! What a peer's notifications and requests name of the requests it was
//! sent (a listen stream's subscription, a related request, a listen
//! stream's end), given back as the senders of those requests know them.

use super::{Answer, Connector};
use mcp_chain_middleware::message::{method, Notification, Request};

/// Where a 2026-07-28 server names, on each notification of a
/// `subscriptions/listen` stream, the listen request it belongs to.
pub(super) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The `_meta` key naming the request a message belongs to.
pub(crate) const RELATED_REQUEST_ID: &str = "io.modelcontextprotocol/related-request-id";

impl Connector {
    /// A notification from this connector's peer that names one of the
    /// `subscriptions/listen` requests it was sent, with the id the sender
    /// of that request knows: a listen stream's `_meta` subscription id, and
    /// the `notifications/cancelled` with which a stdio server ends a listen
    /// stream (that request then gets no answer). Any other cancellation
    /// from the peer is of a request of its own, and passes unchanged.
    pub(crate) fn translate_from_peer(&self, mut note: Notification) -> Notification {
        let Some(params) = note.params.as_mut() else {
            return note;
        };
        if note.method == method::NOTIFICATION_CANCELLED {
            let local = params.member("requestId").ok().flatten();
            let local = local.as_ref().and_then(|id| id.as_u64());
            let entry = local.and_then(|local| {
                let mut pending = self.lock();
                pending.by_local.get(&local).filter(|e| e.listen)?;
                let entry = pending.by_local.remove(&local)?;
                pending.by_origin.remove(&entry.origin);
                Some(entry)
            });
            if let Some(entry) = entry {
                let _ = params.set_member("requestId", entry.origin.to_value());
                let _ = entry.answer.send(Answer::Cancelled);
            }
            return note;
        }
        self.meta_to_origin(params);
        note
    }

    /// A request from this connector's peer (a server's elicitation or
    /// sampling) whose `_meta` names the request it belongs to, with the id
    /// the sender of that request knows.
    pub(crate) fn translate_request_from_peer(&self, mut request: Request) -> Request {
        if let Some(params) = request.params.as_mut() {
            self.meta_to_origin(params);
        }
        request
    }

    /// The ids in `_meta` that name a request this connector sent, given
    /// back as its sender knows them: a listen stream's subscription id,
    /// and the related request's id (a log message or a question asked
    /// during a tool call). One that names nothing in flight is left.
    fn meta_to_origin(&self, params: &mut mcp_chain_middleware::payload::Payload) {
        let Ok(Some(mut meta)) = params.member("_meta") else {
            return;
        };
        let Some(map) = meta.as_object_mut() else {
            return;
        };
        let mut changed = false;
        {
            let pending = self.lock();
            for (key, listens_only) in [(SUBSCRIPTION_ID, true), (RELATED_REQUEST_ID, false)] {
                let local = map.get(key).and_then(serde_json::Value::as_u64);
                let entry = local.and_then(|local| pending.by_local.get(&local));
                if let Some(entry) = entry.filter(|e| e.listen || !listens_only) {
                    map.insert(key.into(), entry.origin.to_value());
                    changed = true;
                }
            }
        }
        if changed {
            let _ = params.set_member("_meta", meta);
        }
    }
}
