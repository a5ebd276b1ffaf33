//! What the front answers with. A session's router hands each HTTP
//! response an [`Outgoing`]: a POST's answer, which may yet become the
//! whole JSON body, or a message for an event stream. A response body is
//! a [`Reply`]: a whole body, or a stream of server-sent events (framed by
//! `mcp_http::sse`) with a comment every so often so that a client that
//! went away is noticed when the write fails.

use crate::mcp_http::{sse, EVENT_STREAM};
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{interval_at, Instant, Interval};

/// How often an idle event stream carries a comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What the front answers an HTTP request with.
pub(super) type Answer = Response<Reply>;

/// One thing for an HTTP client, as the router sends it.
#[derive(Debug, Clone)]
pub(super) enum Outgoing {
    /// The answer to a POST's request (or a batch's answers): its JSON
    /// line without the newline. The POST may be answered with it as a
    /// JSON body; on a stream it is an event.
    Answer(Bytes),
    /// Any other message for an event stream, with its event id when the
    /// stream can be resumed (`Last-Event-ID`).
    Event { id: Option<u64>, line: Bytes },
    /// Legacy HTTP+SSE: where the client POSTs its messages.
    Endpoint(String),
}

impl Outgoing {
    /// A message for an event stream.
    pub(super) fn event(id: Option<u64>, line: Bytes) -> Self {
        Self::Event { id, line }
    }

    /// The server-sent event that carries it.
    fn framed(&self) -> Bytes {
        match self {
            Self::Answer(line) => sse::event("message", None, line),
            Self::Event { id, line } => sse::event("message", *id, line),
            Self::Endpoint(path) => sse::event("endpoint", None, path.as_bytes()),
        }
    }
}

/// A response body.
pub(super) enum Reply {
    Full(Option<Bytes>),
    Events {
        /// Taken from the channel already, to be sent first.
        first: Option<Outgoing>,
        events: mpsc::Receiver<Outgoing>,
        keep_alive: Interval,
    },
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let (first, events, keep_alive) = match self.get_mut() {
            Self::Full(bytes) => return Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Self::Events {
                first,
                events,
                keep_alive,
            } => (first, events, keep_alive),
        };
        let next = match first.take() {
            Some(first) => Poll::Ready(Some(first)),
            None => events.poll_recv(cx),
        };
        match next {
            Poll::Ready(next) => Poll::Ready(next.map(|o| Ok(Frame::data(o.framed())))),
            Poll::Pending => match keep_alive.poll_tick(cx) {
                Poll::Ready(_) => {
                    Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(sse::KEEP_ALIVE)))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Self::Events { .. } => SizeHint::default(),
        }
    }
}

/// An event stream answer: `first` (already taken from the channel),
/// then every [`Outgoing`] sent on `rest` until it closes.
pub(super) fn events(first: Option<Outgoing>, rest: mpsc::Receiver<Outgoing>) -> Answer {
    let keep_alive = interval_at(Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    let mut answer = Response::new(Reply::Events {
        first,
        events: rest,
        keep_alive,
    });
    let headers = answer.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // nginx and its kin pass each event on at once rather than buffering.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    answer
}

/// A JSON answer.
pub(super) fn json(code: StatusCode, body: Bytes) -> Answer {
    let mut answer = Response::new(Reply::Full(Some(body)));
    *answer.status_mut() = code;
    answer
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    answer
}

/// An HTTP error whose body is a JSON-RPC error (id `null`), as MCP
/// clients read it.
pub(super) fn rpc_error(code: StatusCode, rpc: ErrorCode, message: &str) -> Answer {
    let error = ErrorObject::new(rpc, format!("mcp-chain: {message}"));
    let mut line = Vec::new();
    Message::error(None, error).write_line(&mut line);
    json(code, Bytes::from(line))
}

/// A status with a short text.
pub(super) fn text(code: StatusCode, text: String) -> Answer {
    let mut answer = Response::new(Reply::Full(Some(Bytes::from(text))));
    *answer.status_mut() = code;
    answer.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
}

/// A status with no body: 202 for what asks nothing, 200 for DELETE.
pub(super) fn empty(code: StatusCode) -> Answer {
    let mut answer = Response::new(Reply::Full(None));
    *answer.status_mut() = code;
    answer
}
