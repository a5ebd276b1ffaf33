//! One server connection of the shared pool: a relay with no layers to one
//! server (a child, or a URL), initialized once by mcp-chain, started
//! again when it ends. What its server says is routed to the sessions
//! (see the module above); what the sessions send reaches it through
//! [`PooledServer::send`].

use super::state::{deliver, severity, State};
use super::{read, SharedPool, ASKED_REVISION};
use crate::config::{Config, UpstreamConfig};
use crate::peer::{Peer, Read};
use crate::relay;
use crate::transport::budget::Budget;
use crate::transport::queue::{Outgoing, Queue, Taken};
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::payload::Payload;
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message, RequestId};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::mpsc;

/// How many of the sessions' messages wait for a member's relay.
const INBOX: usize = 256;

/// The longest wait before a member that ended starts again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub(super) struct PooledServer {
    pub(super) index: usize,
    /// The current relay's input, while it runs.
    inbox: Mutex<Option<mpsc::Sender<Read>>>,
    /// Asks the current relay to stop.
    stopper: Mutex<Option<mpsc::Sender<()>>>,
    stopping: AtomicBool,
    /// The id of the pool's `initialize` on the current relay.
    init_id: Mutex<Option<RequestId>>,
}

impl PooledServer {
    pub(super) fn new(index: usize) -> Arc<Self> {
        Arc::new(Self {
            index,
            inbox: Mutex::new(None),
            stopper: Mutex::new(None),
            stopping: AtomicBool::new(false),
            init_id: Mutex::new(None),
        })
    }

    pub(super) fn is_up(&self) -> bool {
        lock(&self.inbox).is_some()
    }

    /// Hands a message to the member's server; `false` when it is down.
    pub(super) async fn send(&self, read: Read) -> bool {
        let inbox = lock(&self.inbox).clone();
        match inbox {
            Some(inbox) => inbox.send(read).await.is_ok(),
            None => false,
        }
    }

    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(stopper) = lock(&self.stopper).as_ref() {
            let _ = stopper.try_send(());
        }
    }

    /// Runs the member's relays, one after the other, until stopped.
    pub(super) fn run(
        self: Arc<Self>,
        pool: Arc<SharedPool>,
        config: Arc<Config>,
        budget: Arc<Budget>,
        upstream: UpstreamConfig,
    ) {
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(500);
            while !self.stopping.load(Ordering::Relaxed) {
                let started = tokio::time::Instant::now();
                let (inbox, source) = mpsc::channel(INBOX);
                let (stopper, signals) = mpsc::channel(4);
                let queue = Queue::of_messages();
                let init = pool.id("init");
                let hello = json!({
                    "protocolVersion": ASKED_REVISION,
                    "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
                    "clientInfo": {"name": "mcp-chain", "version": env!("CARGO_PKG_VERSION")},
                });
                let _ = inbox.try_send(read(Message::request(
                    init.clone(),
                    method::INITIALIZE,
                    Some(hello),
                )));
                let initialized = Message::notification(method::NOTIFICATION_INITIALIZED, None);
                let _ = inbox.try_send(read(initialized));
                *lock(&self.init_id) = Some(init);
                *lock(&self.stopper) = Some(stopper);
                *lock(&self.inbox) = Some(inbox);
                let router = tokio::spawn(route(pool.clone(), self.clone(), queue.clone()));
                let client = Peer {
                    source,
                    sink: queue,
                    lifecycle: router,
                };
                let ending = relay::session(
                    &config,
                    &budget,
                    relay::SessionLayers::fixed(Vec::new()),
                    &upstream,
                    client,
                    signals,
                    None,
                )
                .await;
                *lock(&self.inbox) = None;
                match ending {
                    Ok(relay::Ending::Clean) => {}
                    Ok(relay::Ending::ServerGone(reason)) => {
                        tracing::warn!(member = self.index, %reason, "a server of the shared pool is gone; starting another");
                    }
                    Err(e) => {
                        tracing::warn!(member = self.index, error = %e, "a server of the shared pool could not start")
                    }
                }
                if started.elapsed() > MAX_BACKOFF {
                    backoff = Duration::from_millis(500);
                }
                if !self.stopping.load(Ordering::Relaxed) {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes what the member's server says (after its relay) and routes it.
async fn route(pool: Arc<SharedPool>, member: Arc<PooledServer>, queue: Queue) {
    let mut taken = Taken::default();
    while queue.take(&mut taken).await {
        for outgoing in taken.messages.drain(..) {
            match outgoing {
                Outgoing::One(message) => pool.server_said(&member, message).await,
                Outgoing::Batch(messages) => {
                    for message in messages {
                        pool.server_said(&member, message).await;
                    }
                }
            }
        }
        taken.clear();
    }
}

impl SharedPool {
    /// One message from a member's server, to the sessions it is for.
    async fn server_said(&self, member: &PooledServer, message: Message) {
        match message {
            Message::Response(_) | Message::Error(_) => self.answer(member, message),
            Message::Notification(_) => self.notify(member, message),
            Message::Request(mut request) => {
                if request.method == method::PING {
                    let pong = Message::response(request.id, json!({}));
                    member.send(read(pong)).await;
                    return;
                }
                let Some(port) = self.whose(member.index, &mut request) else {
                    tracing::warn!(member = member.index, method = %request.method, "a shared server asked something of a client, and which one cannot be told; answered with an error");
                    let error = ErrorObject::new(
                        ErrorCode::INTERNAL_ERROR,
                        "mcp-chain: this server is shared by several clients, and which one this request is for cannot be told",
                    );
                    member
                        .send(read(Message::error(Some(request.id), error)))
                        .await;
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
        if lock(&member.init_id).as_ref() == Some(&id) {
            if let Message::Response(response) = &message {
                let result = response.result.to_value().ok().map(Arc::new);
                self.handshake_tx.send_replace(result);
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
/// on that member. (The member's connector has already given the pool's
/// id back for the server's own.)
fn related_port(state: &State, member: usize, params: Option<&mut Payload>) -> Option<Option<u64>> {
    let related = state.books.related(member, params)?;
    Some(related.map(|sent| sent.what))
}
