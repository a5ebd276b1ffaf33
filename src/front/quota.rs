//! `[front] max_sessions_per_principal`: how many sessions one caller may
//! hold at once, so one principal cannot take every session of the front.
//! A caller is an OAuth principal (its subject at its issuer, whichever
//! token or scopes it presents) or a static token (by its name); a front
//! with neither has no callers to tell apart, and `max_sessions` alone
//! bounds it. The sessions a client opens count (Streamable HTTP and
//! legacy); the 2026-07-28 pool's, bounded by the pool, do not.
//!
//! Counted on this replica, or with `[state]` for every replica on Redis
//! (`src/state/sessions.rs`), where a store that cannot be asked refuses
//! the session (`on_unavailable = "refuse"`: fail closed) or counts on
//! this replica alone (`"local"`).

use super::error::FrontError;
use super::session::{Caller, FrontSession, Kind};
use super::Front;
use std::sync::Arc;

/// A new session's place in its caller's count.
pub(super) struct Ticket {
    /// Who it counts for (a principal or a token, as [`caller_key`] says).
    pub(super) caller: String,
    max: usize,
    /// Counted already, for every replica.
    everywhere: bool,
}

/// What a caller's sessions are counted by, if it is anyone.
fn caller_key(caller: &Caller) -> Option<String> {
    match (&caller.principal, &caller.token) {
        (Some(p), _) => Some(format!("principal\n{}\n{}", p.issuer, p.subject)),
        (None, Some(pass)) => Some(format!("token\n{}", pass.name)),
        (None, None) => None,
    }
}

/// Counts a session `id` about to be opened for `caller`: `None` when no
/// cap applies to it, an error when the caller holds the most already (or,
/// failing closed, when its sessions cannot be counted).
pub(super) async fn ask(
    front: &Front,
    kind: Kind,
    caller: &Caller,
    id: &str,
) -> Result<Option<Ticket>, FrontError> {
    let (Some(max), Some(key)) = (
        front.settings.max_sessions_per_principal,
        caller_key(caller),
    ) else {
        return Ok(None);
    };
    if kind == Kind::Shared {
        return Ok(None);
    }
    #[cfg(feature = "state")]
    if let Some(shared) = crate::state::sessions() {
        use mcp_chain_middleware::shared::Fallback;
        match shared.open(&key, id, max).await {
            Ok(true) => {
                return Ok(Some(Ticket {
                    caller: key,
                    max,
                    everywhere: true,
                }))
            }
            Ok(false) => return Err(FrontError::TooManyForCaller),
            // The store says it is away, once a minute.
            Err(_) if shared.fallback == Fallback::Refuse => {
                tracing::debug!("a new session refused: its caller's sessions cannot be counted");
                return Err(FrontError::StateUnavailable);
            }
            Err(_) => {
                tracing::debug!("a caller's sessions counted on this replica alone");
            }
        }
    }
    #[cfg(not(feature = "state"))]
    let _ = id;
    Ok(Some(Ticket {
        caller: key,
        max,
        everywhere: false,
    }))
}

impl Ticket {
    /// Whether the caller has room, given the sessions held here (a
    /// ticket counted for every replica has it already).
    pub(super) fn room<'a>(&self, held: impl Iterator<Item = &'a Arc<FrontSession>>) -> bool {
        self.everywhere
            || held
                .filter(|s| s.quota.as_deref() == Some(self.caller.as_str()))
                .count()
                < self.max
    }
}

/// Stops counting a session that ended (or was not opened after all).
pub(super) fn release(caller: &str, session: &str) {
    #[cfg(feature = "state")]
    if let Some(shared) = crate::state::sessions() {
        let held = [(caller.to_owned(), vec![session.to_owned()])].into();
        tokio::spawn(async move {
            // A lease not taken back ends by itself within the lease.
            let _ = shared.close(held).await;
        });
    }
    #[cfg(not(feature = "state"))]
    let _ = (caller, session);
}

/// Stops counting, for every replica, the sessions this one held (it is
/// stopping); bounded by `[state] timeout`.
pub(super) async fn release_all(held: std::collections::HashMap<String, Vec<String>>) {
    #[cfg(feature = "state")]
    if let Some(shared) = crate::state::sessions() {
        if !held.is_empty() {
            let _ = shared.close(held).await;
        }
    }
    #[cfg(not(feature = "state"))]
    let _ = held;
}

/// Renews, for as long as the front serves, the leases of the sessions
/// this replica holds (with `[state]` and a cap; else returns at once).
pub(super) async fn renew(front: Arc<Front>) {
    #[cfg(feature = "state")]
    {
        let Some(shared) = crate::state::sessions() else {
            return;
        };
        if front.settings.max_sessions_per_principal.is_none() {
            return;
        }
        let mut tick = tokio::time::interval(crate::state::RENEW_EVERY);
        loop {
            tick.tick().await;
            let held = front.sessions.held();
            if !held.is_empty() {
                // A renewal that fails is tried at the next tick; a lease
                // outlasts three of them.
                let _ = shared.renew(held).await;
            }
        }
    }
    #[cfg(not(feature = "state"))]
    let _ = front;
}
