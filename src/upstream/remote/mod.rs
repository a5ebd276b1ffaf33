//! A server at a URL, spoken to over Streamable HTTP (2025-03-26 and later).
//!
//! The upstream connector writes into the same server-bound queue as for a
//! child; here, instead of a pipe, each line taken from it is POSTed on
//! its own (requests concurrently, started in the order they were queued),
//! and what comes back, a JSON body or an SSE stream, is parsed and handed
//! to the to-client side through a channel (see [`Read`]). The server's
//! requests on those streams are answered the same way: the client's answer
//! is queued, and POSTed.
//!
//! Order where the protocol needs it: `initialize` is answered before
//! anything else is sent (the answer carries the session), and
//! `notifications/initialized` is accepted before anything after it. A
//! request whose stream ends before its answer is resumed from the last
//! event id; a request that cannot be exchanged at all is answered with an
//! error naming the HTTP status or the cause, and the session goes on.

mod answers;
mod exchange;
mod http;
mod listen;
mod routing;
mod session;

use super::{End, Upstream};
use crate::config::UrlConfig;
use crate::relay::{Owed, Read, Side, Unwritten};
use crate::transport::queue::Taken;
use bytes::Bytes;
use exchange::Exchange;
use http::Http;
use mcp_chain_middleware::message::{method, Incoming};
use mcp_chain_middleware::{Direction, Message};
use routing::Routing;
use session::Session;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;

/// Messages parsed and not yet taken by the to-client side: past this,
/// streams wait, and so does the server.
const INBOX: usize = 64;

/// How long later messages wait for `initialize`'s answer, and then for
/// `notifications/initialized` to be accepted.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(30);

/// Runs a URL upstream until `stop`. `Err` when its client cannot be set up
/// (a `ca_file` that cannot be read).
pub(super) fn start(
    up: Upstream,
    config: &UrlConfig,
    stop: oneshot::Receiver<()>,
) -> Result<tokio::task::JoinHandle<End>, String> {
    let http = Http::new(config)?;
    tracing::info!(url = %http.shown(), "relaying to a Streamable HTTP server");
    Ok(tokio::spawn(run(up, http, stop)))
}

async fn run(mut up: Upstream, http: Http, mut stop: oneshot::Receiver<()>) -> End {
    let (inbox, source) = mpsc::channel(INBOX);
    let mut side = Side {
        source,
        chain: up.to_client.clone(),
        own: up.conn.clone(),
        reply: up.queue.clone(),
        direction: Direction::ToClient,
        owed: Owed::new(TaskTracker::new()),
        unwritten: Unwritten::default(),
    };
    let reader = tokio::spawn(async move { side.run().await });
    let mut sender = Sender {
        exchange: Arc::new(Exchange {
            http,
            session: Session::new(),
            inbox,
            conn: up.conn.clone(),
            cap: up.max_message_bytes,
        }),
        posts: TaskTracker::new(),
        listening: None,
    };
    let mut taken = Taken::default();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            more = up.queue.take(&mut taken) => {
                if !more {
                    break;
                }
                sender.send_all(&mut taken).await;
            }
        }
    }
    // What was queued before the stop still goes (a last cancellation).
    up.queue.close();
    while up.queue.take(&mut taken).await {
        sender.send_all(&mut taken).await;
    }
    sender.posts.close();
    let grace = up.grace;
    tokio::select! {
        _ = tokio::time::timeout(grace, sender.posts.wait()) => {}
        _ = up.hurry.wait_for(|hurry| *hurry) => {}
    }
    if let Some(listening) = sender.listening.take() {
        listening.abort();
    }
    let exchange = sender.exchange;
    let session = exchange.session.current();
    if session.id.is_some() {
        tokio::select! {
            ended = tokio::time::timeout(grace, exchange.http.delete(&session)) => match ended {
                Ok(Ok(status)) => tracing::debug!(%status, "ended the server's session"),
                Ok(Err(e)) => tracing::debug!(error = %e.detail, "could not end the server's session"),
                Err(_) => tracing::debug!("the server did not end its session within the shutdown grace"),
            },
            _ = up.hurry.wait_for(|hurry| *hurry) => {}
        }
    }
    reader.abort();
    End::Stopped(None)
}

/// Takes lines off the queue and starts their exchanges.
struct Sender {
    exchange: Arc<Exchange>,
    /// Every exchange under way: shutdown waits for them (bounded).
    posts: TaskTracker,
    /// The standalone GET stream, once `initialize` is answered.
    listening: Option<tokio::task::JoinHandle<()>>,
}

impl Sender {
    async fn send_all(&mut self, taken: &mut Taken) {
        let bytes = Bytes::from(taken.joined());
        taken.clear();
        let mut from = 0;
        while let Some(len) = memchr::memchr(b'\n', &bytes[from..]) {
            let line = bytes.slice(from..from + len);
            from += len + 1;
            self.send(line).await;
        }
    }

    /// Starts one message's exchange; for the handshake's two messages,
    /// waits (bounded) until it is done.
    async fn send(&mut self, line: Bytes) {
        // The connector wrote this line; read back what kind it is.
        let message = match Read::parse(&line) {
            Read::Parsed(Incoming::Single(Ok(message))) => Some(message),
            _ => None,
        };
        // Only a request is answered; an answer to the server's request
        // has an id too, and gets 202 like a notification.
        let id = match &message {
            Some(Message::Request(request)) => Some(request.id.clone()),
            _ => None,
        };
        let handshake = match message.as_ref().and_then(Message::method) {
            Some(method::INITIALIZE) if id.is_some() => true,
            Some(method::NOTIFICATION_INITIALIZED) => true,
            _ => false,
        };
        let initialize = handshake && id.is_some();
        let routing = message.as_ref().map(Routing::of).unwrap_or_default();
        let exchange = self.exchange.clone();
        let post = self
            .posts
            .spawn(async move { exchange.run(line, id, initialize, routing).await });
        if handshake {
            if tokio::time::timeout(HANDSHAKE_WAIT, post).await.is_err() {
                tracing::warn!(
                    "the server is slow with the handshake; sending what follows anyway"
                );
            }
            let session = self.exchange.session.current();
            if initialize && session.generation > 0 && self.listening.is_none() {
                self.listening = Some(listen::start(self.exchange.clone()).await);
            }
        }
    }
}
