//! A session's way into the shared pool: what the session's relay starts
//! as its server. What the session sends is renamed and handed to one of
//! the pool's servers (or answered by the pool: `initialize`,
//! `logging/setLevel`, `resources/unsubscribe`); what the pool routes to
//! the session comes out of the port's source.

use super::state::{deliver, severity, PortEntry};
use super::{read, SharedPool};
use crate::peer::Peer;
use crate::relay::Starts;
use crate::transport::queue::{Outgoing, Taken};
use crate::upstream::{End, Lifecycle, Server, ServerSource, StartError, Upstream};
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message, RequestId};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Messages from the pool a session holds before they wait (an answer)
/// or are dropped (a notification).
const INBOX: usize = 256;

/// What a session of the front in shared mode starts as its server.
pub(crate) struct Port(pub(crate) Arc<SharedPool>);

impl Starts for Port {
    fn takes_messages(&self) -> bool {
        true
    }

    fn start(&self, up: Upstream, mut stop: oneshot::Receiver<()>) -> Result<Server, StartError> {
        let pool = self.0.clone();
        let (inbox, source) = mpsc::channel(INBOX);
        let port = {
            let mut state = pool.state();
            state.next_port += 1;
            let port = state.next_port;
            let entry = PortEntry {
                inbox,
                level: None,
                subscribed: HashSet::new(),
            };
            state.ports.insert(port, entry);
            port
        };
        let queue = up.queue.clone();
        let end = tokio::spawn(async move {
            let mut taken = Taken::default();
            loop {
                tokio::select! {
                    _ = &mut stop => break,
                    more = queue.take(&mut taken) => {
                        if !more {
                            break;
                        }
                        for message in taken.messages.drain(..).flat_map(Outgoing::into_messages) {
                            pool.session_sent(port, message).await;
                        }
                        taken.clear();
                    }
                }
            }
            pool.leave(port).await;
            End::Stopped(None)
        });
        let (_, restarted) = mpsc::channel(1);
        Ok(Peer {
            source: ServerSource::Parsed(source),
            sink: up.queue,
            lifecycle: Lifecycle { restarted, end },
        })
    }
}

impl SharedPool {
    /// One message a session sends its server.
    async fn session_sent(&self, port: u64, message: Message) {
        match message {
            Message::Request(request) => self.request(port, request).await,
            Message::Notification(note) => {
                self.notification(port, Message::Notification(note)).await
            }
            Message::Response(_) | Message::Error(_) => {
                // The session's answer to a server's request (its own only).
                let mut message = message;
                let member = self.state().books.replied(|to| *to == port, &mut message);
                if let Some(member) = member {
                    let _ = self.members[member].send(message).await;
                }
            }
        }
    }

    async fn request(&self, port: u64, request: mcp_chain_middleware::message::Request) {
        // One member of the params, for the few requests the pool answers
        // itself: nothing else is read (a call's arguments pass as text).
        let member = |name: &str| {
            let params = request.params.as_ref()?;
            params
                .str_member(name)
                .ok()
                .flatten()
                .map(|v| v.into_owned())
        };
        let answer = |result: Value| Message::response(request.id.clone(), result);
        let local = match request.method.as_str() {
            method::INITIALIZE => {
                let asked = member("protocolVersion");
                Some(self.initialize(request.id.clone(), asked).await)
            }
            method::LOGGING_SET_LEVEL => {
                let level = member("level").as_deref().and_then(severity);
                if let Some(entry) = self.state().ports.get_mut(&port) {
                    entry.level = level;
                }
                Some(answer(json!({})))
            }
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => {
                let subscribe = request.method == method::RESOURCES_SUBSCRIBE;
                if let (Some(entry), Some(uri)) = (self.state().ports.get_mut(&port), member("uri"))
                {
                    match subscribe {
                        true => entry.subscribed.insert(uri),
                        false => entry.subscribed.remove(&uri),
                    };
                }
                // The servers stay subscribed; each session gets only its own.
                (!subscribe).then(|| answer(json!({})))
            }
            _ => None,
        };
        if let Some(local) = local {
            self.to_port(port, local);
            return;
        }
        let Some(member) = self.pick() else {
            // A server restarting says when to retry (503); else none is up.
            let restarting = self.members.iter().find_map(|m| m.refusal());
            let error = restarting.unwrap_or_else(|| {
                ErrorObject::new(
                    ErrorCode::CONNECTION_CLOSED,
                    "mcp-chain: no server of the shared pool is up",
                )
            });
            self.to_port(port, Message::error(Some(request.id), error));
            return;
        };
        let mut message = Message::Request(request);
        let ours = self.state().books.send(member, port, &mut message);
        if let Err(error) = self.members[member].send(message).await {
            // Unless the server's failure already answered it.
            let sent = self.state().books.forget(&ours);
            if let Some(theirs) = sent.and_then(|sent| sent.theirs) {
                self.to_port(port, Message::error(Some(theirs), error));
            }
        }
    }

    async fn notification(&self, port: u64, mut message: Message) {
        match message.method() {
            Some(method::NOTIFICATION_INITIALIZED) => {}
            Some(method::NOTIFICATION_CANCELLED) => {
                // Only the session's own request, by the pool's id.
                let member = self.state().books.cancelled(|p| *p == port, &mut message);
                if let Some(member) = member {
                    let _ = self.members[member].send(message).await;
                }
            }
            Some(method::NOTIFICATION_PROGRESS) => {
                // Progress on a server's question to this session: to
                // that server alone.
                let member = (self.state().books).replied_progress(|to| *to == port, &mut message);
                if let Some(member) = member {
                    let _ = self.members[member].send(message).await;
                }
            }
            // The client's roots changed: every server may ask again.
            Some(_) => {
                for member in &self.members {
                    let _ = member.send(message.clone()).await;
                }
            }
            None => {}
        }
    }

    /// A message for a session from the pool itself.
    fn to_port(&self, port: u64, message: Message) {
        if let Some(entry) = self.state().ports.get(&port) {
            deliver(&entry.inbox, read(message), true);
        }
    }

    /// A session ended: its requests still on a server are cancelled there,
    /// a server's request waiting on it answered with an error.
    async fn leave(&self, port: u64) {
        let (cancel, refuse) = {
            let mut state = self.state();
            state.ports.remove(&port);
            let mine = state.books.take_sent(|sent| sent.what == port);
            let cancel: Vec<(usize, RequestId)> = mine
                .into_iter()
                .map(|(ours, sent)| (sent.server, ours))
                .collect();
            let asked = state.books.take_asked(|asked| asked.to == port);
            let refuse: Vec<(usize, RequestId)> =
                asked.into_iter().map(|a| (a.server, a.theirs)).collect();
            (cancel, refuse)
        };
        for (member, id) in cancel {
            let params =
                json!({"requestId": id.to_value(), "reason": "the client's session ended"});
            let note = Message::notification(method::NOTIFICATION_CANCELLED, Some(params));
            let _ = self.members[member].send(note).await;
        }
        for (member, id) in refuse {
            let error = ErrorObject::new(
                ErrorCode::CONNECTION_CLOSED,
                "mcp-chain: the client's session ended",
            );
            let error = Message::error(Some(id), error);
            let _ = self.members[member].send(error).await;
        }
    }
}
