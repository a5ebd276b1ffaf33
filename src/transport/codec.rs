//! Newline-delimited JSON framing, shared by both pipes (client and server).
//!
//! One message per line; `\r\n` is tolerated; blank lines are skipped. A line
//! longer than the cap is never buffered whole: once the cap is passed the
//! reader discards bytes up to the next newline and reports the line's size,
//! so a 100 MB line costs at most the cap in memory and gets one error.

use super::budget::{Budget, Reserved, Spent};
use mcp_chain_middleware::payload::BIG_PAYLOAD_BYTES;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// How long a reader waits for room in the budget of bytes in flight
/// before it refuses the message it is reading (the peer is slowed
/// meanwhile, as by a full pipe).
const BUDGET_WAIT: Duration = Duration::from_secs(30);

/// How much the reader asks the OS for at a time.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// After big messages the buffer is shrunk back to this, so one 10 MB
/// result does not pin 10 MB for the rest of the session...
const RETAINED_BUFFER_BYTES: usize = 1024 * 1024;

/// ...but only after this many reads in a row found no big line: a stream
/// of big results keeps its buffer instead of growing it anew (copies and
/// page faults) for each one.
const SMALL_READS_BEFORE_SHRINK: u32 = 64;

/// How much of an over-long line is kept to learn what it was.
pub(crate) const HEAD_BYTES: usize = 4096;

/// From this size on, a line is handed over with the buffer it was read
/// into ([`Frame::Shared`]) instead of lent, so its payload can stay there:
/// the size from which a payload is big, so no smaller line is handed over
/// for nothing.
pub(crate) const SHARED_LINE_BYTES: usize = BIG_PAYLOAD_BYTES;

/// What [`FrameReader::next`] found.
#[derive(Debug, PartialEq)]
pub(crate) enum Frame<'a> {
    /// One line, without its `\n` (or `\r\n`).
    Line(&'a [u8]),
    /// A line of [`SHARED_LINE_BYTES`] or more: `buf[at]`, the buffer given
    /// up to it (the reader goes on in a new one).
    Shared(Arc<Vec<u8>>, Range<usize>),
    /// A line over the cap, skipped: its length in bytes, and its first
    /// bytes (up to [`HEAD_BYTES`]), enough to find a response's id.
    TooLong { len: usize, head: &'a [u8] },
    /// A line the budget of bytes in flight had no room for, skipped.
    OverBudget {
        len: usize,
        head: &'a [u8],
        why: Spent,
    },
}

/// Reads lines from a pipe. The buffer lives in the struct, so a `next`
/// dropped inside `select!` loses nothing.
#[derive(Debug)]
pub(crate) struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the bytes not yet handed out.
    pos: usize,
    /// Bytes before this (from `pos`) hold no newline: don't scan them again.
    scanned: usize,
    max_line_bytes: usize,
    /// Bytes of an over-long line dropped so far.
    discarding: Option<usize>,
    /// Reads since the buffer last held more than `RETAINED_BUFFER_BYTES`.
    small_reads: u32,
    /// The first bytes of the over-long line being dropped.
    head: Vec<u8>,
    eof: bool,
    /// The process's budget of bytes in flight, the room this reader holds
    /// in it for the big line it is reading, and why the line being dropped
    /// is (when the budget had no room for it).
    budget: Option<Arc<Budget>>,
    reserved: Option<Reserved>,
    spent: Option<Spent>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(inner: R, max_line_bytes: usize) -> Self {
        Self {
            inner,
            buf: Vec::with_capacity(READ_CHUNK_BYTES),
            pos: 0,
            scanned: 0,
            max_line_bytes,
            discarding: None,
            small_reads: 0,
            head: Vec::new(),
            eof: false,
            budget: None,
            reserved: None,
            spent: None,
        }
    }

    /// Counts the big lines this reader reads against `budget`.
    pub(crate) fn with_budget(mut self, budget: Arc<Budget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The frame of a line dropped (over the cap, or over the budget).
    fn dropped(&mut self, len: usize) -> Frame<'_> {
        match self.spent.take() {
            Some(why) => Frame::OverBudget {
                len,
                head: &self.head,
                why,
            },
            None => Frame::TooLong {
                len,
                head: &self.head,
            },
        }
    }

    pub(crate) fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// The next frame, or `None` at end of input.
    pub(crate) async fn next(&mut self) -> std::io::Result<Option<Frame<'_>>> {
        loop {
            let pending = &self.buf[self.pos..];
            if let Some(offset) = memchr::memchr(b'\n', &pending[self.scanned..]) {
                let end = self.pos + self.scanned + offset;
                let start = std::mem::replace(&mut self.pos, end + 1);
                self.scanned = 0;
                if let Some(dropped) = self.discarding.take() {
                    return Ok(Some(self.dropped(dropped + (end - start))));
                }
                let mut line = &self.buf[start..end];
                if let [rest @ .., b'\r'] = line {
                    line = rest;
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                // Re-borrow so the returned slice ties to `self`.
                let (s, e) = (start, start + line.len());
                if e - s >= SHARED_LINE_BYTES {
                    // What follows the line goes to a new buffer; the line
                    // keeps this one.
                    let mut next =
                        Vec::with_capacity(READ_CHUNK_BYTES.max(self.buf.len() - self.pos));
                    next.extend_from_slice(&self.buf[self.pos..]);
                    let buf = Arc::new(std::mem::replace(&mut self.buf, next));
                    self.pos = 0;
                    if let Some(budget) = &self.budget {
                        budget.hold(self.reserved.take(), &buf);
                    }
                    return Ok(Some(Frame::Shared(buf, s..e)));
                }
                return Ok(Some(Frame::Line(&self.buf[s..e])));
            }
            self.scanned = pending.len();
            if self.discarding.is_none() && pending.len() > self.max_line_bytes {
                self.discarding = Some(0);
                self.head.clear();
                self.head
                    .extend_from_slice(&pending[..pending.len().min(HEAD_BYTES)]);
            }
            if let Some(dropped) = self.discarding.as_mut() {
                *dropped += self.buf.len() - self.pos;
                self.buf.clear();
                self.pos = 0;
                self.scanned = 0;
            }
            if self.eof {
                let rest = self.buf.len() - self.pos;
                if let Some(dropped) = self.discarding.take() {
                    return Ok(Some(self.dropped(dropped)));
                }
                if rest == 0 {
                    return Ok(None);
                }
                // A last line without its newline: take it as a line.
                self.buf.push(b'\n');
                continue;
            }
            self.fill().await?;
        }
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.make_room().await;
        if self.buf.len() > RETAINED_BUFFER_BYTES {
            self.small_reads = 0;
        } else if self.buf.capacity() > RETAINED_BUFFER_BYTES {
            self.small_reads += 1;
            if self.small_reads > SMALL_READS_BEFORE_SHRINK {
                self.buf.shrink_to(READ_CHUNK_BYTES.max(self.buf.len()));
            }
        }
        self.buf.reserve(READ_CHUNK_BYTES);
        if self.inner.read_buf(&mut self.buf).await? == 0 {
            self.eof = true;
        }
        Ok(())
    }
}

impl<R> FrameReader<R> {
    /// Before a big line grows by another read: room for it in the budget,
    /// waited for; without room, the line is dropped as it comes.
    async fn make_room(&mut self) {
        let Some(budget) = self.budget.clone() else {
            return;
        };
        let pending = self.buf.len();
        if self.discarding.is_some() || pending < SHARED_LINE_BYTES {
            return;
        }
        let wanted = pending + READ_CHUNK_BYTES;
        if let Err(why) = budget
            .reserve(&mut self.reserved, wanted, BUDGET_WAIT)
            .await
        {
            tracing::warn!("{why}; the message being read is refused");
            self.reserved = None;
            self.spent = Some(why);
            self.head.clear();
            self.head
                .extend_from_slice(&self.buf[..pending.min(HEAD_BYTES)]);
            self.buf.clear();
            self.discarding = Some(pending);
            self.scanned = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Result<String, usize>> {
        // A tiny read size exercises lines split across reads.
        let (mut tx, rx) = tokio::io::duplex(7);
        let data = input.to_vec();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            tx.write_all(&data).await.expect("write");
        });
        let mut reader = FrameReader::new(rx, max);
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await.expect("read") {
            out.push(match frame {
                Frame::Line(l) => Ok(String::from_utf8_lossy(l).into_owned()),
                Frame::Shared(buf, at) => {
                    assert!(at.len() >= SHARED_LINE_BYTES);
                    Ok(String::from_utf8_lossy(&buf[at]).into_owned())
                }
                Frame::TooLong { len, head } => {
                    assert!(head.len() <= HEAD_BYTES);
                    Err(len)
                }
                Frame::OverBudget { .. } => unreachable!("no budget here"),
            });
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_tolerates_crlf_and_skips_blanks() {
        let got = frames(b"{\"a\":1}\r\n\n  \r\n{\"b\":2}\n{\"c\":3}", 1024).await;
        assert_eq!(
            got,
            vec![
                Ok("{\"a\":1}".into()),
                Ok("{\"b\":2}".into()),
                Ok("{\"c\":3}".into())
            ]
        );
    }

    #[tokio::test]
    async fn a_big_line_is_handed_over_and_what_follows_is_kept() {
        let big = "b".repeat(SHARED_LINE_BYTES);
        let bigger = "c".repeat(2 * SHARED_LINE_BYTES + 5);
        let input = format!("small\n{big}\r\nnext\n{bigger}\nlast");
        let got = frames(input.as_bytes(), 1 << 20).await;
        assert_eq!(
            got,
            vec![
                Ok("small".into()),
                Ok(big),
                Ok("next".into()),
                Ok(bigger),
                Ok("last".into())
            ]
        );
    }

    #[tokio::test]
    async fn over_long_line_is_reported_and_skipped() {
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100));
        input.extend(b"\nafter\n");
        let got = frames(&input, 50).await;
        assert_eq!(got, vec![Ok("short".into()), Err(100), Ok("after".into())]);
    }

    #[tokio::test]
    async fn over_long_last_line_without_newline_is_reported() {
        let got = frames(&[b'y'; 80], 50).await;
        assert_eq!(got, vec![Err(80)]);
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_cap_passes() {
        let mut input = vec![b'z'; 50];
        input.push(b'\n');
        let got = frames(&input, 50).await;
        assert_eq!(got, vec![Ok("z".repeat(50))]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_big_line_waits_for_room_in_the_budget_and_is_refused_without() {
        use crate::transport::budget::Budget;
        let line = |c: u8| {
            let mut l = vec![c; 2 * SHARED_LINE_BYTES];
            l.push(b'\n');
            l
        };
        let budget = Budget::new(3 * SHARED_LINE_BYTES + READ_CHUNK_BYTES);
        let (mut tx, rx) = tokio::io::duplex(1 << 20);
        let mut input = line(b'a');
        input.extend(line(b'b'));
        input.extend(b"{}\n");
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            tx.write_all(&input).await.expect("write");
        });
        let mut reader = FrameReader::new(rx, 64 << 20).with_budget(budget.clone());
        // The first is held while it lives (a payload left in it).
        let first = match reader.next().await.expect("read") {
            Some(Frame::Shared(buf, _)) => buf,
            other => panic!("{other:?}"),
        };
        assert!(budget.used() >= 2 * SHARED_LINE_BYTES);
        // No room for the second while the first lives: refused, skipped,
        // and what follows it is read as usual.
        match reader.next().await.expect("read") {
            Some(Frame::OverBudget { len, why, .. }) => {
                assert_eq!(len, 2 * SHARED_LINE_BYTES);
                assert!(why.used >= 2 * SHARED_LINE_BYTES, "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(reader.next().await.expect("read"), Some(Frame::Line(b"{}")));
        drop(first);
        assert_eq!(budget.used(), 0);
    }
}
