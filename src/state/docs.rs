//! Small documents every replica sees (the console's off switches), kept
//! in Redis under `{prefix}doc:{name}`; a save is announced on the
//! channel `{prefix}changes` (Redis pub/sub), which every replica follows
//! on a connection of its own, so a person's switch on one replica is in
//! force on the others within a second. The connection is made again,
//! with backoff, whenever it is lost; what was missed meanwhile is read
//! again by the followers' own periodic reading.

use super::Link;
use futures_util::StreamExt as _;
use mcp_chain_middleware::shared::Unavailable;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// Names of saved documents in flight to the followers at most.
const BACKLOG: usize = 64;

/// The replica's end of the change channel.
pub(super) fn channel() -> broadcast::Sender<String> {
    broadcast::channel(BACKLOG).0
}

/// The key of document `name`.
fn key(link: &Link, name: &str) -> String {
    format!("{}doc:{name}", link.prefix)
}

pub(super) async fn load(link: Arc<Link>, name: String) -> Result<Option<Vec<u8>>, Unavailable> {
    link.ask(redis::cmd("GET").arg(key(&link, &name))).await
}

pub(super) async fn save(link: Arc<Link>, name: String, bytes: Vec<u8>) -> Result<(), Unavailable> {
    link.ask::<()>(redis::cmd("SET").arg(key(&link, &name)).arg(bytes))
        .await?;
    let channel = format!("{}changes", link.prefix);
    link.ask::<i64>(redis::cmd("PUBLISH").arg(channel).arg(&name))
        .await
        .map(|_| ())
}

/// Redis's and redis-rs's words, escaped and cut for a log.
fn shown(e: &redis::RedisError) -> String {
    mcp_chain_middleware::shown::shown(&e.to_string(), 300)
}

/// Follows the change channel for as long as the process runs, passing
/// each saved name on to `tx`.
pub(super) async fn follow(client: redis::Client, prefix: String, tx: broadcast::Sender<String>) {
    let channel = format!("{prefix}changes");
    let mut backoff = Duration::from_secs(1);
    loop {
        match client.get_async_pubsub().await {
            Ok(mut pubsub) => match pubsub.subscribe(&channel).await {
                Ok(()) => {
                    backoff = Duration::from_secs(1);
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        if let Ok(name) = message.get_payload::<String>() {
                            let _ = tx.send(name);
                        }
                    }
                    tracing::debug!("[state] change channel lost; following it again");
                }
                Err(e) => {
                    tracing::debug!(error = %shown(&e), "[state] change channel not subscribed")
                }
            },
            Err(e) => tracing::debug!(error = %shown(&e), "[state] change channel not reached"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}
