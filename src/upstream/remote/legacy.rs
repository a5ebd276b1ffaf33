//! Legacy HTTP+SSE (2024-11-05): one long GET whose event stream carries
//! everything the server says, and a message endpoint, named by the
//! stream's first `endpoint` event and only within the same origin, to
//! which each message is POSTed. The server answers each POST with 202 at
//! once and the message itself on the stream, so sending one at a time (in
//! order, as [`link`](super::link) does) costs little.

use super::answers::{Answers, Event};
use super::exchange::Exchange;
use super::http::Failure;
use super::link::{deliver, Link, Replay};
use super::session::State;
use bytes::Bytes;
use reqwest::Url;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How long the stream's first event (`endpoint`) may take.
const ENDPOINT_WAIT: Duration = Duration::from_secs(30);

/// Where a legacy server takes messages.
pub(super) struct Legacy {
    endpoint: Url,
}

impl Link for Legacy {
    async fn connect(
        exchange: &Arc<Exchange>,
        replay: Replay,
    ) -> Result<(Self, JoinHandle<()>), Failure> {
        let response = exchange.http.get(&State::default(), None).await?;
        if !response.status().is_success() {
            return Err(Failure::status(&response, &exchange.http));
        }
        let mut answers = exchange
            .answers(response)
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
                        let ended = "the server's stream ended before naming its endpoint";
                        return Err(Failure::new("endpoint", ended));
                    }
                }
            }
        })
        .await
        .map_err(|_| Failure::new("endpoint", "the server's stream named no endpoint in 30 s"))??;
        tracing::info!(url = %exchange.http.shown(), "relaying to a legacy HTTP+SSE server");
        let reading = tokio::spawn(read(exchange.clone(), answers, replay));
        Ok((Self { endpoint }, reading))
    }

    async fn send(&mut self, exchange: &Exchange, message: Bytes) -> Result<(), Failure> {
        let response = exchange.http.post_to(&self.endpoint, message).await?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(Failure::status(&response, &exchange.http))
        }
    }
}

/// Relays the stream's messages until it ends.
async fn read(exchange: Arc<Exchange>, mut answers: Answers, mut replay: Replay) {
    loop {
        match answers.next().await {
            Ok(Some(read)) => {
                if !deliver(&exchange, read, &mut replay).await {
                    return;
                }
            }
            Ok(None) => return,
            Err(failure) => {
                tracing::debug!(reason = failure.reason, "{}", failure.detail);
                return;
            }
        }
    }
}
