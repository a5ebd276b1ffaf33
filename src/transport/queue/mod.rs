//! The queue in front of each outgoing pipe, bounded in bytes.
//!
//! Senders serialize a message straight into the queue's buffer (under a
//! lock, in the order they are called), except a big payload, which stays
//! where it is and is written from there (see [`Taken`]); the pipe's writer
//! task swaps the buffer out and writes it whole, so a burst costs one
//! `write` (a `writev` with the big payloads between). A peer that
//! stops reading fills its pipe, then this buffer; past
//! [`MAX_QUEUED_BYTES`] senders wait (`poll_ready`, `send`), and the reader
//! behind them stops reading: memory stays bounded whatever the message
//! size, and the pressure reaches the other peer.
//!
//! A queue for a peer that is not a pipe (an HTTP client of the front, a
//! server at a URL: [`Queue::of_messages`]) keeps the messages themselves:
//! the transport taking them needs each one's kind and id to choose where
//! it goes, and writes it once, where it leaves; nothing is written only
//! to be parsed back.

use mcp_chain_middleware::payload::Text;
use mcp_chain_middleware::Message;
use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

/// What goes on one line of output.
#[derive(Debug)]
pub(crate) enum Outgoing {
    One(Message),
    /// The answers to a batch, written as one JSON array.
    Batch(Vec<Message>),
}

impl Outgoing {
    /// Its messages, one by one: a lone message without a `Vec` made for
    /// it (what a gateway's hub or the pool reads a session's output as).
    pub(crate) fn into_messages(self) -> impl Iterator<Item = Message> {
        let (one, batch) = match self {
            Self::One(message) => (Some(message), Vec::new()),
            Self::Batch(messages) => (None, messages),
        };
        one.into_iter().chain(batch)
    }

    /// About how many bytes its line takes, without writing it: what a
    /// queue of messages counts against [`MAX_QUEUED_BYTES`].
    fn estimated_len(&self) -> usize {
        match self {
            Self::One(m) => m.estimated_len(),
            Self::Batch(ms) => ms.iter().map(Message::estimated_len).sum(),
        }
    }

    /// Writes the line into `buf`, except a big payload that goes out as
    /// it stands: that is handed back with where in `buf` it belongs (see
    /// [`Taken`]).
    pub(crate) fn write_into(self, buf: &mut Vec<u8>) -> Option<(usize, Text)> {
        match self {
            Self::One(m) => m.write_line_around(buf),
            Self::Batch(ms) => {
                Message::write_batch(&ms, buf);
                None
            }
        }
    }
}

/// Bytes a queue holds before senders wait. A single message may take it
/// past this (it is never split), so the bound is this plus one message.
pub(crate) const MAX_QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// What the writer takes from a queue at once: the queued bytes, and the
/// big payloads that go between them, each with where in `bytes` it
/// belongs, in order. A 200 KB list or a 10 MB result is written from the
/// message it came in, in one `writev` with the lines around it, rather
/// than copied into the queue first.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    pub(crate) bytes: Vec<u8>,
    pub(crate) parts: Vec<(usize, Text)>,
    /// A queue of messages' ([`Queue::of_messages`]): the messages, as
    /// they were pushed.
    pub(crate) messages: Vec<Outgoing>,
}

impl Taken {
    /// Writes it all, in order.
    pub(crate) async fn write_to<W: AsyncWrite + Unpin + ?Sized>(
        &self,
        out: &mut W,
    ) -> io::Result<()> {
        if self.parts.is_empty() {
            return out.write_all(&self.bytes).await;
        }
        let mut slices = Vec::with_capacity(2 * self.parts.len() + 1);
        let mut from = 0;
        for (at, text) in &self.parts {
            slices.push(IoSlice::new(&self.bytes[from..*at]));
            slices.push(IoSlice::new(text.as_bytes()));
            from = *at;
        }
        slices.push(IoSlice::new(&self.bytes[from..]));
        if !out.is_write_vectored() {
            for slice in &slices {
                out.write_all(slice).await?;
            }
            return Ok(());
        }
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            let n = out.write_vectored(&rest[..rest.len().min(IOV_MAX)]).await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            IoSlice::advance_slices(&mut rest, n);
        }
        Ok(())
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.parts.clear();
        self.messages.clear();
    }

    /// Everything, as one run of bytes.
    #[cfg(test)]
    pub(crate) fn joined(&self) -> Vec<u8> {
        let mut all = Vec::new();
        let mut from = 0;
        for (at, text) in &self.parts {
            all.extend_from_slice(&self.bytes[from..*at]);
            all.extend_from_slice(text.as_bytes());
            from = *at;
        }
        all.extend_from_slice(&self.bytes[from..]);
        all
    }
}

/// At most this many pieces go to one `writev` (Linux's `IOV_MAX`).
const IOV_MAX: usize = 1024;

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
    /// Big payloads, each to go where `buf` had got to (see [`Taken`]).
    parts: Vec<(usize, Text)>,
    /// Their bytes, counted against [`MAX_QUEUED_BYTES`] with `buf`'s.
    parts_bytes: usize,
    /// A queue of messages: they wait here, unwritten, and
    /// `messages_bytes` estimates their size for the bound.
    keeps_messages: bool,
    messages: Vec<Outgoing>,
    messages_bytes: usize,
    /// Senders waiting for room.
    waiting: Vec<Waker>,
    /// No more writes: pushes are dropped, nobody waits.
    closed: bool,
}

impl State {
    fn queued_bytes(&self) -> usize {
        self.buf.len() + self.parts_bytes + self.messages_bytes
    }
}

impl Queue {
    /// A queue that keeps messages rather than their bytes, for a peer
    /// that is not a pipe (see the module's opening).
    pub(crate) fn of_messages() -> Self {
        let queue = Self::default();
        queue.lock().keeps_messages = true;
        queue
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ready when there is room (or the queue is closed: a push is then
    /// dropped, which callers see).
    pub(crate) fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.lock();
        if state.closed || state.queued_bytes() < MAX_QUEUED_BYTES {
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
        let was_empty = state.buf.is_empty() && state.messages.is_empty();
        if state.keeps_messages {
            state.messages_bytes += out.estimated_len();
            state.messages.push(out);
        } else if let Some((at, text)) = out.write_into(&mut state.buf) {
            state.parts_bytes += text.len();
            state.parts.push((at, text));
        }
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
            state.parts = Vec::new();
            state.parts_bytes = 0;
            state.messages = Vec::new();
            state.messages_bytes = 0;
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
    pub(crate) async fn take(&self, spare: &mut Taken) -> bool {
        loop {
            let notified = self.0.writer.notified();
            {
                let mut state = self.lock();
                // A part always comes with bytes before it (its line's
                // head), so bytes tell whether anything is queued.
                if !state.buf.is_empty() || !state.messages.is_empty() {
                    std::mem::swap(&mut state.buf, &mut spare.bytes);
                    std::mem::swap(&mut state.parts, &mut spare.parts);
                    std::mem::swap(&mut state.messages, &mut spare.messages);
                    state.parts_bytes = 0;
                    state.messages_bytes = 0;
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
mod tests;
