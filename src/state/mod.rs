//! `[state]` on Redis (or Valkey): what replicas behind one load balancer
//! keep as one. Started before anything is served and installed for the
//! layers ([`mcp_chain_middleware::shared`]); without `[state]` nothing
//! here runs.
//!
//! - A rate limit's bucket is one hash per key, taken from by one Lua
//!   script on the server's clock (`buckets.lua`): the replicas never
//!   compare clocks, and no two can take the same last token.
//! - Every ask is bounded by `[state] timeout`; past it, or with the
//!   connection down, the store is unavailable for that ask, and the
//!   layers refuse or decide alone as `on_unavailable` says. The
//!   connection comes back by itself (redis-rs's manager reconnects with
//!   backoff); while it is away this is said once a minute, loudly.
//! - Keys start with `prefix` and name no caller or argument in clear.
//! - Each caller's sessions are counted for every replica when the front
//!   caps them (`sessions.rs`).
//! - With `key`, upstream OAuth tokens are kept here for every replica,
//!   encrypted, and renewed once across them (`tokens.rs`).

use crate::config::StateConfig;
use mcp_chain_middleware::shared::{
    Fallback, Rows, SharedBucket, SharedState, StoreFuture, Unavailable,
};
mod batch;
mod link;
mod tables;

use link::Link;
mod sessions;
mod tokens;

pub(crate) use sessions::{SharedSessions, RENEW_EVERY};
pub(crate) use tokens::{SharedLock, SharedTokens};

use redis::aio::ConnectionManager;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// The scripts, sent by their SHA (and whole once a server has not seen
/// them: after a restart, say).
static TAKE: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("buckets.lua")));
static REFUND: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("refund.lua")));

/// Where upstream tokens are kept for every replica (`[state]` with a `key`).
static TOKENS: std::sync::OnceLock<Arc<SharedTokens>> = std::sync::OnceLock::new();

/// The replicas' upstream tokens, when `[state]` keeps them.
pub(crate) fn tokens() -> Option<Arc<SharedTokens>> {
    TOKENS.get().cloned()
}

/// Where each caller's sessions are counted for every replica.
static SESSIONS: std::sync::OnceLock<Arc<SharedSessions>> = std::sync::OnceLock::new();

/// Every replica's count of each caller's sessions, with `[state]`.
pub(crate) fn sessions() -> Option<Arc<SharedSessions>> {
    SESSIONS.get().cloned()
}

/// How long start-up waits for Redis before it says it is unreachable.
const START_WAIT: Duration = Duration::from_secs(5);

/// How often the loss of the store is said while it lasts.
const SAY_EVERY: Duration = Duration::from_secs(60);

/// The store: a connection to Redis once there is one.
pub(crate) struct Redis {
    link: Arc<Link>,
    batches: Arc<batch::Batches>,
    /// A batch's one ask of Redis.
    ask: batch::Ask,
    /// The names of documents saved by any replica, as announced.
    changes: tokio::sync::broadcast::Sender<String>,
    fallback: Fallback,
    /// When the store's loss was last said.
    said: Arc<Mutex<Option<Instant>>>,
    shown: String,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

/// Connects to `[state]` and installs it for the layers. With `refuse`, a
/// store that cannot be reached at start is an error (nothing is served on
/// state that is not there); with `local`, serving starts on each
/// replica's own state and the connection is tried again in the background.
pub(crate) async fn start(config: &StateConfig) -> Result<(), StateError> {
    let client = client(config).map_err(StateError::Client)?;
    let link = Arc::new(Link {
        connection: Mutex::new(None),
        prefix: config.prefix.clone(),
        timeout: config.timeout,
    });
    let store = Arc::new(Redis {
        ask: asking(link.clone()),
        changes: tables::channel(),
        link,
        batches: Arc::default(),
        fallback: config.fallback,
        said: Arc::default(),
        shown: config.shown_url(),
    });
    let connected = connect(&client, config.timeout, START_WAIT).await;
    match (connected, config.fallback) {
        (Ok(connection), _) => {
            *lock(&store.link.connection) = Some(connection);
            tracing::info!(url = %store.shown, "[state]: replicas share rate limits on Redis");
        }
        (Err(e), Fallback::Refuse) => {
            return Err(StateError::Unreachable {
                url: store.shown.clone(),
                why: mcp_chain_middleware::shown::shown(&e, 300),
            })
        }
        (Err(e), Fallback::Local) => {
            // Redis's and redis-rs's words: escaped.
            let e = mcp_chain_middleware::shown::shown(&e, 300);
            tracing::warn!(url = %store.shown, "[state] cannot be reached ({e}): serving on this replica's own state (on_unavailable = \"local\") until it can");
            tokio::spawn(reconnect(store.clone(), client.clone()));
        }
    }
    tokio::spawn(tables::follow(
        client.clone(),
        config.prefix.clone(),
        store.changes.clone(),
    ));
    let sessions =
        SharedSessions::new(store.link.clone(), config.fallback, Box::new(store.sayer()));
    let _ = SESSIONS.set(Arc::new(sessions));
    match &config.key {
        Some(key) => {
            let tokens = SharedTokens::new(store.link.clone(), key, config.fallback);
            let _ = TOKENS.set(Arc::new(tokens));
        }
        None => tracing::info!(
            "[state] has no key: an upstream's OAuth tokens stay in each replica's own file"
        ),
    }
    mcp_chain_middleware::shared::install(store);
    Ok(())
}

/// Why `[state]` cannot be used at start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateError {
    /// The URL or `ca_file` cannot make a client.
    #[error("{0}")]
    Client(String),
    #[error("[state] {url} cannot be reached: {why} (on_unavailable = \"refuse\": nothing is served without it)")]
    Unreachable { url: String, why: String },
}

/// The client for `config`'s URL: its TLS roots `ca_file` when given.
fn client(config: &StateConfig) -> Result<redis::Client, String> {
    let url = config.url.as_str();
    let built = match &config.ca_file {
        None => redis::Client::open(url),
        Some(file) => {
            let pem = std::fs::read(file)
                .map_err(|e| format!("[state] ca_file {}: {e}", file.display()))?;
            let certs = redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem),
            };
            redis::Client::build_with_tls(url, certs)
        }
    };
    // redis-rs's messages do not repeat the URL's password.
    built.map_err(|e| format!("[state] url: {e}"))
}

/// A connection, and a first answer from it, within `wait`.
async fn connect(
    client: &redis::Client,
    timeout: Duration,
    wait: Duration,
) -> Result<ConnectionManager, String> {
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(wait))
        .set_response_timeout(Some(timeout.max(Duration::from_millis(500))))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_secs(5));
    let connecting = async {
        let mut connection = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| e.to_string())?;
        let _: String = redis::cmd("PING")
            .query_async(&mut connection)
            .await
            .map_err(|e| e.to_string())?;
        Ok(connection)
    };
    tokio::time::timeout(wait, connecting)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {wait:?}")))
}

/// Tries the store again, with backoff, until a connection is made.
async fn reconnect(store: Arc<Redis>, client: redis::Client) {
    let mut backoff = Duration::from_secs(1);
    loop {
        tokio::time::sleep(backoff).await;
        if let Ok(connection) = connect(&client, store.link.timeout, START_WAIT).await {
            *lock(&store.link.connection) = Some(connection);
            tracing::warn!(url = %store.shown, "[state] reached: replicas share their state again");
            return;
        }
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

impl Redis {
    /// What says the store is away, at most once a minute.
    fn sayer(&self) -> impl Fn(&Unavailable) + Send + 'static {
        let (said, shown, fallback) = (self.said.clone(), self.shown.clone(), self.fallback);
        move |why| say_lost(&said, &shown, fallback, why)
    }
}

/// Says the store is away, at most once a minute.
fn say_lost(said: &Mutex<Option<Instant>>, shown: &str, fallback: Fallback, why: &Unavailable) {
    let mut said = lock(said);
    if said.is_some_and(|at| at.elapsed() < SAY_EVERY) {
        return;
    }
    *said = Some(Instant::now());
    drop(said);
    let meanwhile = match fallback {
        Fallback::Refuse => "calls that need it are refused (on_unavailable = \"refuse\")",
        Fallback::Local => "each replica decides on its own state (on_unavailable = \"local\")",
    };
    // redis-rs's errors are its own words and the server's: escaped.
    let why = mcp_chain_middleware::shown::shown(&why.0, 300);
    tracing::warn!(url = %shown, "[state] unavailable ({why}): {meanwhile}");
}

impl SharedState for Redis {
    fn take(
        &self,
        bucket: &SharedBucket,
        max_wait: Option<Duration>,
    ) -> StoreFuture<Result<Result<Duration, Duration>, Unavailable>> {
        let answer = self.batches.take(bucket, max_wait, &self.ask);
        let say = self.sayer();
        Box::pin(async move {
            let answer = answer.await;
            if let Err(why) = &answer {
                say(why);
            }
            answer
        })
    }

    fn refund(&self, bucket: &SharedBucket) -> StoreFuture<()> {
        let args = vec![bucket.per_second.to_string(), bucket.burst.to_string()];
        let asked = self.link.run(&REFUND, &bucket.key, args);
        Box::pin(async move {
            let _ = asked.await;
        })
    }

    fn fallback(&self) -> Fallback {
        self.fallback
    }

    fn rows(&self, table: &str) -> StoreFuture<Result<Rows, Unavailable>> {
        Box::pin(tables::rows(self.link.clone(), table.to_owned()))
    }

    fn pick(
        &self,
        table: &str,
        fields: &[String],
    ) -> StoreFuture<Result<Vec<Option<Vec<u8>>>, Unavailable>> {
        Box::pin(tables::pick(
            self.link.clone(),
            table.to_owned(),
            fields.to_vec(),
        ))
    }

    fn put(
        &self,
        table: &str,
        field: &str,
        bytes: Vec<u8>,
        only_new: bool,
    ) -> StoreFuture<Result<bool, Unavailable>> {
        let (table, field) = (table.to_owned(), field.to_owned());
        Box::pin(tables::put(
            self.link.clone(),
            table,
            field,
            bytes,
            only_new,
        ))
    }

    fn remove(&self, table: &str, field: &str) -> StoreFuture<Result<bool, Unavailable>> {
        let (table, field) = (table.to_owned(), field.to_owned());
        Box::pin(tables::remove(self.link.clone(), table, field))
    }

    fn append(
        &self,
        log: &str,
        bytes: Vec<u8>,
        keep: usize,
    ) -> StoreFuture<Result<(), Unavailable>> {
        Box::pin(tables::append(
            self.link.clone(),
            log.to_owned(),
            bytes,
            keep,
        ))
    }

    fn tail(&self, log: &str, n: usize) -> StoreFuture<Result<Vec<Vec<u8>>, Unavailable>> {
        Box::pin(tables::tail(self.link.clone(), log.to_owned(), n))
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.changes.subscribe())
    }
}

/// A batch's ask: `n` tokens of a bucket, by the script, on `link`.
fn asking(link: Arc<Link>) -> batch::Ask {
    Arc::new(move |bucket, max_wait, n| {
        let max_wait_us = max_wait.map_or(-1, |w| i64::try_from(w.as_micros()).unwrap_or(i64::MAX));
        let args = vec![
            bucket.per_second.to_string(),
            bucket.burst.to_string(),
            max_wait_us.to_string(),
            n.to_string(),
        ];
        let asked = link.run(&TAKE, &bucket.key, args);
        Box::pin(async move { asked.await.map(|fields| parse_taken(&fields)) })
    })
}

/// Each request's `taken, micros` from the script: `1` and its wait, or
/// `0` and when to try again.
fn parse_taken(fields: &[String]) -> Vec<batch::Taken> {
    fields
        .chunks(2)
        .map(|pair| {
            let [taken, micros] = pair else {
                return Err(Unavailable("the bucket script answered an odd list".into()));
            };
            let micros: f64 = micros
                .parse()
                .map_err(|_| Unavailable(format!("the bucket script answered {micros:?}")))?;
            let duration = Duration::from_secs_f64(micros.max(0.0) / 1e6);
            Ok(match taken.as_str() {
                "1" => Ok(duration),
                _ => Err(duration),
            })
        })
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
