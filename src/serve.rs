//! The one way mcp-chain serves HTTP/1.1 on a listener it opened: the
//! front, `/metrics` and the OAuth login's loopback callback all accept
//! through [`serve`], so each has the same bounds and none is written by
//! hand three times:
//!
//! - **a cap on connections**: past [`Limits::max_connections`] a new
//!   connection is told so at once (`503`, `Retry-After`, closed) rather
//!   than held or served; the refusal is one non-blocking write, so a
//!   flood of connections costs no task and no wait;
//! - **a time to send the request head** ([`Limits::head_timeout`]), and
//!   where it fits a time for the whole connection;
//! - **a graceful drain**: what [`serve`] returns ends the connections it
//!   served once each has finished the response it is writing.

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::HttpService;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// What one listener allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    pub(crate) head_timeout: Duration,
    /// The longest a connection may last (`None`: as long as it is used,
    /// for streams).
    pub(crate) connection_time: Option<Duration>,
    pub(crate) keep_alive: bool,
    pub(crate) max_headers: usize,
    pub(crate) max_head_bytes: usize,
}

impl Limits {
    /// A small server for one purpose: a few connections, one request each
    /// (or a few), each over within `connection_time`.
    pub(crate) fn small(max_connections: usize, connection_time: Duration) -> Self {
        Self {
            max_connections,
            head_timeout: Duration::from_secs(10),
            connection_time: Some(connection_time),
            keep_alive: true,
            max_headers: 64,
            max_head_bytes: 16 * 1024,
        }
    }
}

/// What a connection past the cap is told before it is closed.
const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 39\r\n\r\nmcp-chain: too many connections; retry\n";

/// Accepts on `listener` until `stop` ends, serving each connection with
/// the service `make` gives for its peer. Returns the connections still
/// open, for the caller to drain (or drop).
pub(crate) async fn serve<M, S>(
    listener: TcpListener,
    limits: Limits,
    mut make: M,
    stop: impl Future<Output = ()>,
) -> GracefulShutdown
where
    M: FnMut(SocketAddr) -> S,
    S: HttpService<Incoming> + Send + 'static,
    S::Future: Send + 'static,
    S::ResBody: Body + Send + 'static,
    <S::ResBody as Body>::Data: Send,
    <S::ResBody as Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let connections = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    tokio::pin!(stop);
    // One warning per burst of refusals, not one per connection.
    let mut warned = false;
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors, most likely: wait rather than spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut stop => return connections,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            let _ = stream.try_write(REFUSAL);
            if !std::mem::replace(&mut warned, true) {
                tracing::warn!(%peer, max_connections = limits.max_connections, "connections past the cap are refused");
            }
            continue;
        };
        warned = false;
        let _ = stream.set_nodelay(true);
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.head_timeout)
            .keep_alive(limits.keep_alive)
            .max_headers(limits.max_headers)
            .max_buf_size(limits.max_head_bytes.max(8192))
            .serve_connection(TokioIo::new(stream), make(peer));
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            let served = match limits.connection_time {
                Some(limit) => tokio::time::timeout(limit, connection).await.ok(),
                None => Some(connection.await),
            };
            if let Some(Err(e)) = served {
                tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
            }
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::REFUSAL;

    #[test]
    fn the_refusal_is_a_whole_http_answer() {
        let text = std::str::from_utf8(REFUSAL).expect("text");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|n| n.parse().ok())
            .expect("a length");
        assert_eq!(body.len(), length);
    }
}
