//! What the front answers with: a whole body (JSON, or an error's text), or
//! a stream of server-sent events fed by the session's router, one event
//! per message, with a comment every so often so that a client that went
//! away is noticed when the write fails; and the answers built from them.

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

/// A response body. An event stream's channel carries SSE events, except
/// a POST's answers, which come as their bare JSON line (an object, or a
/// batch's array) and are framed here: the POST may yet be answered with
/// that line as a JSON body instead (`handler::relay`).
pub(super) enum Reply {
    Full(Option<Bytes>),
    Events {
        /// Taken from the channel already, to be sent first.
        first: Option<Bytes>,
        events: mpsc::Receiver<Bytes>,
        keep_alive: Interval,
    },
}

impl Reply {
    pub(super) fn full(bytes: impl Into<Bytes>) -> Self {
        Self::Full(Some(bytes.into()))
    }

    pub(super) fn empty() -> Self {
        Self::Full(None)
    }

    /// A stream of the events sent on `events`, ending when it closes.
    pub(super) fn events(events: mpsc::Receiver<Bytes>) -> Self {
        Self::Events {
            first: None,
            events,
            keep_alive: keep_alive(),
        }
    }

    /// [`Self::events`], after `first`.
    pub(super) fn events_after(first: Bytes, events: mpsc::Receiver<Bytes>) -> Self {
        Self::Events {
            first: Some(first),
            events,
            keep_alive: keep_alive(),
        }
    }
}

fn keep_alive() -> Interval {
    interval_at(Instant::now() + KEEP_ALIVE, KEEP_ALIVE)
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Self::Events {
                first,
                events,
                keep_alive,
            } => match first
                .take()
                .map_or_else(|| events.poll_recv(cx), |e| Poll::Ready(Some(e)))
            {
                Poll::Ready(Some(e)) if is_line(&e) => {
                    Poll::Ready(Some(Ok(Frame::data(event(None, &e)))))
                }
                Poll::Ready(e) => Poll::Ready(e.map(|e| Ok(Frame::data(e)))),
                Poll::Pending => match keep_alive.poll_tick(cx) {
                    Poll::Ready(_) => Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
                        b": keep-alive\n\n",
                    ))))),
                    Poll::Pending => Poll::Pending,
                },
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

/// Whether `bytes` is a bare JSON line, not an SSE event.
pub(super) fn is_line(bytes: &[u8]) -> bool {
    matches!(bytes.first(), Some(b'{' | b'['))
}

/// One SSE event carrying a message (`line` without its newline), with an
/// id when the stream can be resumed.
pub(super) fn event(id: Option<u64>, line: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(line.len() + 40);
    if let Some(id) = id {
        out.extend_from_slice(format!("id: {id}\n").as_bytes());
    }
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(line);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// An event stream answer.
pub(super) fn event_stream(reply: Reply) -> Response<Reply> {
    let mut answer = Response::new(reply);
    let headers = answer.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(crate::mcp_http::EVENT_STREAM),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // nginx and its kin pass each event on at once rather than buffering.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    answer
}

/// A JSON answer.
pub(super) fn json(code: StatusCode, body: Bytes) -> Response<Reply> {
    let mut answer = Response::new(Reply::full(body));
    *answer.status_mut() = code;
    answer
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    answer
}

/// An HTTP error whose body is a JSON-RPC error (id `null`), as MCP
/// clients read it.
pub(super) fn rpc_error(code: StatusCode, rpc: ErrorCode, message: &str) -> Response<Reply> {
    let error = ErrorObject::new(rpc, format!("mcp-chain: {message}"));
    let mut line = Vec::new();
    Message::error(None, error).write_line(&mut line);
    json(code, Bytes::from(line))
}

/// A status with a short text (or nothing).
pub(super) fn status(code: StatusCode, text: &'static str) -> Response<Reply> {
    let mut answer = Response::new(if text.is_empty() {
        Reply::empty()
    } else {
        Reply::full(text)
    });
    *answer.status_mut() = code;
    answer
}

/// 503 when `max_sessions` are open, with when to try again.
pub(super) fn too_many_sessions() -> Response<Reply> {
    let mut answer = status(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many sessions (front.max_sessions)",
    );
    let retry = HeaderValue::from_static("5");
    answer
        .headers_mut()
        .insert(hyper::header::RETRY_AFTER, retry);
    answer
}
