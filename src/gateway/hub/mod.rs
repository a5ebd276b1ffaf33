//! The gateway's books and routes: one client session on one side, a
//! session per server on the other (each through its own chain). Every
//! request the client sends a server gets an id of the gateway's, so an
//! answer is known by its id alone and a server can answer only what was
//! sent to it; every request a server sends the client gets one too, and
//! the client's answer goes back to that server with the server's id.
//!
//! - `initialize`: each server is initialized with the client's own
//!   params; the client is answered once all have answered or
//!   `startup_timeout` passed (`merge.rs`). A server that answers later
//!   joins: its lists are announced changed.
//! - listings: asked of every server at once, merged into one page named
//!   for the client, with a cursor of the gateway's for what follows
//!   (`listing.rs`, `names.rs`);
//! - calls, prompts, reads, subscriptions, completions: to their owner,
//!   with the server's own name;
//! - `ping` answered here; `logging/setLevel` to every server;
//!   cancellations by the gateway's id; list changes re-announced.
//! - a server that ends: what it owes is answered -32000 at once, its
//!   names leave the lists (announced), the others go on.

use super::merge;

mod client;
mod learn;
mod listing;
mod modern;
mod page;
mod server;
mod tasks;
mod uris;
use super::names::{Cursors, Names, Owners};
use crate::peer::Read;
use mcp_chain_middleware::message::{method, Incoming};
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message, RequestId};
use serde_json::Value;
use std::collections::HashMap;
use tokio::sync::mpsc;

/// One server, as the hub sees it.
pub(super) struct Member {
    pub(super) name: String,
    /// `resources = "prefix"`: `NAME+`, before each URI it offers.
    pub(super) uri_prefix: Option<String>,
    /// The way into its session (as its client).
    pub(super) to: mpsc::Sender<Read>,
    pub(super) state: State,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum State {
    Starting,
    /// Initialized: its `initialize` result.
    Up(Value),
    /// Its session runs, but it cannot be initialized until a person
    /// logs in (OAuth): initialize is asked again at the instant given.
    LoggingIn(tokio::time::Instant),
    /// Ended, or failed to start: why.
    Down(String),
}

/// How often a server waiting for a login is asked to initialize again.
pub(super) const LOGIN_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// What an answer with one of the gateway's ids is for.
enum Pending {
    /// A request of the client's, sent to server `k`.
    Forward { k: usize, client: RequestId },
    /// Server `k`'s part of a merged listing.
    Part { k: usize, merging: u64 },
    /// What server `k` lists, asked by the gateway itself (`learn.rs`).
    Learn {
        k: usize,
        listing: crate::gateway::names::Listing,
    },
    /// The `initialize` the gateway sent server `k`.
    Initialize { k: usize },
    /// The `server/discover` the gateway sent server `k` (a 2026-07-28
    /// client's gateway).
    Discover { k: usize },
    /// An answer nobody waits for (`logging/setLevel` beyond the first).
    Quiet { k: usize },
}

/// The client's `initialize` (or a 2026-07-28 client's first request),
/// while the servers answer theirs.
struct Startup {
    /// What to answer: its `initialize` or `server/discover` (`None`: a
    /// 2026-07-28 request, which waits with the rest).
    client: Option<RequestId>,
    params: Value,
    /// Answered as `server/discover` is.
    discover: bool,
}

pub(super) struct Hub {
    up: mpsc::Sender<Read>,
    pub(super) members: Vec<Member>,
    names: Names,
    cursors: Cursors,
    owners: Owners,
    next_id: u64,
    pending: HashMap<u64, Pending>,
    /// Requests of the servers, by the id the client sees: (server, its id).
    asked: HashMap<u64, (usize, RequestId)>,
    /// The client's `initialize` params, once it sent them.
    client_params: Option<Value>,
    startup: Option<Startup>,
    client_initialized: bool,
    /// A 2026-07-28 client's: the `_meta` the gateway's own requests carry.
    modern: Option<Value>,
    /// Reads of URIs no server was known to own, waiting for what the
    /// servers list (`learn.rs`).
    unrouted: Vec<mcp_chain_middleware::message::Request>,
    /// Listings being merged, by number.
    mergings: HashMap<u64, listing::Merging>,
    next_merging: u64,
    /// How long a server may take with its part of a listing.
    part_within: std::time::Duration,
    /// What the client sent while its `initialize` waited for the
    /// servers (a client that does not wait for the answer): handled, in
    /// order, once it is answered.
    deferred: Vec<Message>,
}

fn read(message: Message) -> Read {
    Read::Parsed(Incoming::Single(Ok(message)))
}

fn number(id: u64) -> RequestId {
    RequestId::Number(id.into())
}

fn gateway_id(id: &RequestId) -> Option<u64> {
    match id {
        RequestId::Number(n) => n.as_u64(),
        RequestId::String(_) => None,
    }
}

fn error(id: RequestId, code: ErrorCode, message: String) -> Message {
    Message::error(Some(id), ErrorObject::new(code, message))
}

impl Hub {
    pub(super) fn new(
        up: mpsc::Sender<Read>,
        members: Vec<Member>,
        names: Names,
        secret: String,
        part_within: std::time::Duration,
    ) -> Self {
        Self {
            up,
            members,
            names,
            cursors: Cursors::new(secret),
            owners: Owners::default(),
            next_id: 0,
            pending: HashMap::new(),
            asked: HashMap::new(),
            client_params: None,
            startup: None,
            client_initialized: false,
            modern: None,
            deferred: Vec::new(),
            unrouted: Vec::new(),
            mergings: HashMap::new(),
            next_merging: 0,
            part_within,
        }
    }

    async fn send_client(&self, message: Message) {
        let _ = self.up.send(read(message)).await;
    }

    /// Sends `request` to server `k` under a new id of the gateway's;
    /// `false` when its session cannot take it (gone, or not keeping up).
    fn send_server(&mut self, k: usize, mut request: Message, pending: Pending) -> bool {
        self.next_id += 1;
        let id = self.next_id;
        request.set_id(number(id));
        if self.members[k].to.try_send(read(request)).is_err() {
            return false;
        }
        self.pending.insert(id, pending);
        true
    }

    fn notify(&self, k: usize, message: Message) {
        let _ = self.members[k].to.try_send(read(message));
    }

    pub(super) fn starting(&self) -> bool {
        self.startup.is_some()
    }

    /// Nothing the client asked is owed any more.
    pub(super) fn idle(&self) -> bool {
        !self.starting()
            && self.deferred.is_empty()
            && self.mergings.is_empty()
            && self.unrouted.is_empty()
            && !self
                .pending
                .values()
                .any(|p| matches!(p, Pending::Forward { .. }))
    }

    // === from the client ===

    fn initialize(&mut self, client: RequestId, params: Value) {
        self.client_params = Some(params.clone());
        self.startup = Some(Startup {
            client: Some(client),
            params,
            discover: false,
        });
        for k in 0..self.members.len() {
            self.send_initialize(k);
        }
    }

    fn send_initialize(&mut self, k: usize) {
        let Some(params) = self.client_params.clone() else {
            return;
        };
        let message = Message::request(0, method::INITIALIZE, Some(params));
        if !self.send_server(k, message, Pending::Initialize { k }) {
            self.members[k].state = State::Down("its session did not take initialize".into());
        }
    }

    /// Answers the client's `initialize` with what the servers up now say,
    /// when all have answered, or `now` (the startup time is over).
    pub(super) async fn answer_initialize(&mut self, now: bool) {
        let waiting = self.members.iter().any(|m| m.state == State::Starting);
        if waiting && !now {
            return;
        }
        let Some(startup) = self.startup.take() else {
            return;
        };
        for member in self
            .members
            .iter_mut()
            .filter(|m| m.state == State::Starting)
        {
            tracing::warn!(server = %member.name, "gateway: not up when the client's initialize was answered; it joins when it is");
        }
        let answers = self.up_answers();
        let result = match startup.discover {
            true => merge::discover(&answers),
            false => merge::initialize(&startup.params, &answers),
        };
        if let Some(client) = startup.client {
            self.send_client(Message::response(client, result)).await;
        }
        if self.modern.is_some() {
            // No `notifications/initialized` comes: the servers are
            // initialized now, 2025 ones told so.
            self.client_initialized = true;
            for k in self.up_members() {
                if !self.speaks_modern(k) {
                    let done = Message::notification(method::NOTIFICATION_INITIALIZED, None);
                    self.notify(k, done);
                }
                self.learn(k);
            }
        }
        for message in std::mem::take(&mut self.deferred) {
            Box::pin(self.client_sent(message)).await;
        }
    }
}

fn pending_server(pending: &Pending) -> usize {
    match pending {
        Pending::Forward { k, .. }
        | Pending::Part { k, .. }
        | Pending::Learn { k, .. }
        | Pending::Initialize { k }
        | Pending::Discover { k }
        | Pending::Quiet { k } => *k,
    }
}
