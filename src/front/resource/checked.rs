//! Tokens checked already: by a hash of the token (the token itself is not
//! kept), the principal it names, until it expires (an introspected token
//! at most briefly). A JWT's signature is then checked once per token, not
//! once per request. Bounded: past [`MAX_KEPT`] the expired go, then all.

use super::Principal;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Tokens kept at most.
const MAX_KEPT: usize = 10_000;

/// A token's hash → its principal, and until when (seconds since the epoch).
type Kept = HashMap<[u8; 32], (Arc<Principal>, u64)>;

#[derive(Default)]
pub(super) struct Checked {
    kept: Mutex<Kept>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Checked {
    pub(super) fn key(token: &str) -> [u8; 32] {
        Sha256::digest(token.as_bytes()).into()
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The principal of a token checked before and not expired since.
    pub(super) fn recall(&self, key: &[u8; 32]) -> Option<Arc<Principal>> {
        let kept = self.kept();
        let (principal, until) = kept.get(key)?;
        (now() < *until).then(|| principal.clone())
    }

    /// Keeps a checked token's principal until its `exp` (or, with
    /// `at_most`, no longer than that from now). Returns it, shared.
    pub(super) fn remember(
        &self,
        key: [u8; 32],
        principal: Principal,
        at_most: Option<Duration>,
    ) -> Arc<Principal> {
        let now = now();
        let cap = at_most.map_or(u64::MAX, |d| now.saturating_add(d.as_secs()));
        let until = principal.expires_at.unwrap_or(now).min(cap);
        let principal = Arc::new(principal);
        if until > now {
            let mut kept = self.kept();
            if kept.len() >= MAX_KEPT {
                kept.retain(|_, (_, until)| *until > now);
                if kept.len() >= MAX_KEPT {
                    kept.clear();
                }
            }
            kept.insert(key, (principal.clone(), until));
        }
        principal
    }
}
