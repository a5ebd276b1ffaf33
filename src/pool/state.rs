//! What the pool keeps under its lock: the sessions it serves (ports), and
//! its books (`crate::books`): the sessions' requests on its servers under
//! the pool's ids and progress tokens, each with the port it came from,
//! and the servers' requests passed to a port.

use crate::books::Books;
use crate::peer::Read;
use std::collections::{HashMap, HashSet};
use tokio::sync::mpsc;

#[derive(Default)]
pub(super) struct State {
    pub(super) ports: HashMap<u64, PortEntry>,
    pub(super) next_port: u64,
    /// Requests on the pool's servers by member, each the port's it came
    /// from; the servers' requests, each passed to a port.
    pub(super) books: Books<u64, u64>,
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

impl State {
    /// The sessions with a request in flight on `member`.
    pub(super) fn in_flight_on(&self, member: usize) -> Vec<u64> {
        let on = self.books.in_flight().filter(|(_, s)| s.server == member);
        on.map(|(_, s)| s.what).collect()
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
