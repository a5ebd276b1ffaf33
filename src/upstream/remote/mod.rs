//! A server at a URL, spoken to over Streamable HTTP (2025-03-26 and later,
//! `streamable`), legacy HTTP+SSE (2024-11-05, `legacy`) when the config
//! says so or `auto` finds a 2024-era server, or WebSocket (`websocket`, for
//! a ws:// or wss:// URL).
//!
//! The upstream connector writes into the same server-bound queue as for a
//! child; here, instead of a pipe, each line taken from it is POSTed on
//! its own (requests concurrently, started in the order they were queued),
//! and what comes back, a JSON body or an SSE stream, is parsed once and
//! handed to the relay through a channel (the server's [`Read`]s). The server's
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
mod failure;
mod http;
mod legacy;
mod link;
mod listen;
// The routing headers and the parameters marked for them are shared with
// the HTTP front: they live in the room both use.
use crate::mcp_http::{params, routing};

mod session;
mod streamable;
mod websocket;

use super::{End, Upstream};
use crate::config::{Transport, UrlConfig};
use crate::peer::Read;
use crate::transport::queue::Taken;
use crate::upstream::StartError;
use exchange::Exchange;
use http::Http;
use legacy::Legacy;
use session::RemoteSession;
use std::sync::Arc;
use std::time::Duration;
use streamable::Sender;
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;
use websocket::WebSocket;

/// Messages parsed and not yet taken by the to-client side: past this,
/// streams wait, and so does the server.
const INBOX: usize = 64;

/// How long later messages wait for `initialize`'s answer, and then for
/// `notifications/initialized` to be accepted.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(30);

/// What a URL upstream hands the relay: the server's messages, parsed, and
/// the task that ends when the server stops or is gone.
type Started = (mpsc::Receiver<Read>, tokio::task::JoinHandle<End>);

/// Runs a URL upstream until `stop`. `Err` when its client cannot be set up
/// (a `ca_file` that cannot be read).
pub(super) fn start(
    up: Upstream,
    config: &UrlConfig,
    stop: oneshot::Receiver<()>,
) -> Result<Started, StartError> {
    let http = Http::new(config)?;
    let websocket = match config.transport {
        Transport::WebSocket => Some(websocket::Settings::new(config)?),
        _ => None,
    };
    let (inbox, parsed) = mpsc::channel(INBOX);
    let end = tokio::spawn(run(up, http, websocket, config.transport, inbox, stop));
    Ok((parsed, end))
}

async fn run(
    mut up: Upstream,
    http: Http,
    websocket: Option<websocket::Settings>,
    transport: Transport,
    inbox: mpsc::Sender<Read>,
    mut stop: oneshot::Receiver<()>,
) -> End {
    let exchange = Arc::new(Exchange {
        http,
        session: RemoteSession::new(),
        inbox,
        conn: up.conn.clone(),
        cap: up.max_message_bytes,
        budget: up.budget.clone(),
        marked: Default::default(),
        websocket,
    });
    let mut taken = Taken::default();
    let posts = TaskTracker::new();
    let mut listening = None;
    let mut gone = None;
    if transport == Transport::Sse {
        gone = link::run::<Legacy>(&exchange, &mut up, Vec::new(), &mut stop).await;
    } else if transport == Transport::WebSocket {
        gone = link::run::<WebSocket>(&exchange, &mut up, Vec::new(), &mut stop).await;
    } else {
        tracing::info!(url = %exchange.http.shown(), "relaying to a Streamable HTTP server");
        let mut sender = Sender {
            exchange: exchange.clone(),
            posts: posts.clone(),
            listening: None,
            probe: transport == Transport::Auto,
        };
        let fell_back = sender.run(&mut up, &mut taken, &mut stop).await;
        listening = sender.listening.take();
        if let Some(lines) = fell_back {
            gone = link::run::<Legacy>(&exchange, &mut up, lines, &mut stop).await;
        }
    }
    posts.close();
    let grace = up.grace;
    tokio::select! {
        _ = tokio::time::timeout(grace, posts.wait()) => {}
        _ = up.hurry.wait_for(|hurry| *hurry) => {}
    }
    if let Some(listening) = listening {
        listening.abort();
    }
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
    match gone {
        Some(reason) => End::Gone {
            reason,
            failed: true,
        },
        None => End::Stopped(None),
    }
}
