//! Legacy HTTP+SSE (2024-11-05): one long GET whose event stream carries
//! everything the server says, and a message endpoint (named by the
//! stream's first `endpoint` event, within the same origin) to which each
//! message is POSTed. The POSTs go one at a time, in queue order: the
//! server answers each with 202 at once and answers on the stream, so order
//! costs little and is kept exactly.
//!
//! A stream that ends is the session lost: every request in flight is
//! answered with -32000 (it will get no other answer), new ones get 503
//! while mcp-chain reconnects with backoff, the client's handshake is
//! replayed in the new session (its answer read here, never routed), and
//! the client goes on. When reconnecting fails five times in a row, the
//! server is gone.

use super::answers::{Answers, Event};
use super::exchange::Exchange;
use super::http::Failure;
use super::session::{line, State, REPLAY_ID};
use super::{lines, Line, Upstream};
use crate::relay::Read;
use crate::transport::queue::Taken;
use mcp_chain_middleware::message::{method, Incoming, Request};
use mcp_chain_middleware::{Message, RequestId};
use reqwest::Url;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long the stream's first event (`endpoint`) may take.
const ENDPOINT_WAIT: Duration = Duration::from_secs(30);

/// How long the server gets to answer a replayed `initialize`.
const REPLAY_WAIT: Duration = Duration::from_secs(30);

/// Reconnections in a row before the server is gone.
const MAX_RECONNECTS: u32 = 5;

/// The first wait before reconnecting; it doubles.
const BACKOFF: Duration = Duration::from_millis(500);

/// A connected session: where to POST, and the task reading the stream.
struct Stream {
    endpoint: Url,
    reading: JoinHandle<()>,
}

/// Relays until `stop` (then sends what was queued before it). `Some` with
/// a reason when the server is gone for good.
pub(super) async fn run(
    exchange: &Arc<Exchange>,
    up: &mut Upstream,
    mut pending: Vec<Line>,
    stop: &mut oneshot::Receiver<()>,
) -> Option<String> {
    tracing::info!(url = %exchange.http.shown(), "relaying to a legacy HTTP+SSE server");
    let mut taken = Taken::default();
    let mut stream: Option<Stream> = None;
    loop {
        for line in pending.drain(..) {
            if stream.is_none() {
                match connect(exchange, None).await {
                    Ok(connected) => stream = Some(connected),
                    Err(failure) => {
                        exchange.fail(line.id, &failure).await;
                        continue;
                    }
                }
            }
            if let Some(stream) = &stream {
                post(exchange, &stream.endpoint, line).await;
            }
        }
        let lost = async {
            match &mut stream {
                Some(stream) => {
                    let _ = (&mut stream.reading).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut *stop => break,
            more = up.queue.take(&mut taken) => {
                if !more {
                    break;
                }
                pending = lines(&mut taken);
            }
            () = lost => {
                let reason = "the server's event stream ended";
                tracing::warn!("{reason}; reconnecting");
                up.conn.suspend(reason);
                up.downstream.abandon_all();
                // Queued for the lost session: its senders were answered.
                up.queue.clear();
                match reconnect(exchange).await {
                    Ok(connected) => {
                        stream = Some(connected);
                        up.conn.resume();
                    }
                    Err(failure) => {
                        let reason = format!("the server could not be reached again: {}", failure.detail);
                        up.conn.close(&reason);
                        return Some(reason);
                    }
                }
            }
        }
    }
    up.queue.close();
    while up.queue.take(&mut taken).await {
        for line in lines(&mut taken) {
            if let Some(stream) = &stream {
                post(exchange, &stream.endpoint, line).await;
            }
        }
    }
    if let Some(stream) = stream {
        stream.reading.abort();
    }
    None
}

async fn post(exchange: &Exchange, endpoint: &Url, line: Line) {
    match exchange.http.post_to(endpoint, line.bytes).await {
        Ok(response) if response.status().is_success() => {}
        Ok(response) => {
            let failure = Failure::status(&response, &exchange.http);
            exchange.fail(line.id, &failure).await;
        }
        Err(failure) => exchange.fail(line.id, &failure).await,
    }
}

/// Opens the stream and waits for its endpoint. The stream's messages go
/// to the to-client side, except the answer to a replayed `initialize`,
/// which goes to `replay`.
async fn connect(
    exchange: &Arc<Exchange>,
    replay: Option<oneshot::Sender<Message>>,
) -> Result<Stream, Failure> {
    let response = exchange.http.get(&State::default(), None).await?;
    if !response.status().is_success() {
        return Err(Failure::status(&response, &exchange.http));
    }
    let mut answers = Answers::of(response, exchange.cap)
        .filter(Answers::is_stream)
        .ok_or_else(|| {
            Failure::new(
                "content_type",
                "the server's SSE URL is not an event stream",
            )
        })?;
    let endpoint = tokio::time::timeout(ENDPOINT_WAIT, async {
        loop {
            match answers.event().await? {
                Some(Event::Named(name, data)) if name == "endpoint" => {
                    return exchange.http.endpoint(&data);
                }
                Some(_) => tracing::debug!("skipping an event before the endpoint"),
                None => {
                    return Err(Failure::new(
                        "endpoint",
                        "the server's stream ended before naming its endpoint",
                    ))
                }
            }
        }
    })
    .await
    .map_err(|_| Failure::new("endpoint", "the server's stream named no endpoint in time"))??;
    let reading = tokio::spawn(read(exchange.clone(), answers, replay));
    Ok(Stream { endpoint, reading })
}

/// Relays the stream's messages until it ends.
async fn read(
    exchange: Arc<Exchange>,
    mut answers: Answers,
    mut replay: Option<oneshot::Sender<Message>>,
) {
    let replayed = RequestId::from(REPLAY_ID);
    loop {
        let read = match answers.next().await {
            Ok(Some(read)) => read,
            Ok(None) => return,
            Err(failure) => {
                tracing::debug!(reason = failure.reason, "{}", failure.detail);
                return;
            }
        };
        if let Read::Parsed(Incoming::Single(Ok(message))) = &read {
            let is_replay = match message {
                Message::Response(r) => r.id == replayed,
                Message::Error(e) => e.id.as_ref() == Some(&replayed),
                _ => false,
            };
            if is_replay {
                if let (Some(to), Read::Parsed(Incoming::Single(Ok(message)))) =
                    (replay.take(), read)
                {
                    let _ = to.send(message);
                }
                continue;
            }
        }
        if exchange.inbox.send(read).await.is_err() {
            return;
        }
    }
}

/// A new session after the stream was lost, with the client's handshake
/// replayed in it; with backoff, until it works or the tries run out.
async fn reconnect(exchange: &Arc<Exchange>) -> Result<Stream, Failure> {
    let mut tries = 0;
    loop {
        tokio::time::sleep(BACKOFF * 2u32.pow(tries.min(6))).await;
        tries += 1;
        match replayed(exchange).await {
            Ok(stream) => {
                tracing::warn!(attempt = tries, "the server's stream is back");
                return Ok(stream);
            }
            Err(failure) if tries >= MAX_RECONNECTS => return Err(failure),
            Err(failure) => tracing::warn!(
                attempt = tries,
                reason = failure.reason,
                "reconnecting failed: {}",
                failure.detail
            ),
        }
    }
}

async fn replayed(exchange: &Arc<Exchange>) -> Result<Stream, Failure> {
    let Some(handshake) = exchange.conn.handshake().filter(|h| h.initialize.is_some()) else {
        return connect(exchange, None).await;
    };
    let (to, answer) = oneshot::channel();
    let stream = connect(exchange, Some(to)).await?;
    let request = Message::Request(Request {
        id: REPLAY_ID.into(),
        method: method::INITIALIZE.to_owned(),
        params: handshake.initialize,
        extra: Default::default(),
    });
    let sent = exchange
        .http
        .post_to(&stream.endpoint, line(&request))
        .await;
    let answered = match sent {
        Ok(response) if response.status().is_success() => tokio::time::timeout(REPLAY_WAIT, answer)
            .await
            .map_err(|_| {
                Failure::new(
                    "session",
                    "the server did not answer the replayed initialize",
                )
            })?
            .map_err(|_| {
                Failure::new(
                    "session",
                    "the server's stream ended before answering the replayed initialize",
                )
            })?,
        Ok(response) => return Err(Failure::status(&response, &exchange.http)),
        Err(failure) => return Err(failure),
    };
    if let Message::Error(e) = answered {
        let refused = format!(
            "the server refused the replayed initialize: {}",
            e.error.message
        );
        stream.reading.abort();
        return Err(Failure::new("session", refused));
    }
    if handshake.initialized {
        let note = Message::notification(method::NOTIFICATION_INITIALIZED, None);
        let response = exchange.http.post_to(&stream.endpoint, line(&note)).await?;
        if !response.status().is_success() {
            return Err(Failure::status(&response, &exchange.http));
        }
    }
    Ok(stream)
}
