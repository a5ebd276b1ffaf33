//! Streamable HTTP's side of the queue: each line taken off it starts its
//! own exchange (requests go concurrently, started in queue order), except
//! the handshake's two messages, which are waited for (bounded): nothing
//! may overtake `initialize`'s answer (it carries the session), and the
//! server's own GET stream is opened before `notifications/initialized`.
//!
//! With `transport = "auto"` the first POST is also a probe: a 400, 404 or
//! 405 to it means a 2024-era server, and the session goes on in legacy
//! HTTP+SSE, with that first message sent again there. Any other failure is
//! reported as itself.

use super::exchange::{Ask, Exchange};
use super::routing::Routing;
use super::{listen, Upstream, HANDSHAKE_WAIT};
use crate::transport::lines::{lines, Line};
use crate::transport::queue::Taken;
use mcp_chain_middleware::message::method;
use reqwest::StatusCode;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

/// Takes lines off the queue and starts their exchanges.
pub(super) struct Sender {
    pub(super) exchange: Arc<Exchange>,
    /// Every exchange under way: shutdown waits for them (bounded).
    pub(super) posts: TaskTracker,
    /// The standalone GET stream, once `initialize` is answered.
    pub(super) listening: Option<JoinHandle<()>>,
    /// Whether the next POST may find a legacy server (`auto`, first POST).
    pub(super) probe: bool,
}

impl Sender {
    /// Sends until `stop` or the queue closes; then what was queued before
    /// the stop. `Some(lines)` when the server turned out to speak legacy
    /// HTTP+SSE: the lines not sent yet, first one included.
    pub(super) async fn run(
        &mut self,
        up: &mut Upstream,
        taken: &mut Taken,
        stop: &mut oneshot::Receiver<()>,
    ) -> Option<Vec<Line>> {
        loop {
            tokio::select! {
                _ = &mut *stop => break,
                more = up.queue.take(taken) => {
                    if !more {
                        break;
                    }
                    if let Some(rest) = self.send_all(lines(taken)).await {
                        return Some(rest);
                    }
                }
            }
        }
        // What was queued before the stop still goes (a last cancellation).
        up.queue.close();
        while up.queue.take(taken).await {
            self.send_all(lines(taken)).await;
        }
        None
    }

    async fn send_all(&mut self, lines: Vec<Line>) -> Option<Vec<Line>> {
        let mut lines = lines.into_iter();
        while let Some(line) = lines.next() {
            if let Err(line) = self.send(line).await {
                return Some(std::iter::once(line).chain(lines).collect());
            }
        }
        None
    }

    /// Starts one message's exchange; for the handshake's two messages,
    /// waits (bounded) until it is done. `Err` hands the line back when the
    /// probe found a legacy server.
    async fn send(&mut self, line: Line) -> Result<(), Line> {
        let handshake = match line.method() {
            Some(method::INITIALIZE) => line.id.is_some(),
            Some(method::NOTIFICATION_INITIALIZED) => true,
            _ => false,
        };
        let initialize = handshake && line.id.is_some();
        let marked = &self.exchange.marked;
        let routing = line
            .message
            .as_ref()
            .map(|m| Routing::of(m, marked))
            .unwrap_or_default();
        let listing = line.method() == Some(method::TOOLS_LIST);
        let mut first = None;
        if std::mem::take(&mut self.probe) {
            let posted = self
                .exchange
                .http
                .post(line.bytes.clone(), &Default::default(), &routing)
                .await;
            match posted {
                Ok(response) if is_legacy_answer(response.status()) => {
                    let status = response.status();
                    tracing::info!(%status, "the server does not speak Streamable HTTP; trying legacy HTTP+SSE");
                    return Err(line);
                }
                Ok(response) => first = Some(response),
                Err(failure) => {
                    self.exchange.fail(line.id, &failure).await;
                    return Ok(());
                }
            }
        }
        let exchange = self.exchange.clone();
        let Line { bytes, id, .. } = line;
        let post = self.posts.spawn(async move {
            exchange
                .run(
                    bytes,
                    id,
                    Ask {
                        initialize,
                        listing,
                    },
                    routing,
                    first,
                )
                .await
        });
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
        Ok(())
    }
}

/// What a 2024-era server answers a POST to its SSE URL with.
fn is_legacy_answer(status: StatusCode) -> bool {
    matches!(status.as_u16(), 400 | 404 | 405)
}
