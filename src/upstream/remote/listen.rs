//! The standalone GET stream: where a Streamable HTTP server sends the
//! messages that belong to no request of the client's (list changes,
//! resource updates, log messages, its own requests). Opened as soon as
//! `initialize` is answered, and before `notifications/initialized` is
//! sent, since a server sends its first list changes while it handles that
//! one (server-everything does): a stream opened after would miss them.
//! 405 means the server has none, and it is not asked again. A stream that
//! ends is reopened after the `retry` the server named, resuming after the
//! last event id; one that keeps failing is given up with a warning
//! (requests still work without it) until the session is renewed, which
//! opens it again.

use super::exchange::Exchange;
use super::http::Failure;
use reqwest::{Response, StatusCode};
use std::sync::Arc;
use std::time::Duration;

/// Failures in a row before the stream is given up.
const MAX_FAILURES: u32 = 5;

/// The first wait after a failure; it doubles.
const BACKOFF: Duration = Duration::from_millis(500);

/// Waited before reopening a stream that ended, when the server named no
/// `retry`.
const REOPEN_AFTER: Duration = Duration::from_secs(1);

/// How long the first GET may take before `notifications/initialized` is
/// sent anyway.
const OPEN_WAIT: Duration = Duration::from_secs(5);

/// Opens the stream (waiting, bounded, until the server has answered the
/// GET), then listens on it in a task of its own.
pub(super) async fn start(exchange: Arc<Exchange>) -> tokio::task::JoinHandle<()> {
    let state = exchange.session.current();
    let first = tokio::time::timeout(OPEN_WAIT, exchange.http.get(&state, None)).await;
    // Not answered in time: the loop asks again.
    tokio::spawn(run(exchange, first.ok()))
}

async fn run(exchange: Arc<Exchange>, mut first: Option<Result<Response, Failure>>) {
    let mut session = exchange.session.watch();
    let mut last_event_id: Option<String> = None;
    let mut failures = 0;
    loop {
        let state = session.borrow_and_update().clone();
        let opened = match first.take() {
            Some(opened) => opened,
            None => exchange.http.get(&state, last_event_id.as_deref()).await,
        };
        let wait = match opened {
            Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => {
                tracing::debug!("the server has no standalone event stream");
                return;
            }
            Ok(response)
                if state.id.is_some()
                    && matches!(
                        response.status(),
                        StatusCode::NOT_FOUND | StatusCode::BAD_REQUEST
                    ) =>
            {
                // The session expired (a 400: as server-everything says
                // so): the next request renews it, and this stream with it.
                last_event_id = None;
                if session.changed().await.is_err() {
                    return;
                }
                continue;
            }
            Ok(response) if response.status().is_success() => {
                match exchange.answers(response) {
                    Some(mut answers) if answers.is_stream() => {
                        answers.last_event_id = last_event_id.take();
                        // A stream that ends with nothing said counts as a
                        // failure, so a server that closes it at once is not
                        // asked again and again.
                        failures += 1;
                        loop {
                            match answers.next().await {
                                Ok(Some(read)) => {
                                    failures = 0;
                                    if exchange.inbox.send(read).await.is_err() {
                                        return;
                                    }
                                }
                                Ok(None) => break,
                                Err(failure) => {
                                    tracing::debug!(
                                        reason = failure.reason,
                                        "the server's event stream broke off: {}",
                                        failure.detail
                                    );
                                    break;
                                }
                            }
                        }
                        last_event_id = answers.last_event_id.take();
                        answers.retry.unwrap_or(REOPEN_AFTER)
                    }
                    _ => {
                        tracing::warn!("the server answered the event stream's GET with something else; not listening");
                        return;
                    }
                }
            }
            Ok(response) => {
                failures += 1;
                let status = response.status();
                tracing::debug!(%status, "the server's event stream could not be opened");
                BACKOFF * 2u32.pow(failures.min(6))
            }
            Err(failure) => {
                failures += 1;
                tracing::debug!(
                    reason = failure.reason,
                    "the server's event stream could not be opened: {}",
                    failure.detail
                );
                BACKOFF * 2u32.pow(failures.min(6))
            }
        };
        if failures >= MAX_FAILURES {
            // Given up for this session only: a renewed session (after the
            // outage, its first request renews it) gets its stream back.
            tracing::warn!("giving up the server's event stream after {failures} failures, until the session is renewed; its notifications that belong to no request will not arrive meanwhile");
            if session.changed().await.is_err() {
                return;
            }
            failures = 0;
            last_event_id = None;
            continue;
        }
        tokio::time::sleep(wait).await;
    }
}
