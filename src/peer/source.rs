//! What a peer sends, as the relay reads it: one message (or batch) at a time,
//! parsed once. From a pipe, the lines a [`FrameReader`] frames are parsed
//! here; a remote upstream parses each message it takes from an HTTP body
//! or an SSE event itself (it must know which request a body answers) and
//! hands over the parse through a channel.

use crate::transport::budget::{Budget, Reserved, Spent};
use crate::transport::codec::{Frame, FrameReader};
use mcp_chain_middleware::message::{response_id, Incoming};
use mcp_chain_middleware::payload::BIG_PAYLOAD_BYTES;
use mcp_chain_middleware::RequestId;
use std::sync::Arc;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;

/// One message read from a peer.
#[derive(Debug)]
pub(crate) enum Read {
    Parsed(Incoming),
    /// Not JSON: why, and the id of the answer it was, when that could be
    /// read (see [`response_id`]).
    Unparsable {
        error: serde_json::Error,
        id: Option<RequestId>,
    },
    /// Over `max_message_bytes` and skipped: its length, the cap, and the
    /// id of the answer it was, when that could be read.
    TooLong {
        len: usize,
        limit: usize,
        id: Option<RequestId>,
    },
    /// Skipped because the budget of bytes in flight had no room for it:
    /// its length (so far), why, and the id of the answer it was.
    OverBudget {
        len: usize,
        why: Spent,
        id: Option<RequestId>,
    },
}

impl Read {
    /// A line (or an SSE event's data) parsed.
    pub(crate) fn parse(line: &[u8]) -> Self {
        match Incoming::parse(line) {
            Ok(incoming) => Self::Parsed(incoming),
            Err(error) => Self::Unparsable {
                error,
                id: response_id(line),
            },
        }
    }
}

impl Read {
    /// [`Self::parse`] for a message handed over whole (an HTTP body, an
    /// event's data): a big payload stays in it rather than being copied.
    pub(crate) fn from_vec(bytes: Vec<u8>) -> Self {
        Self::from_arc(bytes, |_| ())
    }

    /// [`Self::from_vec`], a big message counted in `budget` (taking over
    /// the room reserved to read it) for as long as it lives.
    pub(crate) fn from_vec_held(
        bytes: Vec<u8>,
        budget: &Budget,
        reserved: Option<Reserved>,
    ) -> Self {
        Self::from_arc(bytes, |buf| budget.hold(reserved, buf))
    }

    fn from_arc(bytes: Vec<u8>, hold: impl FnOnce(&Arc<Vec<u8>>)) -> Self {
        if bytes.len() < BIG_PAYLOAD_BYTES {
            return Self::parse(&bytes);
        }
        let len = bytes.len();
        let bytes = Arc::new(bytes);
        hold(&bytes);
        match Incoming::parse_shared(bytes.clone(), 0..len) {
            Ok(incoming) => Self::Parsed(incoming),
            Err(error) => Self::Unparsable {
                error,
                id: response_id(&bytes),
            },
        }
    }
}

/// Where a reading side's messages come from.
pub(crate) trait Source {
    /// The next message; `None` at end of input.
    async fn next(&mut self) -> std::io::Result<Option<Read>>;
}

impl<R: AsyncRead + Unpin> Source for FrameReader<R> {
    async fn next(&mut self) -> std::io::Result<Option<Read>> {
        let limit = self.max_line_bytes();
        Ok(match FrameReader::next(self).await? {
            None => None,
            Some(Frame::Line(line)) => Some(Read::parse(line)),
            Some(Frame::Shared(buf, at)) => {
                Some(match Incoming::parse_shared(buf.clone(), at.clone()) {
                    Ok(incoming) => Read::Parsed(incoming),
                    Err(error) => Read::Unparsable {
                        error,
                        id: response_id(&buf[at]),
                    },
                })
            }
            Some(Frame::TooLong { len, head }) => Some(Read::TooLong {
                len,
                limit,
                id: response_id(head),
            }),
            Some(Frame::OverBudget { len, head, why }) => Some(Read::OverBudget {
                len,
                why,
                id: response_id(head),
            }),
        })
    }
}

impl Source for mpsc::Receiver<Read> {
    async fn next(&mut self) -> std::io::Result<Option<Read>> {
        Ok(self.recv().await)
    }
}
