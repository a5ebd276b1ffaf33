//! Many clients, few servers (`[front] upstream_sessions = "shared"`): the
//! 2025-era sessions of the HTTP front share a pool of server connections
//! instead of each starting its own. Beside the front, above the relay:
//! the front's sessions start their server through it.
//!
//! Each client session is still a relay with its own chain (what a layer
//! learns about a session stays the session's); what it would start as its
//! server is a [`Port`] into the pool (`port.rs`). The pool's members
//! (`member.rs`) are its servers themselves, each started as `[upstream]`
//! says and initialized once by mcp-chain; no second relay stands before
//! them. Between the two the pool renames every request's id (and
//! progress token) in its books (`crate::books`), spreads requests over
//! the members, and routes what each server says back (`route.rs`):
//!
//! - an answer to the session whose request it answers, with its own id;
//! - progress to the session whose token it names;
//! - a server's request (sampling, elicitation, roots) to the session whose
//!   request it belongs to, when the server says (`related-request`
//!   metadata, a progress token) or only one request is in flight on that
//!   server; otherwise it is answered with an error and logged, never sent
//!   to a session it may not belong to;
//! - `notifications/*/list_changed` to every session, `resources/updated`
//!   to the sessions subscribed to the resource, log messages to the
//!   sessions whose `logging/setLevel` lets them through (one that names
//!   its related request: to that request's session alone, or to none once
//!   it is answered);
//! - anything else from a server, which could belong to any session, is
//!   dropped (logged);
//! - a server that dies, restarts or is gone: what was in flight on it is
//!   answered with an error at once, and a restart tells every session to
//!   list again.
//!
//! A session's `initialize` is answered from the pool's handshake, its
//! protocol version negotiated as a server would: the one asked for when
//! the server's is as new, else the server's. `logging/setLevel` and
//! `resources/unsubscribe` are answered by the pool (in effect per
//! session); a session's `notifications/cancelled` can name only its own
//! requests.

mod member;
mod port;
mod route;
mod state;

pub(crate) use port::Port;

use crate::config::{Config, UpstreamConfig};
use crate::peer::Read;
use crate::transport::budget::Budget;
use mcp_chain_middleware::message::Incoming;
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message, RequestId};
use member::PooledServer;
use serde_json::Value;
use state::State;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::watch;

/// The protocol revision the pool's servers are asked for.
const ASKED_REVISION: &str = "2025-11-25";

/// The revisions of sessions a pool serves (2026-07-28 requests have no
/// session and a pool of their own).
const SESSION_REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The shared pool of server connections.
pub(crate) struct SharedPool {
    members: Vec<Arc<PooledServer>>,
    /// Whose turn it is (round robin over the members).
    turn: AtomicUsize,
    /// Numbers the pool's ids and tokens.
    next: AtomicU64,
    state: Mutex<State>,
    /// The `initialize` result of the pool's servers, once one answered.
    handshake: watch::Receiver<Option<Arc<Value>>>,
    handshake_tx: watch::Sender<Option<Arc<Value>>>,
}

impl SharedPool {
    /// Starts `size` server connections to `upstream`.
    pub(crate) fn start(
        size: usize,
        config: Arc<Config>,
        budget: Arc<Budget>,
        upstream: UpstreamConfig,
    ) -> Arc<Self> {
        let (handshake_tx, handshake) = watch::channel(None);
        let pool = Arc::new(Self {
            members: (0..size).map(PooledServer::new).collect(),
            turn: AtomicUsize::new(0),
            next: AtomicU64::new(1),
            state: Mutex::new(State::default()),
            handshake,
            handshake_tx,
        });
        for member in &pool.members {
            member.clone().run(
                pool.clone(),
                config.clone(),
                budget.clone(),
                upstream.clone(),
            );
        }
        pool
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh id of the pool's.
    fn id(&self, what: &str) -> RequestId {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        RequestId::String(format!("mcp-chain-{what}-{n}"))
    }

    /// The next member that is up, in turn.
    fn pick(&self) -> Option<usize> {
        let n = self.members.len();
        let start = self.turn.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|i| (start + i) % n)
            .find(|&i| self.members[i].is_up())
    }

    /// Whether a server of the pool is up (the front is ready).
    pub(crate) fn is_up(&self) -> bool {
        self.members.iter().any(|m| m.is_up())
    }

    /// Stops every member (at shutdown).
    pub(crate) fn stop(&self) {
        for member in &self.members {
            member.stop();
        }
    }

    /// The answer to a session's `initialize`, from the pool's handshake.
    async fn initialize(&self, id: RequestId, asked: Option<String>) -> Message {
        let mut handshake = self.handshake.clone();
        let wait = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            handshake.wait_for(Option::is_some),
        );
        let result = match wait.await {
            Ok(Ok(result)) => result.clone(),
            _ => None,
        };
        let Some(result) = result else {
            let error = ErrorObject::new(
                ErrorCode::CONNECTION_CLOSED,
                "mcp-chain: no server of the shared pool has started",
            );
            return Message::error(Some(id), error);
        };
        let mut result = (*result).clone();
        let theirs = result["protocolVersion"]
            .as_str()
            .unwrap_or(ASKED_REVISION)
            .to_owned();
        let version = match asked {
            Some(asked) if SESSION_REVISIONS.contains(&asked.as_str()) && asked <= theirs => asked,
            _ => theirs,
        };
        result["protocolVersion"] = version.into();
        Message::response(id, result)
    }
}

/// A message as a relay's source yields it.
fn read(message: Message) -> Read {
    Read::Parsed(Incoming::Single(Ok(message)))
}
