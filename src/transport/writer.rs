//! The task that owns one outgoing pipe (our stdout, or the child's stdin).
//!
//! It takes whatever its [`Queue`] holds, already serialized, writes it and
//! flushes, so every message is out before the task waits again and a burst
//! costs one `write` (or `writev`, see [`Taken`]). A peer that stops reading fills the pipe, the write
//! waits, the queue fills, and senders wait: memory stays bounded.

use super::queue::{Queue, Taken};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// After big writes the buffer is dropped rather than kept, so one 10 MB
/// result does not pin 10 MB for the rest of the session; but only after
/// `SMALL_WRITES_BEFORE_SHRINK` small writes in a row, so a stream of big
/// results reuses it.
const RETAINED_BUFFER_BYTES: usize = 4 * 1024 * 1024;
const SMALL_WRITES_BEFORE_SHRINK: u32 = 64;

/// Writes what `queue` holds to `out` until the queue is closed and empty
/// or the pipe breaks. A broken pipe closes the queue when `close_on_error`
/// (the client is gone); the server's queue stays open for a restart.
pub(crate) async fn run<W: AsyncWrite + Unpin>(
    queue: Queue,
    mut out: W,
    peer: &'static str,
    close_on_error: bool,
) {
    let mut taken = Taken {
        bytes: Vec::with_capacity(64 * 1024),
        ..Taken::default()
    };
    let mut small_writes = 0;
    while queue.take(&mut taken).await {
        if taken.bytes.len() > RETAINED_BUFFER_BYTES {
            small_writes = 0;
        } else {
            small_writes += 1;
        }
        let written = async {
            taken.write_to(&mut out).await?;
            out.flush().await
        };
        if let Err(e) = written.await {
            tracing::debug!(peer, error = %e, "pipe closed; dropping what is left for it");
            if close_on_error {
                queue.close();
            }
            return;
        }
        taken.clear();
        if taken.bytes.capacity() > RETAINED_BUFFER_BYTES
            && small_writes > SMALL_WRITES_BEFORE_SHRINK
        {
            taken.bytes = Vec::with_capacity(64 * 1024);
        }
    }
    let _ = out.shutdown().await;
}
