//! The queue in front of each outgoing pipe, bounded in bytes.
//!
//! Senders serialize a message straight into the queue's buffer (under a
//! lock, in the order they are called); the pipe's writer task swaps the
//! buffer out and writes it whole, so a burst costs one `write`. A peer that
//! stops reading fills its pipe, then this buffer; past
//! [`MAX_QUEUED_BYTES`] senders wait (`poll_ready`, `send`), and the reader
//! behind them stops reading: memory stays bounded whatever the message
//! size, and the pressure reaches the other peer.

use crate::front::writer::Outgoing;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use tokio::sync::Notify;

/// Bytes a queue holds before senders wait. A single message may take it
/// past this (it is never split), so the bound is this plus one message.
pub(crate) const MAX_QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// One outgoing pipe's queue; clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Queue(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    /// Wakes the writer when the buffer stops being empty, or on close.
    writer: Notify,
}

#[derive(Debug, Default)]
struct State {
    buf: Vec<u8>,
    /// Senders waiting for room.
    waiting: Vec<Waker>,
    /// No more writes: pushes are dropped, nobody waits.
    closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ready when there is room (or the queue is closed: a push is then
    /// dropped, which callers see).
    pub(crate) fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.lock();
        if state.closed || state.buf.len() < MAX_QUEUED_BYTES {
            return Poll::Ready(());
        }
        state.waiting.push(cx.waker().clone());
        Poll::Pending
    }

    /// Appends a message. `false` when the queue is closed.
    pub(crate) fn push(&self, out: Outgoing) -> bool {
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        let was_empty = state.buf.is_empty();
        out.write_line(&mut state.buf);
        drop(state);
        if was_empty {
            self.0.writer.notify_one();
        }
        true
    }

    /// Waits for room, then appends. `false` when the queue is closed.
    pub(crate) async fn send(&self, out: Outgoing) -> bool {
        poll_fn(|cx| self.poll_ready(cx)).await;
        self.push(out)
    }

    /// Drops whatever is queued (for a server that died with it).
    pub(crate) fn clear(&self) {
        let waiting = {
            let mut state = self.lock();
            state.buf = Vec::new();
            std::mem::take(&mut state.waiting)
        };
        waiting.into_iter().for_each(Waker::wake);
    }

    /// No more messages: the writer writes what is queued and stops.
    pub(crate) fn close(&self) {
        let waiting = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.waiting)
        };
        waiting.into_iter().for_each(Waker::wake);
        self.0.writer.notify_one();
    }

    /// For the writer: waits for bytes, swaps them into `spare` (which must
    /// be empty) and returns `true`; `false` once closed and empty.
    pub(crate) async fn take(&self, spare: &mut Vec<u8>) -> bool {
        loop {
            let notified = self.0.writer.notified();
            {
                let mut state = self.lock();
                if !state.buf.is_empty() {
                    std::mem::swap(&mut state.buf, spare);
                    let waiting = std::mem::take(&mut state.waiting);
                    drop(state);
                    waiting.into_iter().for_each(Waker::wake);
                    return true;
                }
                if state.closed {
                    return false;
                }
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_chain_middleware::Message;

    fn ping(n: u64) -> Outgoing {
        Outgoing::One(Message::request(n, "ping", None))
    }

    #[tokio::test]
    async fn messages_come_out_in_order_in_one_take() {
        let queue = Queue::default();
        assert!(queue.push(ping(1)) && queue.push(ping(2)));
        let mut buf = Vec::new();
        assert!(queue.take(&mut buf).await);
        let text = String::from_utf8(buf).expect("utf-8");
        let ids: Vec<_> = text.lines().map(|l| l.contains("\"id\":1")).collect();
        assert_eq!(ids, [true, false]);
    }

    #[tokio::test]
    async fn a_full_queue_is_not_ready_until_taken() {
        let queue = Queue::default();
        let big = Outgoing::One(Message::request(
            1,
            "x",
            Some(serde_json::json!({"pad": "p".repeat(MAX_QUEUED_BYTES)})),
        ));
        assert!(queue.push(big));
        let waker = Waker::noop().clone();
        assert!(queue
            .poll_ready(&mut Context::from_waker(&waker))
            .is_pending());
        let mut buf = Vec::new();
        assert!(queue.take(&mut buf).await);
        assert!(queue
            .poll_ready(&mut Context::from_waker(&waker))
            .is_ready());
    }

    #[tokio::test]
    async fn close_drains_then_ends_and_refuses_pushes() {
        let queue = Queue::default();
        assert!(queue.push(ping(1)));
        queue.close();
        assert!(!queue.push(ping(2)));
        let mut buf = Vec::new();
        assert!(queue.take(&mut buf).await);
        buf.clear();
        assert!(!queue.take(&mut buf).await);
    }
}
