//! The innermost service of each chain: hands a message to one peer's writer
//! and matches that peer's answers to the requests it was sent.
//!
//! The same type serves both directions. For the client's requests it is the
//! upstream connector (writing to the child's stdin); for the server's
//! requests it is the downstream connector (writing to our stdout).
//!
//! Each connector numbers the requests it sends with its own `u64` ids and
//! maps the answers back (docs/architecture.md, invariant 3): the peer never sees the
//! ids of the other side, two sides may use the same ids, and mcp-chain may
//! send requests of its own without colliding. `notifications/cancelled`
//! is translated the same way; one for a request no longer in flight is
//! dropped, because its id could now name a different request.

mod handshake;
mod meta;

pub(crate) use handshake::Handshake;
pub(crate) use meta::RELATED_REQUEST_ID;

use crate::transport::queue::Outgoing;
use crate::transport::queue::Queue;
use mcp_chain_middleware::message::{method, Message, Notification, Request};
use mcp_chain_middleware::{
    BoxError, Delivered, Envelope, ErrorCode, ErrorObject, RequestId, ResponseFuture,
};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::sync::{oneshot, Notify};
use tower::Service;

/// Sends messages to one peer and waits for its answers.
#[derive(Debug, Clone)]
pub(crate) struct Connector {
    /// To the writer task of the peer. `poll_ready` waits for room, so a
    /// peer that stops reading pushes back on whoever calls us.
    queue: Queue,
    pending: Arc<Mutex<Pending>>,
    /// Who the peer is, for errors and logs ("server", "client").
    peer: &'static str,
}

#[derive(Debug, Default)]
struct Pending {
    next_id: u64,
    by_local: HashMap<u64, Entry, BuildHasherDefault<OwnIds>>,
    by_origin: HashMap<RequestId, u64>,
    state: State,
    /// Kept only by the upstream connector (see [`Connector::recording`]).
    handshake: Option<Handshake>,
    /// Told each time the requests in flight are failed, for whoever keeps
    /// books of its own on this peer (see [`Connector::failures`]).
    failures: Option<Arc<Notify>>,
}

/// Whether the peer can be reached.
#[derive(Debug, Default, Clone)]
enum State {
    #[default]
    Open,
    /// Being restarted: requests are refused with 503, notifications dropped.
    Restarting(String),
    /// Shutting down: requests are answered with -32000 (nobody will answer
    /// them in time), notifications still pass (progress for owed answers).
    Closing(String),
    /// Gone for good: requests are answered with -32000.
    Closed(String),
}

#[derive(Debug)]
struct Entry {
    origin: RequestId,
    answer: oneshot::Sender<Answer>,
    delivered: Option<Delivered>,
    /// This is the client's `initialize`: keep its answer for a replay.
    initialize: bool,
    /// A `subscriptions/listen` (2026-07-28): the peer names it in the
    /// notifications of its stream (see [`Connector::translate_from_peer`]).
    listen: bool,
}

#[derive(Debug)]
enum Answer {
    Message(Message),
    /// The request was cancelled by its sender: it gets no answer.
    Cancelled,
}

/// Hashes the ids mcp-chain numbers its own requests with. They are
/// consecutive and chosen by us, not by a peer, so they need no keyed
/// hash against collisions (the peer's ids, in `by_origin`, keep the
/// standard one); a multiply spreads consecutive ids over the table's bits.
#[derive(Debug, Default)]
struct OwnIds(u64);

impl Hasher for OwnIds {
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; anything else still gets a fair hash.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

// === impl Connector ===

impl Connector {
    pub(crate) fn new(queue: Queue, peer: &'static str) -> Self {
        Self {
            queue,
            pending: Arc::default(),
            peer,
        }
    }

    /// Also keep the handshake that passes through, for replay after a
    /// restart. Only the connector in front of the server does this.
    pub(crate) fn recording(self) -> Self {
        self.lock().handshake = Some(Handshake::default());
        self
    }

    /// The handshake seen so far, if this connector records one.
    pub(crate) fn handshake(&self) -> Option<Handshake> {
        self.lock().handshake.clone()
    }

    /// Records what passes by another way than this connector (a
    /// multiplexer that writes its own handshake: the shared pool).
    pub(crate) fn record(&self, edit: impl FnOnce(&mut Handshake)) {
        if let Some(handshake) = self.lock().handshake.as_mut() {
            edit(handshake);
        }
    }

    /// Why the peer cannot take a request now (it is restarting, closing
    /// or gone): the error such a request is answered with. `None` while
    /// it is open.
    pub(crate) fn refusal(&self) -> Option<ErrorObject> {
        self.lock().state.refusal(self.peer)
    }

    /// The error a request in flight got when the peer went away (or
    /// restarted); `None` while it is open.
    pub(crate) fn failure(&self) -> Option<ErrorObject> {
        match &self.lock().state {
            State::Open => None,
            State::Closed(reason) | State::Closing(reason) | State::Restarting(reason) => {
                Some(closed_error(self.peer, reason))
            }
        }
    }

    /// Notified each time the requests in flight are failed (the peer
    /// restarts, closes, is gone): a multiplexer that writes requests of
    /// its own numbering past this connector (the shared pool) settles
    /// its books then. One permit is kept, so no failure is missed.
    pub(crate) fn failures(&self) -> Arc<Notify> {
        self.lock()
            .failures
            .get_or_insert_with(Arc::default)
            .clone()
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A panic while holding this lock is a bug we cannot recover from
        // anyway; keep serving with whatever state is there.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Routes an answer the peer sent. Returns the signal to wait on before
    /// reading the peer's next message, so the answer cannot be overtaken.
    pub(crate) fn resolve(&self, mut msg: Message) -> Option<Delivered> {
        let local = msg.id().and_then(RequestId::as_u64);
        let entry = {
            let mut pending = self.lock();
            let entry = local.and_then(|id| pending.by_local.remove(&id));
            if let Some(entry) = &entry {
                pending.by_origin.remove(&entry.origin);
            }
            entry
        };
        let Some(mut entry) = entry else {
            tracing::warn!(peer = self.peer, id = ?msg.id(), "dropping an answer to no request in flight");
            return None;
        };
        if entry.initialize {
            if let (Message::Response(r), Some(hs)) = (&msg, self.lock().handshake.as_mut()) {
                // Read for its capabilities; one that cannot be read
                // declares none.
                hs.result = r.result.to_value().ok();
            }
        }
        set_id(&mut msg, entry.origin);
        let delivered = entry.delivered.take();
        // The receiver is gone only if the request's task was dropped.
        let _ = entry.answer.send(Answer::Message(msg));
        delivered
    }

    /// The peer is gone: answer every request in flight now, and every later
    /// one at once.
    pub(crate) fn close(&self, reason: &str) {
        self.fail_all(State::Closed(reason.to_owned()), reason);
    }

    /// Shutting down: answer every request in flight with an error now and
    /// every later one at once, but keep passing notifications.
    pub(crate) fn closing(&self, reason: &str) {
        self.fail_all(State::Closing(reason.to_owned()), reason);
    }

    /// The peer is being restarted: answer every request in flight now (it
    /// died with them), refuse new ones with 503 until [`Self::resume`].
    pub(crate) fn suspend(&self, reason: &str) {
        self.fail_all(State::Restarting(reason.to_owned()), reason);
    }

    /// The peer is back.
    pub(crate) fn resume(&self) {
        self.lock().state = State::Open;
    }

    /// Forgets every request in flight without answering it: the peer that
    /// asked is gone, so a late answer must go nowhere.
    pub(crate) fn abandon_all(&self) {
        let mut pending = self.lock();
        pending.by_origin.clear();
        for (_, entry) in pending.by_local.drain() {
            let _ = entry.answer.send(Answer::Cancelled);
        }
    }

    fn fail_all(&self, state: State, reason: &str) {
        let entries: Vec<Entry> = {
            let mut pending = self.lock();
            pending.state = state;
            if let Some(failures) = &pending.failures {
                failures.notify_one();
            }
            pending.by_origin.clear();
            pending.by_local.drain().map(|(_, e)| e).collect()
        };
        for entry in entries {
            let error = closed_error(self.peer, reason);
            let _ = entry
                .answer
                .send(Answer::Message(Message::error(Some(entry.origin), error)));
        }
    }

    /// How many requests are waiting for the peer.
    pub(crate) fn in_flight(&self) -> usize {
        self.lock().by_local.len()
    }

    fn send(&mut self, msg: Message) -> Result<(), BoxError> {
        if self.queue.push(Outgoing::One(msg)) {
            Ok(())
        } else {
            Err(format!("the {} is gone", self.peer).into())
        }
    }

    fn call_request(&mut self, mut req: Request, delivered: Option<Delivered>) -> ResponseFuture {
        let (tx, rx) = oneshot::channel();
        let origin = {
            let mut pending = self.lock();
            if let Some(error) = pending.state.refusal(self.peer) {
                drop(pending);
                return Box::pin(async move { Ok(Some(Message::error(Some(req.id), error))) });
            }
            let initialize = req.method == method::INITIALIZE;
            if let (true, Some(hs)) = (initialize, pending.handshake.as_mut()) {
                hs.initialize = req.params.clone();
                hs.result = None;
            }
            pending.next_id += 1;
            let local = pending.next_id;
            let origin = std::mem::replace(&mut req.id, local.into());
            pending.by_origin.insert(origin.clone(), local);
            pending.by_local.insert(
                local,
                Entry {
                    origin: origin.clone(),
                    answer: tx,
                    delivered,
                    initialize,
                    listen: req.method == method::SUBSCRIPTIONS_LISTEN,
                },
            );
            origin
        };
        if let Err(e) = self.send(Message::Request(req)) {
            self.close(&e.to_string());
        }
        let peer = self.peer;
        Box::pin(async move {
            match rx.await {
                Ok(Answer::Message(msg)) => Ok(Some(msg)),
                Ok(Answer::Cancelled) => Ok(None),
                Err(_) => Ok(Some(Message::error(
                    Some(origin),
                    closed_error(peer, "the connection closed"),
                ))),
            }
        })
    }

    /// Rewrites a cancellation's `requestId` into the id the peer knows, and
    /// settles the request as cancelled. `None`: the request is not in
    /// flight, so the cancel is dropped. One without a `requestId` (the
    /// 2025-11-25 revision allows that for tasks) passes unchanged.
    fn translate_cancel(&self, mut note: Notification) -> Option<Notification> {
        let request_id = note.params.as_ref().map(|p| p.member("requestId"));
        let request_id = match request_id {
            None | Some(Ok(None)) => return Some(note),
            Some(Ok(Some(id))) => id,
            // Not readable: it cannot name a request in flight here.
            Some(Err(_)) => return None,
        };
        let origin = RequestId::from_value(&request_id)?;
        let entry = {
            let mut pending = self.lock();
            let local = pending.by_origin.remove(&origin)?;
            pending.by_local.remove(&local).map(|e| (local, e))
        };
        let (local, entry) = entry?;
        let _ = entry.answer.send(Answer::Cancelled);
        if let Some(params) = note.params.as_mut() {
            params
                .set_member("requestId", local.into())
                .expect("read as an object above");
        }
        Some(note)
    }
}

impl State {
    /// The error a request sent to the peer now is answered with.
    fn refusal(&self, peer: &str) -> Option<ErrorObject> {
        match self {
            Self::Open => None,
            Self::Closed(reason) | Self::Closing(reason) => Some(closed_error(peer, reason)),
            Self::Restarting(reason) => Some(restarting_error(reason)),
        }
    }
}

fn closed_error(peer: &str, reason: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::CONNECTION_CLOSED,
        format!("mcp-chain: connection closed: {reason}"),
    )
    .with_data(
        serde_json::json!({ "layer": "upstream", "reason": "connection_closed", "peer": peer }),
    )
}

/// How long a client is told to wait before retrying during a restart.
const RESTART_RETRY_AFTER_MS: u64 = 1000;

fn restarting_error(reason: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::UPSTREAM_UNAVAILABLE,
        format!("mcp-chain upstream: the server is restarting ({reason}); retry shortly"),
    )
    .with_data(serde_json::json!({
        "layer": "upstream",
        "reason": "restarting",
        "retryAfterMs": RESTART_RETRY_AFTER_MS,
    }))
}

fn set_id(msg: &mut Message, id: RequestId) {
    match msg {
        Message::Response(r) => r.id = id,
        Message::Error(e) => e.id = Some(id),
        Message::Request(r) => r.id = id,
        Message::Notification(_) => {}
    }
}

impl Service<Envelope> for Connector {
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // A closed queue is not an error here: requests are then answered
        // with "connection closed", which `call` does.
        self.queue.poll_ready(cx).map(Ok)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        match env.message {
            Message::Request(req) => self.call_request(req, env.delivered),
            Message::Notification(note) => {
                if matches!(self.lock().state, State::Restarting(_) | State::Closed(_)) {
                    // Nobody to tell; a restarted server gets a fresh handshake.
                    tracing::debug!(peer = self.peer, method = %note.method, "dropping a notification: the peer is not there");
                    return Box::pin(async { Ok(None) });
                }
                if note.method == method::NOTIFICATION_INITIALIZED {
                    if let Some(hs) = self.lock().handshake.as_mut() {
                        hs.initialized = true;
                    }
                }
                let note = if note.method == method::NOTIFICATION_CANCELLED {
                    self.translate_cancel(note)
                } else {
                    Some(note)
                };
                if let Some(note) = note {
                    // A notification to a peer that is gone is dropped: there
                    // is no one to tell.
                    let _ = self.send(Message::Notification(note));
                }
                Box::pin(async { Ok(None) })
            }
            other => {
                let kind = other.kind();
                Box::pin(async move { Err(format!("a {kind} cannot be sent down a chain").into()) })
            }
        }
    }
}

#[cfg(test)]
mod tests;
