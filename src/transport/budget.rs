//! The process's budget for message bytes in flight. Each reader bounds
//! one message (`max_message_bytes`), but a proxy with many peers (the
//! HTTP front's sessions, each with its server) holds many at once: 64
//! sessions each moving a 64 MiB result is 4 GiB, and a server or client
//! that wants the machine out of memory need only send. So the big
//! messages received and still alive share one budget,
//! `proxy.max_bytes_in_flight`; past it, a reader waits for room before it
//! takes more (the peer is slowed, as a full pipe slows it), and one that
//! waits too long refuses the message with a clear error.
//!
//! What counts: a message of [`SHARED_LINE_BYTES`] or more, from the
//! moment its reader has reserved room to read it until the last of the
//! buffer it was read into is dropped (a payload left in its line keeps
//! the line alive; the budget follows it with a `Weak`). Small messages
//! are bounded by the queues and are not counted.

use crate::transport::codec::SHARED_LINE_BYTES;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;
use tokio::time::Instant;

/// How often a reader waiting for room looks again (buffers are freed
/// where they are dropped, which tells nobody).
const RECHECK: Duration = Duration::from_millis(10);

/// The budget, shared by every reader of the process.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Buffers of received messages, with their sizes: counted while alive.
    held: Vec<(Weak<Vec<u8>>, usize)>,
    /// Room reserved by readers for messages they are reading.
    reserved: usize,
}

/// Room a reader reserved for the message it is reading. Given back when
/// dropped, or turned into a held buffer ([`Budget::hold`]).
#[derive(Debug)]
pub(crate) struct Reserved {
    budget: Arc<Budget>,
    bytes: usize,
}

/// The budget stayed spent for as long as the reader could wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("mcp-chain holds {used} bytes of messages in flight, and {wanted} more would pass proxy.max_bytes_in_flight ({limit})")]
pub(crate) struct Spent {
    pub(crate) used: usize,
    pub(crate) wanted: usize,
    pub(crate) limit: usize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            state: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes counted now.
    pub(crate) fn used(&self) -> usize {
        self.lock().used()
    }

    /// Waits (up to `wait`) until the budget is not spent: before a reader
    /// that cannot tell a message's size ahead takes the next one.
    pub(crate) async fn wait_for_room(&self, wait: Duration) -> Result<(), Spent> {
        let deadline = Instant::now() + wait;
        loop {
            let used = self.used();
            if used < self.limit {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Spent {
                    used,
                    wanted: 1,
                    limit: self.limit,
                });
            }
            tokio::time::sleep(RECHECK.min(deadline - Instant::now())).await;
        }
    }

    /// Grows `reserved` (a reader's room, none at first) to `bytes`,
    /// waiting up to `wait` for the room. A message that could never fit
    /// (`bytes` over the whole budget) is refused at once.
    pub(crate) async fn reserve(
        self: &Arc<Self>,
        reserved: &mut Option<Reserved>,
        bytes: usize,
        wait: Duration,
    ) -> Result<(), Spent> {
        let have = reserved.as_ref().map_or(0, |r| r.bytes);
        if bytes <= have {
            return Ok(());
        }
        let more = bytes - have;
        let deadline = Instant::now() + wait;
        loop {
            let used = {
                let mut state = self.lock();
                let used = state.used();
                if used + more <= self.limit {
                    state.reserved += more;
                    drop(state);
                    match reserved {
                        Some(r) => r.bytes += more,
                        None => {
                            *reserved = Some(Reserved {
                                budget: self.clone(),
                                bytes: more,
                            })
                        }
                    }
                    return Ok(());
                }
                used
            };
            let spent = Spent {
                used,
                wanted: more,
                limit: self.limit,
            };
            if bytes > self.limit || Instant::now() >= deadline {
                return Err(spent);
            }
            tokio::time::sleep(RECHECK.min(deadline - Instant::now())).await;
        }
    }

    /// The message read with `reserved` is `buf`: counted from now on for
    /// as long as `buf` (or a payload left in it) lives.
    pub(crate) fn hold(&self, reserved: Option<Reserved>, buf: &Arc<Vec<u8>>) {
        let mut state = self.lock();
        if let Some(mut r) = reserved {
            state.reserved -= r.bytes;
            r.bytes = 0;
        }
        if buf.len() >= SHARED_LINE_BYTES {
            state.held.push((Arc::downgrade(buf), buf.len()));
        }
    }
}

impl State {
    fn used(&mut self) -> usize {
        self.held.retain(|(buf, _)| buf.strong_count() > 0);
        self.reserved + self.held.iter().map(|(_, n)| n).sum::<usize>()
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.lock().reserved -= self.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[tokio::test(start_paused = true)]
    async fn a_held_buffer_counts_until_it_is_dropped_and_readers_wait_for_room() {
        let budget = Budget::new(4 * MIB);
        let mut first = None;
        budget
            .reserve(&mut first, 3 * MIB, Duration::ZERO)
            .await
            .expect("room");
        let buf = Arc::new(vec![0u8; 3 * MIB]);
        budget.hold(first, &buf);
        assert_eq!(budget.used(), 3 * MIB);
        // No room for another 2 MiB: refused once the wait is over.
        let mut second = None;
        let spent = budget
            .reserve(&mut second, 2 * MIB, Duration::from_secs(1))
            .await
            .expect_err("spent");
        assert_eq!((spent.used, spent.wanted), (3 * MIB, 2 * MIB));
        assert!(second.is_none());
        // A payload left in the buffer keeps it counted.
        let payload = buf.clone();
        drop(buf);
        assert_eq!(budget.used(), 3 * MIB);
        // Freed while a reader waits: it gets its room.
        let waiter = {
            let budget = budget.clone();
            tokio::spawn(async move {
                let mut r = None;
                budget
                    .reserve(&mut r, 2 * MIB, Duration::from_secs(5))
                    .await
                    .map(|()| r)
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(payload);
        let reserved = waiter.await.expect("joined").expect("room once freed");
        assert_eq!(budget.used(), 2 * MIB);
        drop(reserved);
        assert_eq!(budget.used(), 0);
        // More than the whole budget is refused at once.
        let mut huge = None;
        assert!(budget
            .reserve(&mut huge, 5 * MIB, Duration::from_secs(60))
            .await
            .is_err());
    }

    #[tokio::test]
    async fn a_reservation_grows_and_is_given_back() {
        let budget = Budget::new(4 * MIB);
        let mut r = None;
        budget
            .reserve(&mut r, MIB, Duration::ZERO)
            .await
            .expect("room");
        budget
            .reserve(&mut r, 3 * MIB, Duration::ZERO)
            .await
            .expect("room");
        assert_eq!(budget.used(), 3 * MIB);
        budget
            .reserve(&mut r, 2 * MIB, Duration::ZERO)
            .await
            .expect("has it");
        assert_eq!(budget.used(), 3 * MIB, "never shrinks by asking less");
        drop(r);
        assert_eq!(budget.used(), 0);
    }
}
