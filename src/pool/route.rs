//! What a pooled server says, routed to the sessions it is for (see the
//! module above): answers by the pool's ids, progress by its tokens, a
//! server's questions to the session they belong to, notifications to
//! the sessions that want them. A server that went away (or restarted)
//! leaves nothing owed: what was in flight on it is answered here.

use super::member::PooledServer;
use super::state::{deliver, severity, State};
use super::{read, SharedPool};
use crate::peer::Read;
use mcp_chain_middleware::message::{method, Incoming};
use mcp_chain_middleware::payload::Payload;
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message};
use serde_json::{json, Value};
use std::sync::Arc;

impl SharedPool {
    /// One read of a member's server.
    pub(super) async fn server_read(&self, member: &PooledServer, read: Read) {
        let (why, id) = match read {
            Read::Parsed(Incoming::Single(Ok(message))) => {
                return self.server_said(member, message).await
            }
            Read::Parsed(Incoming::Single(Err(invalid))) => {
                let _ = member.send(crate::relay::invalid_answer(invalid)).await;
                return;
            }
            Read::Parsed(Incoming::Batch(items)) => {
                for item in items {
                    match item {
                        Ok(message) => self.server_said(member, message).await,
                        Err(invalid) => {
                            let _ = member.send(crate::relay::invalid_answer(invalid)).await;
                        }
                    }
                }
                return;
            }
            Read::Unparsable { error, id } => (format!("parse error: {error}"), id),
            Read::OverBudget { len, why, id } => {
                (format!("a message of {len} bytes or more was refused: {why}"), id)
            }
            Read::TooLong { len, limit, id } => (
                format!("message of {len} bytes is over the limit of {limit} bytes (proxy.max_message_bytes)"),
                id,
            ),
        };
        tracing::warn!(
            member = member.index,
            "a server of the shared pool sent what cannot be relayed: {why}"
        );
        // When it is an answer whose id can still be read, the request it
        // answers gets an error instead of nothing.
        if let Some(id) = id {
            let error = ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("mcp-chain: the server's answer could not be relayed ({why})"),
            )
            .with_data(json!({"layer": "upstream", "reason": "unreadable_answer"}));
            self.answer(member, Message::error(Some(id), error));
        }
    }

    /// A member's server failed (it died, restarts, is gone): each
    /// session's request in flight on it is answered with `error`, and
    /// its questions to sessions are forgotten (a late answer goes
    /// nowhere).
    pub(super) fn settle(&self, member: usize, error: ErrorObject) {
        let mut state = self.state();
        let owed = state.books.take_sent(|sent| sent.server == member);
        state.books.take_asked(|asked| asked.server == member);
        for (_, sent) in owed {
            let (Some(theirs), Some(entry)) = (sent.theirs, state.ports.get(&sent.what)) else {
                continue;
            };
            deliver(
                &entry.inbox,
                read(Message::error(Some(theirs), error.clone())),
                true,
            );
        }
    }

    /// A member's server was started again: every session lists again
    /// what the new one may list differently.
    pub(super) fn restarted(&self, refetch: &[&'static str]) {
        let state = self.state();
        for note in refetch {
            for entry in state.ports.values() {
                deliver(&entry.inbox, read(Message::notification(note, None)), false);
            }
        }
    }

    /// One message from a member's server, to the sessions it is for.
    async fn server_said(&self, member: &PooledServer, message: Message) {
        match message {
            Message::Response(_) | Message::Error(_) => self.answer(member, message),
            Message::Notification(_) => self.notify(member, message),
            Message::Request(mut request) => {
                if request.method == method::PING {
                    let pong = Message::response(request.id, json!({}));
                    let _ = member.send(pong).await;
                    return;
                }
                let Some(port) = self.whose(member.index, &mut request) else {
                    tracing::warn!(member = member.index, method = %mcp_chain_middleware::shown::shown(&request.method, 200), "a shared server asked something of a client, and which one cannot be told; answered with an error");
                    let error = ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        "mcp-chain: this server is shared by several clients, and which one this request is for cannot be told",
                    );
                    let _ = member.send(Message::error(Some(request.id), error)).await;
                    return;
                };
                let mut state = self.state();
                state.books.ask(member.index, port, &mut request);
                if let Some(entry) = state.ports.get(&port) {
                    deliver(&entry.inbox, read(Message::Request(request)), true);
                }
            }
        }
    }

    fn answer(&self, member: &PooledServer, mut message: Message) {
        let Some(id) = message.id().cloned() else {
            return;
        };
        if member.is_handshake(&id) {
            if let Message::Response(response) = &message {
                let result = response.result.to_value().ok();
                member.handshaken(result.clone());
                self.handshake_tx.send_replace(result.map(Arc::new));
            }
            return;
        }
        let mut state = self.state();
        // Only an answer to what was sent to this member, its session's
        // id put back.
        let Some(sent) = state.books.answered(member.index, &mut message) else {
            return;
        };
        if let Some(entry) = state.ports.get(&sent.what) {
            deliver(&entry.inbox, read(message), true);
        }
    }

    fn notify(&self, member: &PooledServer, mut message: Message) {
        let name = message.method().unwrap_or_default().to_owned();
        // The one member each kind is routed by: progress, the most
        // frequent, is not read whole.
        let member_of = |message: &Message, key: &str| {
            let params = message.params()?;
            params.member(key).ok().flatten()
        };
        let mut state = self.state();
        let mut to: Vec<u64> = Vec::new();
        match name.as_str() {
            method::NOTIFICATION_PROGRESS => {
                // On a request sent to this member: its session's token.
                let sent = state.books.progress(member.index, &mut message);
                to.extend(sent.map(|sent| sent.what));
            }
            method::NOTIFICATION_MESSAGE => {
                let level = member_of(&message, "level");
                let level = level.as_ref().and_then(Value::as_str).and_then(severity);
                // One naming a request is that request's session's alone
                // (none, once it is answered); else every session's.
                let related = related_port(&state, member.index, message.params_mut());
                to = state
                    .ports
                    .iter()
                    .filter(|(p, _)| related.is_none_or(|only| only == Some(**p)))
                    .filter(|(_, e)| e.level.is_none_or(|min| level.is_none_or(|l| l >= min)))
                    .map(|(p, _)| *p)
                    .collect();
            }
            method::NOTIFICATION_RESOURCES_UPDATED => {
                let uri = member_of(&message, "uri");
                let uri = uri.as_ref().and_then(Value::as_str).unwrap_or_default();
                to = state
                    .ports
                    .iter()
                    .filter(|(_, e)| e.subscribed.contains(uri))
                    .map(|(p, _)| *p)
                    .collect();
            }
            m if m.ends_with("/list_changed") => to = state.ports.keys().copied().collect(),
            method::NOTIFICATION_CANCELLED => {
                // The member withdraws a question it asked a session.
                to.extend(state.books.withdrawn(member.index, &mut message));
            }
            _ => tracing::debug!(
                member = member.index,
                "a notification of a shared server that belongs to no one session; dropped"
            ),
        }
        for port in to {
            if let Some(entry) = state.ports.get(&port) {
                deliver(&entry.inbox, read(message.clone()), false);
            }
        }
    }

    /// The session a server's request belongs to: the one its metadata or
    /// progress token names, else the only one with a request in flight
    /// on that server.
    fn whose(
        &self,
        member: usize,
        request: &mut mcp_chain_middleware::message::Request,
    ) -> Option<u64> {
        let state = self.state();
        if let Some(port) = related_port(&state, member, request.params.as_mut()) {
            return port;
        }
        let meta = request
            .params
            .as_ref()
            .and_then(|p| p.member("_meta").ok().flatten());
        if let Some(token) = meta.as_ref().and_then(|m| m.get("progressToken")) {
            return state.books.by_token(member, token).map(|sent| sent.what);
        }
        let mut ports = state.in_flight_on(member);
        ports.sort_unstable();
        ports.dedup();
        match ports.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

/// The session whose request, sent to `member`, a message's `_meta`
/// names as its related request, with that request's id put back as the
/// session knows it. `None`: it names none; `Some(None)`: none in flight
/// on that member.
fn related_port(state: &State, member: usize, params: Option<&mut Payload>) -> Option<Option<u64>> {
    let related = state.books.related(member, params)?;
    Some(related.map(|sent| sent.what))
}
