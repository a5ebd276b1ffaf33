//! A session's backlog: the messages that went (or were to go) to its GET
//! stream, each with an event id, kept within bounds so that a client that
//! reconnects with `Last-Event-ID` gets what it missed, and one that never
//! opened a stream gets what waited for it. What falls out unsent is
//! counted and said once per burst.

use super::reply::Outgoing;
use bytes::Bytes;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// What the backlog keeps for `Last-Event-ID`: this many events, and no
/// more than this many bytes beyond the newest one.
const BACKLOG_EVENTS: usize = 1024;
const BACKLOG_BYTES: usize = 8 * 1024 * 1024;

/// At most one warning about dropped events this often.
const DROP_WARNING_EVERY: Duration = Duration::from_secs(10);

#[derive(Default)]
pub(super) struct Backlog {
    /// Each event's id and line (without its newline).
    events: VecDeque<(u64, Bytes)>,
    bytes: usize,
    /// The id the next event gets (from 1).
    next: u64,
    /// Events up to this id were handed to a stream.
    pub(super) sent: u64,
    /// Events dropped unsent since the last warning, and when that was: a
    /// chatty server with no reader is one line per burst, not per message.
    dropped: u64,
    warned: Option<Instant>,
}

impl Backlog {
    /// Keeps `line` as the next event; its id.
    pub(super) fn push(&mut self, line: &Bytes) -> u64 {
        self.next = self.next.max(1);
        let id = self.next;
        self.next += 1;
        self.bytes += line.len();
        self.events.push_back((id, line.clone()));
        while self.events.len() > BACKLOG_EVENTS
            || (self.bytes > BACKLOG_BYTES && self.events.len() > 1)
        {
            if let Some((old, e)) = self.events.pop_front() {
                self.bytes -= e.len();
                if old > self.sent {
                    self.dropped += 1;
                }
            }
        }
        self.warn_dropped(false);
        id
    }

    /// What a new stream replays: the events after `last` (its
    /// `Last-Event-ID`), or those not yet handed to a stream; all of them
    /// count as handed over from now.
    pub(super) fn replay(&mut self, last: Option<u64>) -> Vec<Outgoing> {
        let after = last.unwrap_or(self.sent);
        let missed = self
            .events
            .iter()
            .filter(|(id, _)| *id > after)
            .map(|(id, line)| Outgoing::event(Some(*id), line.clone()))
            .collect();
        self.sent = self.next.saturating_sub(1);
        missed
    }

    /// Says how many events were dropped unsent, at most once per
    /// [`DROP_WARNING_EVERY`] (or now, when `last`).
    pub(super) fn warn_dropped(&mut self, last: bool) {
        let due = self
            .warned
            .is_none_or(|at| at.elapsed() >= DROP_WARNING_EVERY);
        if self.dropped == 0 || !(due || last) {
            return;
        }
        tracing::warn!(
            dropped = self.dropped,
            "no client stream took these messages before the session's backlog was full; dropped (the client reconnects its GET stream to get what is still kept)"
        );
        self.dropped = 0;
        self.warned = Some(Instant::now());
    }
}
