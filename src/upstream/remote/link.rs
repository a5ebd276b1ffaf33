//! A session over one long-lived connection that carries everything the
//! server says: legacy HTTP+SSE's event stream, or a WebSocket. What goes
//! to the server goes one message at a time, in queue order (a POST to the
//! message endpoint, a frame); what comes back is read by a task of its own
//! and handed to the to-client side.
//!
//! The connection closing is the session lost: every request in flight is
//! answered with -32000 (it will get no other answer), new ones get 503
//! while mcp-chain reconnects with backoff, the client's handshake is
//! replayed in the new session (its answer read here, never routed), and
//! the client goes on. When reconnecting fails five times in a row, the
//! server is gone.

use super::exchange::Exchange;
use super::http::Failure;
use super::session::line;
use super::Upstream;
use crate::connector::Handshake;
use crate::peer::Read;
use crate::transport::lines::{lines, Line};
use crate::transport::queue::Taken;
use bytes::Bytes;
use mcp_chain_middleware::message::{method, Incoming};
use mcp_chain_middleware::Message;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long the server gets to answer a replayed `initialize`.
const REPLAY_WAIT: Duration = Duration::from_secs(30);

/// Reconnections in a row before the server is gone.
const MAX_RECONNECTS: u32 = 5;

/// The first wait before reconnecting; it doubles.
const BACKOFF: Duration = Duration::from_millis(500);

/// Where the answer to a replayed `initialize` goes, once it comes.
pub(super) type Replay = Option<oneshot::Sender<Message>>;

/// One kind of long-lived connection.
pub(super) trait Link: Sized + Send {
    /// Connects. The server's messages are read by the returned task, which
    /// hands each to [`deliver`] with `replay`.
    fn connect(
        exchange: &Arc<Exchange>,
        replay: Replay,
    ) -> impl Future<Output = Result<(Self, JoinHandle<()>), Failure>> + Send;

    /// Sends one message.
    fn send(
        &mut self,
        exchange: &Exchange,
        message: Bytes,
    ) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Says goodbye, when there is a way to (a WebSocket's close frame).
    fn close(self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// A connection and the task reading it.
struct Connected<L> {
    link: L,
    reading: JoinHandle<()>,
}

/// Relays until `stop` (then sends what was queued before it). `Some` with
/// a reason when the server is gone for good.
pub(super) async fn run<L: Link>(
    exchange: &Arc<Exchange>,
    up: &mut Upstream,
    mut pending: Vec<Line>,
    stop: &mut oneshot::Receiver<()>,
) -> Option<String> {
    let mut taken = Taken::default();
    let mut connected: Option<Connected<L>> = None;
    loop {
        // One try to connect for what was taken at once: the lines after a
        // failed try share its failure rather than each waiting for its own.
        let mut refused: Option<Failure> = None;
        for line in pending.drain(..) {
            if connected.is_none() && refused.is_none() {
                match L::connect(exchange, None).await {
                    Ok((link, reading)) => connected = Some(Connected { link, reading }),
                    Err(failure) => refused = Some(failure),
                }
            }
            match (&mut connected, &refused) {
                (Some(connected), _) => send(exchange, &mut connected.link, line).await,
                (None, Some(failure)) => exchange.fail(line.id, failure).await,
                (None, None) => unreachable!("a try to connect either connects or fails"),
            }
        }
        let lost = async {
            match &mut connected {
                Some(connected) => {
                    let _ = (&mut connected.reading).await;
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
                let reason = "the server's connection closed";
                tracing::warn!("{reason}; reconnecting");
                up.conn.suspend(reason);
                up.downstream.abandon_all();
                // Queued for the lost session: its senders were answered.
                up.queue.clear();
                match reconnect::<L>(exchange).await {
                    Ok(again) => {
                        connected = Some(again);
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
            if let Some(connected) = &mut connected {
                send(exchange, &mut connected.link, line).await;
            }
        }
    }
    if let Some(connected) = connected {
        connected.reading.abort();
        connected.link.close().await;
    }
    None
}

async fn send<L: Link>(exchange: &Exchange, link: &mut L, line: Line) {
    if let Err(failure) = link.send(exchange, line.bytes).await {
        exchange.fail(line.id, &failure).await;
    }
}

/// Hands a message the server sent to the to-client side, or, when it is
/// the answer to a replayed `initialize`, to `replay`. `false` once the
/// to-client side is gone.
pub(super) async fn deliver(exchange: &Exchange, read: Read, replay: &mut Replay) -> bool {
    if let Read::Parsed(Incoming::Single(Ok(message))) = &read {
        if Handshake::answers_replay(message) {
            if let (Some(to), Read::Parsed(Incoming::Single(Ok(message)))) = (replay.take(), read) {
                let _ = to.send(message);
            }
            return true;
        }
    }
    exchange.inbox.send(read).await.is_ok()
}

/// A new session after the connection was lost, with the client's
/// handshake replayed in it; with backoff, until it works or the tries run
/// out.
async fn reconnect<L: Link>(exchange: &Arc<Exchange>) -> Result<Connected<L>, Failure> {
    let mut tries = 0;
    loop {
        tokio::time::sleep(BACKOFF * 2u32.pow(tries.min(6))).await;
        tries += 1;
        match replayed::<L>(exchange).await {
            Ok(connected) => {
                tracing::warn!(attempt = tries, "the server is back");
                return Ok(connected);
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

async fn replayed<L: Link>(exchange: &Arc<Exchange>) -> Result<Connected<L>, Failure> {
    let Some(Handshake {
        initialize: Some(params),
        initialized,
        ..
    }) = exchange.conn.handshake()
    else {
        // Nothing to replay: the client never initialized.
        let (link, reading) = L::connect(exchange, None).await?;
        return Ok(Connected { link, reading });
    };
    let (to, answer) = oneshot::channel();
    let (mut link, reading) = L::connect(exchange, Some(to)).await?;
    let request = Handshake::replayed_initialize(params);
    let refused = |detail: String| {
        reading.abort();
        Failure::new("session", detail)
    };
    link.send(exchange, line(&request)).await?;
    let answered = match tokio::time::timeout(REPLAY_WAIT, answer).await {
        Ok(Ok(answered)) => answered,
        Ok(Err(_)) => {
            return Err(refused(
                "the server's connection closed before it answered the replayed initialize".into(),
            ))
        }
        Err(_) => {
            return Err(refused(
                "the server did not answer the replayed initialize".into(),
            ))
        }
    };
    if let Message::Error(e) = answered {
        return Err(refused(format!(
            "the server refused the replayed initialize: {}",
            e.error.message
        )));
    }
    if initialized {
        let note = Message::notification(method::NOTIFICATION_INITIALIZED, None);
        link.send(exchange, line(&note)).await?;
    }
    Ok(Connected { link, reading })
}
