//! The lines taken off an outgoing queue, read back. A pipe's writer sends
//! bytes as they are; an HTTP transport must know each message's kind and
//! id to choose where it goes (a POST of its own to a remote server, the
//! response stream of the request it answers for an HTTP client).

use crate::relay::Read;
use crate::transport::queue::Taken;
use bytes::Bytes;
use mcp_chain_middleware::message::Incoming;
use mcp_chain_middleware::{Message, RequestId};

/// A line taken off a queue, read back: the connector wrote it, and a
/// transport that is not a pipe must know what kind of message it is.
pub(crate) struct Line {
    pub(crate) bytes: Bytes,
    pub(crate) message: Option<Message>,
    /// Set for a request only: an answer to the server's request has an id
    /// too, and gets no answer.
    pub(crate) id: Option<RequestId>,
}

impl Line {
    pub(crate) fn of(bytes: Bytes) -> Self {
        let message = match Read::parse(&bytes) {
            Read::Parsed(Incoming::Single(Ok(message))) => Some(message),
            _ => None,
        };
        let id = match &message {
            Some(Message::Request(request)) => Some(request.id.clone()),
            _ => None,
        };
        Self { bytes, message, id }
    }

    pub(crate) fn method(&self) -> Option<&str> {
        self.message.as_ref().and_then(Message::method)
    }
}

/// The lines of what was taken off the queue.
pub(crate) fn lines(taken: &mut Taken) -> Vec<Line> {
    let bytes = Bytes::from(taken.joined());
    taken.clear();
    let mut lines = Vec::new();
    let mut from = 0;
    while let Some(len) = memchr::memchr(b'\n', &bytes[from..]) {
        lines.push(Line::of(bytes.slice(from..from + len)));
        from += len + 1;
    }
    lines
}
