//! What the front answers with. A session's router hands each HTTP
//! response an [`Outgoing`]: a POST's answer, which may yet become the
//! whole JSON body, or a message for an event stream; the event stream is
//! axum's server-sent events, with a comment every so often so that a
//! client that went away is noticed when the write fails.

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::stream::{self, Stream, StreamExt};
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;

/// How often an idle event stream carries a comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

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
    fn into_sse(self) -> Event {
        let (id, line) = match self {
            Self::Endpoint(path) => return Event::default().event("endpoint").data(path),
            Self::Answer(line) => (None, line),
            Self::Event { id, line } => (id, line),
        };
        // The id first, as mcp-chain has always framed it.
        let event = match id {
            Some(id) => Event::default().id(id.to_string()),
            None => Event::default(),
        };
        let event = event.event("message");
        // A line mcp-chain relays is JSON, and JSON is UTF-8.
        event.data(String::from_utf8_lossy(&line))
    }
}

/// An event stream answer: `first` (already taken from the channel),
/// then every [`Outgoing`] sent on `rest` until it closes.
pub(super) fn events(first: Option<Outgoing>, rest: mpsc::Receiver<Outgoing>) -> Response {
    let rest = stream::unfold(rest, |mut rx| async move { Some((rx.recv().await?, rx)) });
    let all = stream::iter(first).chain(rest);
    event_stream(all.map(|o| Ok::<_, Infallible>(o.into_sse())))
}

fn event_stream(
    events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
) -> Response {
    let keep_alive = KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive");
    let mut answer = Sse::new(events).keep_alive(keep_alive).into_response();
    // nginx and its kin pass each event on at once rather than buffering.
    answer
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    answer
}

/// A JSON answer.
pub(super) fn json(code: StatusCode, body: Bytes) -> Response {
    let content_type = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    (code, content_type, body).into_response()
}

/// An HTTP error whose body is a JSON-RPC error (id `null`), as MCP
/// clients read it.
pub(super) fn rpc_error(code: StatusCode, rpc: ErrorCode, message: &str) -> Response {
    let error = ErrorObject::new(rpc, format!("mcp-chain: {message}"));
    let mut line = Vec::new();
    Message::error(None, error).write_line(&mut line);
    json(code, Bytes::from(line))
}

/// A status with no body: 202 for what asks nothing, 200 for DELETE.
pub(super) fn empty(code: StatusCode) -> Response {
    code.into_response()
}
