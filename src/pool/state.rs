//! The pool's books: the sessions it serves (ports), the requests in
//! flight on its servers and whose they are, the progress tokens it gave,
//! and the servers' requests it passed to sessions.

use crate::peer::Read;
use mcp_chain_middleware::RequestId;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use tokio::sync::mpsc;

#[derive(Default)]
pub(super) struct State {
    pub(super) ports: HashMap<u64, PortEntry>,
    pub(super) next_port: u64,
    /// The pool's id of a request → where its answer goes.
    pub(super) routes: HashMap<RequestId, Route>,
    /// The pool's progress token (as JSON text) → the session and its own.
    pub(super) tokens: HashMap<String, (u64, Value)>,
    /// The id a session was given for a server's request → whose it is.
    pub(super) asked: HashMap<RequestId, Asked>,
}

/// One session served by the pool.
pub(super) struct PortEntry {
    /// Where its server's messages go (the session's source).
    pub(super) inbox: mpsc::Sender<Read>,
    /// Its `logging/setLevel`, as a severity (see [`severity`]).
    pub(super) level: Option<u8>,
    /// The resources it subscribed to.
    pub(super) subscribed: HashSet<String>,
}

/// A request on one of the pool's servers.
pub(super) struct Route {
    /// The session it came from; `None`: the pool's own.
    pub(super) port: Option<u64>,
    /// Its id as the session sent it.
    pub(super) theirs: RequestId,
    pub(super) member: usize,
    /// The pool's progress token for it, if it had one.
    pub(super) token: Option<String>,
}

/// A server's request, passed to a session.
pub(super) struct Asked {
    pub(super) member: usize,
    /// Its id as the server's connection gave it.
    pub(super) theirs: RequestId,
    pub(super) port: u64,
}

impl State {
    /// Forgets a request once answered; its progress token too.
    pub(super) fn answered(&mut self, id: &RequestId) -> Option<Route> {
        let route = self.routes.remove(id)?;
        if let Some(token) = &route.token {
            self.tokens.remove(token);
        }
        Some(route)
    }

    /// The requests in flight on `member`, and for which sessions.
    pub(super) fn in_flight_on(&self, member: usize) -> Vec<u64> {
        let ports = self.routes.values().filter(|r| r.member == member);
        ports.filter_map(|r| r.port).collect()
    }
}

/// A log level's severity (RFC 5424 order, debug lowest).
pub(super) fn severity(level: &str) -> Option<u8> {
    let levels = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    levels.iter().position(|l| *l == level).map(|n| n as u8)
}

/// Hands `read` to a session without ever waiting on it (a shared loop
/// must not wait for one client): an answer that finds the inbox full is
/// handed over by a task of its own; anything else is dropped.
pub(super) fn deliver(inbox: &mpsc::Sender<Read>, read: Read, answer: bool) {
    match inbox.try_send(read) {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Full(read)) if answer => {
            let inbox = inbox.clone();
            tokio::spawn(async move {
                let _ = inbox.send(read).await;
            });
        }
        Err(_) => tracing::debug!(
            "a session of the shared pool is not reading; a message to it was dropped"
        ),
    }
}
