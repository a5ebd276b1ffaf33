//! A session's way into the shared pool: what the session's relay starts
//! as its server. What the session sends is renamed and handed to one of
//! the pool's servers (or answered by the pool: `initialize`,
//! `logging/setLevel`, `resources/unsubscribe`); what the pool routes to
//! the session comes out of the port's source.

use super::member::set_id;
use super::state::{deliver, severity, PortEntry, Route};
use super::{read, remap, SharedPool};
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
                        for outgoing in taken.messages.drain(..) {
                            let messages = match outgoing {
                                Outgoing::One(message) => vec![message],
                                Outgoing::Batch(messages) => messages,
                            };
                            for message in messages {
                                pool.session_sent(port, message).await;
                            }
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
                // The session's answer to a server's request.
                let Some(id) = message.id().cloned() else {
                    return;
                };
                let asked = {
                    let mut state = self.state();
                    match state.asked.get(&id) {
                        Some(asked) if asked.port == port => state.asked.remove(&id),
                        _ => None,
                    }
                };
                if let Some(asked) = asked {
                    let mut message = message;
                    set_id(&mut message, asked.theirs);
                    self.members[asked.member].send(read(message)).await;
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
            let error = ErrorObject::new(
                ErrorCode::CONNECTION_CLOSED,
                "mcp-chain: no server of the shared pool is up",
            );
            self.to_port(port, Message::error(Some(request.id), error));
            return;
        };
        let mut message = Message::Request(request);
        let ours = self.id("req");
        let (theirs, token) = remap(&mut message, ours.clone());
        {
            let mut state = self.state();
            let ours_token = token.map(|(ours_text, original)| {
                state.tokens.insert(ours_text.clone(), (port, original));
                ours_text
            });
            state.routes.insert(
                ours.clone(),
                Route {
                    port: Some(port),
                    theirs,
                    member,
                    token: ours_token,
                },
            );
        }
        if !self.members[member].send(read(message)).await {
            let route = self.state().answered(&ours);
            if let Some(route) = route {
                let error = ErrorObject::new(
                    ErrorCode::CONNECTION_CLOSED,
                    "mcp-chain: the shared server went away",
                );
                self.to_port(port, Message::error(Some(route.theirs), error));
            }
        }
    }

    async fn notification(&self, port: u64, mut message: Message) {
        match message.method() {
            Some(method::NOTIFICATION_INITIALIZED) => {}
            Some(method::NOTIFICATION_CANCELLED) => {
                // Only the session's own request, by the pool's id.
                let named = message
                    .params()
                    .and_then(|p| p.member("requestId").ok().flatten())
                    .and_then(|v| RequestId::from_value(&v));
                let found = {
                    let state = self.state();
                    state
                        .routes
                        .iter()
                        .find(|(_, r)| r.port == Some(port) && Some(&r.theirs) == named.as_ref())
                        .map(|(ours, r)| (ours.clone(), r.member))
                };
                if let Some((ours, member)) = found {
                    if let Some(params) = message.params_mut() {
                        let _ = params.set_member("requestId", ours.to_value());
                    }
                    self.members[member].send(read(message)).await;
                }
            }
            // The client's roots changed: every server may ask again.
            Some(_) => {
                for member in &self.members {
                    member.send(read(message.clone())).await;
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
            let mine: Vec<RequestId> = state
                .routes
                .iter()
                .filter(|(_, r)| r.port == Some(port))
                .map(|(id, _)| id.clone())
                .collect();
            let cancel: Vec<(usize, RequestId)> = mine
                .iter()
                .filter_map(|id| state.answered(id).map(|r| (r.member, id.clone())))
                .collect();
            let asked: Vec<RequestId> = state
                .asked
                .iter()
                .filter(|(_, a)| a.port == port)
                .map(|(id, _)| id.clone())
                .collect();
            let refuse: Vec<(usize, RequestId)> = asked
                .iter()
                .filter_map(|id| state.asked.remove(id).map(|a| (a.member, a.theirs)))
                .collect();
            (cancel, refuse)
        };
        for (member, id) in cancel {
            let params =
                json!({"requestId": id.to_value(), "reason": "the client's session ended"});
            let note = Message::notification(method::NOTIFICATION_CANCELLED, Some(params));
            self.members[member].send(read(note)).await;
        }
        for (member, id) in refuse {
            let error = ErrorObject::new(
                ErrorCode::CONNECTION_CLOSED,
                "mcp-chain: the client's session ended",
            );
            self.members[member]
                .send(read(Message::error(Some(id), error)))
                .await;
        }
    }
}
