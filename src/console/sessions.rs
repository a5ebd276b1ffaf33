//! The sessions the console lists: each client session mcp-chain relays
//! (the one of stdio, every session of the HTTP front), who opened it,
//! from where, since when, and the server it leads to. A session is
//! listed while it runs ([`Listed`] takes it off when dropped); without
//! `[console]` nothing is kept.

use mcp_chain_middleware::shown::shown;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// One running session, as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Running {
    /// The front session's id (its first 8 hex digits), or `stdio`.
    pub(crate) id: String,
    /// How the client reaches mcp-chain: `stdio` or `http`.
    pub(crate) transport: &'static str,
    /// The address it was opened from, over HTTP.
    pub(crate) from: Option<String>,
    /// Who: an OAuth subject (with its issuer) or a static token's name.
    pub(crate) caller: Option<String>,
    pub(crate) since_ms: u128,
}

#[derive(Default)]
struct Registry {
    next: AtomicU64,
    running: Mutex<BTreeMap<u64, Running>>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Starts keeping the sessions (with `[console]`).
pub(super) fn keep() {
    let _ = REGISTRY.set(Registry::default());
}

/// A session while it is listed.
pub(crate) struct Listed(Option<u64>);

impl Drop for Listed {
    fn drop(&mut self) {
        if let (Some(key), Some(registry)) = (self.0, REGISTRY.get()) {
            lock(registry).remove(&key);
        }
    }
}

/// Lists a session that starts, until the returned guard is dropped.
pub(crate) fn started(id: Option<&str>, from: Option<String>, caller: Option<String>) -> Listed {
    let Some(registry) = REGISTRY.get() else {
        return Listed(None);
    };
    let key = registry.next.fetch_add(1, Ordering::Relaxed);
    let running = Running {
        id: id.unwrap_or("stdio").to_owned(),
        transport: if id.is_some() { "http" } else { "stdio" },
        from,
        caller: caller.map(|c| shown(&c, 200)),
        since_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
    };
    lock(registry).insert(key, running);
    Listed(Some(key))
}

/// The sessions running, oldest first.
pub(super) fn running() -> Vec<Running> {
    REGISTRY
        .get()
        .map(|registry| lock(registry).values().cloned().collect())
        .unwrap_or_default()
}

fn lock(registry: &Registry) -> std::sync::MutexGuard<'_, BTreeMap<u64, Running>> {
    registry
        .running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}
