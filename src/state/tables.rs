//! Tables every replica sees (grants, accepted pins, the console's off
//! switches), one Redis hash each under `{prefix}table:{name}`, a row per
//! field, so two replicas changing two rows at once both count; a change
//! is announced on the channel `{prefix}changes` (Redis pub/sub) in the
//! same round trip, and every replica follows that channel on a
//! connection of its own, so a person's decision on one replica is in
//! force on the others within a second. The connection is made again,
//! with backoff, whenever it is lost; what was missed meanwhile is read
//! again by the followers' own periodic reading. Logs (the approvals'
//! records) are Redis lists under `{prefix}log:{name}`, cut to their last
//! rows as they grow.

use super::Link;
use futures_util::StreamExt as _;
use mcp_chain_middleware::shared::{Rows, Unavailable};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// Names of saved documents in flight to the followers at most.
const BACKLOG: usize = 64;

/// The replica's end of the change channel.
pub(super) fn channel() -> broadcast::Sender<String> {
    broadcast::channel(BACKLOG).0
}

fn table(link: &Link, name: &str) -> String {
    format!("{}table:{name}", link.prefix)
}

fn channel_of(link: &Link) -> String {
    format!("{}changes", link.prefix)
}

pub(super) async fn rows(link: Arc<Link>, name: String) -> Result<Rows, Unavailable> {
    link.ask(redis::cmd("HGETALL").arg(table(&link, &name)))
        .await
}

/// The rows `fields` of a table, in their order: one HMGET.
pub(super) async fn pick(
    link: Arc<Link>,
    name: String,
    fields: Vec<String>,
) -> Result<Vec<Option<Vec<u8>>>, Unavailable> {
    if fields.is_empty() {
        return Ok(Vec::new());
    }
    link.ask(redis::cmd("HMGET").arg(table(&link, &name)).arg(fields))
        .await
}

/// Sets a row (with `only_new`, only a missing one) and announces the
/// table when it was set: one round trip, one transaction.
pub(super) async fn put(
    link: Arc<Link>,
    name: String,
    field: String,
    bytes: Vec<u8>,
    only_new: bool,
) -> Result<bool, Unavailable> {
    let key = table(&link, &name);
    let set: bool = match only_new {
        true => {
            link.ask(redis::cmd("HSETNX").arg(&key).arg(&field).arg(bytes))
                .await?
        }
        false => {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("HSET")
                .arg(&key)
                .arg(&field)
                .arg(bytes)
                .ignore();
            pipe.cmd("PUBLISH")
                .arg(channel_of(&link))
                .arg(&name)
                .ignore();
            link.ask_all::<()>(&pipe).await?;
            return Ok(true);
        }
    };
    if set {
        announce(&link, &name).await?;
    }
    Ok(set)
}

pub(super) async fn remove(
    link: Arc<Link>,
    name: String,
    field: String,
) -> Result<bool, Unavailable> {
    let removed: i64 = link
        .ask(redis::cmd("HDEL").arg(table(&link, &name)).arg(&field))
        .await?;
    announce(&link, &name).await?;
    Ok(removed > 0)
}

async fn announce(link: &Link, name: &str) -> Result<(), Unavailable> {
    link.ask::<i64>(redis::cmd("PUBLISH").arg(channel_of(link)).arg(name))
        .await
        .map(|_| ())
}

pub(super) async fn append(
    link: Arc<Link>,
    name: String,
    bytes: Vec<u8>,
    keep: usize,
) -> Result<(), Unavailable> {
    let key = format!("{}log:{name}", link.prefix);
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let mut pipe = redis::pipe();
    pipe.atomic().cmd("RPUSH").arg(&key).arg(bytes).ignore();
    pipe.cmd("LTRIM").arg(&key).arg(-keep).arg(-1).ignore();
    link.ask_all::<()>(&pipe).await
}

pub(super) async fn tail(
    link: Arc<Link>,
    name: String,
    n: usize,
) -> Result<Vec<Vec<u8>>, Unavailable> {
    let key = format!("{}log:{name}", link.prefix);
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    link.ask(redis::cmd("LRANGE").arg(&key).arg(-n).arg(-1))
        .await
}

/// Redis's and redis-rs's words, escaped and cut for a log.
fn shown(e: &redis::RedisError) -> String {
    mcp_chain_middleware::shown::shown(&e.to_string(), 300)
}

/// Follows the change channel for as long as the process runs, passing
/// each changed table's name on to `tx`.
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
