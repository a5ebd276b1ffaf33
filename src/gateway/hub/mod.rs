//! The gateway's routes: one client session on one side, a session per
//! server on the other (each through its own chain). What it sends on is
//! in the books every multiplexer of mcp-chain keeps (`crate::books`):
//! every request the client sends a server gets an id and progress token
//! of the gateway's, so an answer or progress is known by them alone and a
//! server can answer or report only on what was sent to it; every request
//! a server sends the client gets one too, and the client's answer (and
//! progress) goes back to that server with the server's id.
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
use crate::books::Books;

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
pub(super) struct GatewayServer {
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

/// What a request the gateway sent a server is for (the books say which
/// server).
enum Pending {
    /// A request of the client's (the books keep its id and token).
    Forward,
    /// The server's part of a merged listing.
    Part { merging: u64 },
    /// What the server lists, asked by the gateway itself (`learn.rs`).
    Learn {
        listing: crate::gateway::names::Listing,
    },
    /// The `initialize` the gateway sent the server.
    Initialize,
    /// The `server/discover` the gateway sent the server (a 2026-07-28
    /// client's gateway).
    Discover,
    /// An answer nobody waits for (`logging/setLevel` beyond the first).
    Quiet,
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
    pub(super) members: Vec<GatewayServer>,
    names: Names,
    cursors: Cursors,
    owners: Owners,
    /// What went to the servers, and their questions for the client.
    books: Books<Pending, ()>,
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

fn error(id: RequestId, code: ErrorCode, message: String) -> Message {
    Message::error(Some(id), ErrorObject::new(code, message))
}

impl Hub {
    pub(super) fn new(
        up: mpsc::Sender<Read>,
        members: Vec<GatewayServer>,
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
            books: Books::default(),
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

    /// Sends `request` to server `k` under a new id of the gateway's (a
    /// client's request: its progress token too); `false` when its session
    /// cannot take it (gone, or not keeping up).
    fn send_server(&mut self, k: usize, mut request: Message, pending: Pending) -> bool {
        let ours = match pending {
            Pending::Forward => self.books.send(k, pending, &mut request),
            _ => self.books.send_own(k, pending, &mut request),
        };
        if self.members[k].to.try_send(read(request)).is_err() {
            self.books.forget(&ours);
            return false;
        }
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
                .books
                .in_flight()
                .any(|(_, sent)| matches!(sent.what, Pending::Forward))
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
        if !self.send_server(k, message, Pending::Initialize) {
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
