//! The task that owns one outgoing pipe (our stdout, or the child's stdin).
//!
//! Messages arrive on a bounded channel; the task serializes whatever is
//! queued into one buffer, writes it and flushes, so every message is out
//! before the task waits again, and a burst costs one `write` instead of one
//! per message. A peer that stops reading fills the pipe, the write waits,
//! the channel fills, and senders wait in `poll_ready`: memory stays bounded.

use mcp_chain_middleware::Message;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// Messages queued for one pipe before senders must wait.
pub(crate) const WRITE_QUEUE_MESSAGES: usize = 256;

/// Stop gathering queued messages into one write past this many bytes.
const WRITE_BATCH_BYTES: usize = 1024 * 1024;

/// What goes on one line of output.
#[derive(Debug)]
pub(crate) enum Outgoing {
    One(Message),
    /// The answers to a batch, written as one JSON array.
    Batch(Vec<Message>),
}

impl Outgoing {
    fn write_line(&self, buf: &mut Vec<u8>) {
        match self {
            Self::One(m) => m.write_line(buf),
            Self::Batch(ms) => {
                serde_json::to_writer(&mut *buf, ms).expect("serializing to a Vec cannot fail");
                buf.push(b'\n');
            }
        }
    }
}

impl From<Message> for Outgoing {
    fn from(m: Message) -> Self {
        Self::One(m)
    }
}

/// Writes messages to `out` until `close` fires (then writes what is still
/// queued), every sender is gone, or the pipe breaks. Returns the queue, so
/// a restarted server's writer can take it over.
pub(crate) async fn run<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Outgoing>,
    mut out: W,
    mut close: oneshot::Receiver<()>,
    peer: &'static str,
) -> mpsc::Receiver<Outgoing> {
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut closing = false;
    loop {
        let first = if closing {
            match rx.try_recv() {
                Ok(m) => m,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                biased;
                m = rx.recv() => match m {
                    Some(m) => m,
                    None => break,
                },
                _ = &mut close => {
                    closing = true;
                    continue;
                }
            }
        };
        first.write_line(&mut buf);
        while buf.len() < WRITE_BATCH_BYTES {
            match rx.try_recv() {
                Ok(m) => m.write_line(&mut buf),
                Err(_) => break,
            }
        }
        let written = async {
            out.write_all(&buf).await?;
            out.flush().await
        };
        if let Err(e) = written.await {
            tracing::debug!(peer, error = %e, "pipe closed; dropping what is left for it");
            break;
        }
        buf.clear();
        if buf.capacity() > WRITE_BATCH_BYTES * 4 {
            buf.shrink_to(64 * 1024);
        }
    }
    let _ = out.shutdown().await;
    rx
}
