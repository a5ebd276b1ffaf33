//! State that several replicas of mcp-chain keep as one (`[state]` in the
//! binary's config, kept on Redis). Without it every process keeps its own,
//! as it always did; with it, what must agree across replicas behind one
//! load balancer is decided where they all see it: a rate limit's bucket
//! lets through what one process would, whichever replica a request hits.
//!
//! The layers do not know where the state is: the binary installs a
//! [`SharedState`] once at start, and a layer asks it at call time. Every
//! ask is bounded (the store answers [`Unavailable`] rather than make a
//! request wait on it), and what a layer does then is the deployment's
//! choice ([`Fallback`]): refuse what needed the shared state, or decide
//! on this process's own for as long as the store is away.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A future a store answers with.
pub type StoreFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A table's rows: each field and its bytes.
pub type Rows = Vec<(String, Vec<u8>)>;

/// One token bucket kept in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBucket {
    /// Its key, without the deployment's prefix (the store adds it); it
    /// names no caller or argument in clear.
    pub key: String,
    /// Tokens earned per second.
    pub per_second: f64,
    /// Tokens it holds at most (it starts full).
    pub burst: u32,
}

/// The store could not be asked in time (down, slow, refused us).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shared state unavailable: {}", self.0)
    }
}

/// What a layer does when the store is [`Unavailable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fallback {
    /// Fail closed: what needed the shared state is refused (-32000,
    /// `data.reason = "state_unavailable"`); everything else goes on.
    #[default]
    Refuse,
    /// Decide on this process's own state meanwhile (the binary says so,
    /// loudly).
    Local,
}

/// Where replicas keep what they share.
pub trait SharedState: Send + Sync + fmt::Debug + 'static {
    /// Takes a token from `bucket`, decided atomically by the store on its
    /// own clock. With `max_wait`, a token that will be there within it is
    /// reserved: `Ok(Ok(wait))` says how long until it may be used. Over
    /// the limit: `Ok(Err(retry_after))`, nothing taken.
    fn take(
        &self,
        bucket: &SharedBucket,
        max_wait: Option<Duration>,
    ) -> StoreFuture<Result<Result<Duration, Duration>, Unavailable>>;

    /// Gives back a reserved token never used (its request was cancelled
    /// while it waited). Best effort.
    fn refund(&self, bucket: &SharedBucket) -> StoreFuture<()>;

    /// What layers do while the store is unavailable.
    fn fallback(&self) -> Fallback;

    /// The rows of `table` (named without the deployment's prefix): small
    /// records every replica sees (a person's decisions: grants, accepted
    /// pins, off switches), each under its own field.
    fn rows(&self, table: &str) -> StoreFuture<Result<Rows, Unavailable>> {
        let _ = table;
        no_tables()
    }

    /// The rows `fields` of `table`, in their order (`None` where there
    /// is none): what a lookup that knows its rows reads, however large
    /// the table grew.
    fn pick(
        &self,
        table: &str,
        fields: &[String],
    ) -> StoreFuture<Result<Vec<Option<Vec<u8>>>, Unavailable>> {
        let _ = (table, fields);
        no_tables()
    }

    /// Sets row `field` of `table` (with `only_new`, only when it has none:
    /// the first replica's wins) and, when it was set, tells every replica
    /// the table changed. Whether it was set.
    fn put(
        &self,
        table: &str,
        field: &str,
        bytes: Vec<u8>,
        only_new: bool,
    ) -> StoreFuture<Result<bool, Unavailable>> {
        let _ = (table, field, bytes, only_new);
        no_tables()
    }

    /// Removes row `field` of `table` and tells every replica; whether
    /// there was one.
    fn remove(&self, table: &str, field: &str) -> StoreFuture<Result<bool, Unavailable>> {
        let _ = (table, field);
        no_tables()
    }

    /// Appends a record to `log`, which keeps its last `keep`.
    fn append(
        &self,
        log: &str,
        bytes: Vec<u8>,
        keep: usize,
    ) -> StoreFuture<Result<(), Unavailable>> {
        let _ = (log, bytes, keep);
        no_tables()
    }

    /// The last `n` records of `log`, oldest first.
    fn tail(&self, log: &str, n: usize) -> StoreFuture<Result<Vec<Vec<u8>>, Unavailable>> {
        let _ = (log, n);
        no_tables()
    }

    /// The names of tables changed by any replica (this one's too), as
    /// they change; `None` when the store tells of none.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }
}

/// What a follower of one table waits for: the table announced changed
/// by any replica, or its time to read it again anyway (for what an
/// interrupted announcement missed), whichever comes first. Other tables'
/// announcements do not put the reading off.
pub struct Follow {
    changes: Option<tokio::sync::broadcast::Receiver<String>>,
    table: String,
    every: Duration,
}

impl Follow {
    pub fn new(store: &dyn SharedState, table: String, every: Duration) -> Self {
        Self {
            changes: store.changes(),
            table,
            every,
        }
    }

    /// Returns when the table is to be read again.
    pub async fn next(&mut self) {
        use tokio::sync::broadcast::error::RecvError;
        let deadline = tokio::time::Instant::now() + self.every;
        loop {
            let Some(rx) = self.changes.as_mut() else {
                tokio::time::sleep_until(deadline).await;
                return;
            };
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Ok(changed)) if changed != self.table => continue,
                // Ours, missed ones (lagged), or the time to read again.
                Ok(Ok(_)) | Ok(Err(RecvError::Lagged(_))) | Err(_) => return,
                Ok(Err(RecvError::Closed)) => self.changes = None,
            }
        }
    }
}

fn no_tables<T: Send + 'static>() -> StoreFuture<Result<T, Unavailable>> {
    Box::pin(std::future::ready(Err(Unavailable(
        "this store keeps no tables".into(),
    ))))
}

static INSTALLED: OnceLock<Arc<dyn SharedState>> = OnceLock::new();

/// Installs the process's shared state (once, at start: `[state]` is not
/// changed by a reload).
pub fn install(state: Arc<dyn SharedState>) {
    let _ = INSTALLED.set(state);
}

/// The shared state, when the process has one.
pub fn installed() -> Option<&'static Arc<dyn SharedState>> {
    INSTALLED.get()
}

/// The answer to a request that needed the shared state while it was
/// unavailable (`Fallback::Refuse`): -32000, `reason = "state_unavailable"`.
pub fn refusal(layer: &str, why: &Unavailable) -> crate::ErrorObject {
    crate::ErrorObject::refusal(
        crate::ErrorCode::STATE_UNAVAILABLE,
        layer,
        "state_unavailable",
        &format!(
            "{layer}: the state replicas share is unavailable ({}); refused rather than decided alone",
            why.0
        ),
    )
}

/// A short digest of `text` for a key: what a caller is called (a subject,
/// a static token) never appears in the store in clear.
pub fn digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().take(12).map(|b| format!("{b:02x}")).collect()
}
