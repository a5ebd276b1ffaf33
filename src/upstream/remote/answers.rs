//! The messages in a Streamable HTTP response body: one JSON message, or an
//! SSE stream of them (notifications and server→client requests, then the
//! answer). Each message is parsed here, once, and handed on as the
//! [`Read`] the to-client side would have made of the same line on a pipe.
//!
//! Nothing is buffered past `max_message_bytes`: a JSON body or an event
//! that grows beyond it is dropped, and its request answered with an error.
//! The id and `retry` of each event are kept, so a stream cut short can be
//! resumed where it stopped.

use super::http::{content_type, is_event_stream, Failure};
use crate::peer::Read;
use crate::transport::budget::Budget;
use bytes::Bytes;
use futures_util::stream::{BoxStream, StreamExt};
use reqwest::Response;
use sse_stream::{Sse, SseByteStream};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The messages of one response body.
pub(super) struct Answers {
    body: Body,
    cap: usize,
    /// The id of the last event that had one: where to resume.
    pub(super) last_event_id: Option<String>,
    /// How long the server asked to wait before reconnecting.
    pub(super) retry: Option<Duration>,
    /// The process's budget of bytes in flight: a big message is counted
    /// in it, and the next one is read only once there is room.
    budget: Option<Arc<Budget>>,
}

/// How long a body waits for room in the budget before it is given up.
const BUDGET_WAIT: Duration = Duration::from_secs(30);

enum Body {
    Json(Option<Response>),
    /// Nothing more will be read (the last message was over the cap).
    Done,
    Events {
        events: BoxStream<'static, Result<Sse, sse_stream::Error>>,
        /// Bytes read since the last event ended.
        pending: Arc<AtomicUsize>,
    },
}

impl Answers {
    /// The body of `response`, a 2xx answer to a POST or a GET. `None` for
    /// a body that is neither JSON nor an event stream.
    pub(super) fn of(response: Response, cap: usize) -> Option<Self> {
        let body = if is_event_stream(&response) {
            let pending = Arc::new(AtomicUsize::new(0));
            let counted = pending.clone();
            // Past the cap (plus the chunk that crossed it), the stream
            // fails instead of buffering a runaway event.
            let bytes = response.bytes_stream().map(move |chunk| {
                let chunk = chunk.map_err(io::Error::other)?;
                if counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len() > cap {
                    return Err(io::Error::other("an event over the size limit"));
                }
                Ok::<Bytes, io::Error>(chunk)
            });
            Body::Events {
                events: SseByteStream::new(bytes).boxed(),
                pending,
            }
        } else if content_type(&response).is_some_and(is_json) {
            Body::Json(Some(response))
        } else {
            return None;
        };
        Some(Self {
            body,
            cap,
            last_event_id: None,
            retry: None,
            budget: None,
        })
    }

    /// Counts its big messages in `budget`, and waits for room before each.
    pub(super) fn counted(mut self, budget: &Arc<Budget>) -> Self {
        self.budget = Some(budget.clone());
        self
    }

    /// Whether this is an event stream (it may be resumed).
    pub(super) fn is_stream(&self) -> bool {
        matches!(self.body, Body::Events { .. })
    }

    /// The next message; `None` at the end of the body. `Err` when the body
    /// broke off. A message over the cap is a [`Read::TooLong`], and the
    /// last: the rest of the body is not read. Events of other types are
    /// passed over.
    pub(super) async fn next(&mut self) -> Result<Option<Read>, Failure> {
        loop {
            match self.event().await? {
                None => return Ok(None),
                Some(Event::Message(read)) => return Ok(Some(read)),
                Some(Event::Named(name, _)) => {
                    tracing::debug!(event = name, "skipping an event that is not a message");
                }
            }
        }
    }

    /// The next message, or event of another type with its data (legacy
    /// HTTP+SSE's `endpoint`).
    pub(super) async fn event(&mut self) -> Result<Option<Event>, Failure> {
        let cap = self.cap;
        if let Some(budget) = &self.budget {
            budget
                .wait_for_room(BUDGET_WAIT)
                .await
                .map_err(|why| Failure::new("over_budget", why.to_string()))?;
        }
        let budget = self.budget.clone();
        let read = move |bytes: Vec<u8>| match &budget {
            Some(budget) => Read::from_vec_held(bytes, budget, None),
            None => Read::from_vec(bytes),
        };
        match &mut self.body {
            Body::Done => Ok(None),
            Body::Json(response) => match response.take() {
                None => Ok(None),
                Some(response) => read_json(response, cap, read)
                    .await
                    .map(|r| Some(Event::Message(r))),
            },
            Body::Events { events, pending } => loop {
                let event = match events.next().await {
                    None => return Ok(None),
                    Some(Ok(event)) => event,
                    Some(Err(_)) if pending.load(Ordering::Relaxed) > cap => {
                        let len = pending.load(Ordering::Relaxed);
                        self.body = Body::Done;
                        return Ok(Some(Event::Message(too_long(len, cap))));
                    }
                    Some(Err(e)) => {
                        return Err(Failure::new(
                            "body",
                            format!("the server's event stream broke off: {e}"),
                        ))
                    }
                };
                pending.store(0, Ordering::Relaxed);
                if let Some(id) = event.id {
                    self.last_event_id = Some(id);
                }
                if let Some(ms) = event.retry {
                    self.retry = Some(Duration::from_millis(ms));
                }
                // An empty data field primes the client with an event id.
                match (event.event, event.data) {
                    (None, Some(data)) if !data.is_empty() => {
                        return Ok(Some(Event::Message(read(data.into_bytes()))))
                    }
                    (Some(name), Some(data)) if name == "message" && !data.is_empty() => {
                        return Ok(Some(Event::Message(read(data.into_bytes()))))
                    }
                    (Some(name), Some(data)) if name != "message" => {
                        return Ok(Some(Event::Named(name, data)))
                    }
                    _ => {}
                }
            },
        }
    }
}

/// What an event stream carries.
pub(super) enum Event {
    Message(Read),
    /// An event of another type than `message`: its type and data.
    Named(String, String),
}

fn is_json(media_type: &str) -> bool {
    media_type.eq_ignore_ascii_case("application/json")
}

/// Reads a JSON body whole, but not past the cap.
async fn read_json(
    mut response: Response,
    cap: usize,
    read: impl FnOnce(Vec<u8>) -> Read,
) -> Result<Read, Failure> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > cap {
                    return Ok(too_long(body.len() + chunk.len(), cap));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(read(body)),
            Err(e) => {
                let e = e.without_url();
                return Err(Failure::new(
                    "body",
                    format!("the server's answer broke off: {e}"),
                ));
            }
        }
    }
}

/// A message over the cap, at least `len` bytes long; which answer it was
/// cannot be told (its head is not kept), the caller may know.
fn too_long(len: usize, limit: usize) -> Read {
    Read::TooLong {
        len,
        limit,
        id: None,
    }
}
