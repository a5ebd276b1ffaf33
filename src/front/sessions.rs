//! The table of the front's sessions: opening one (within `max_sessions`
//! and its caller's `max_sessions_per_principal`), finding, ending, and
//! reaping the idle, the never-initialized and the legacy ones that lost
//! their stream.

use super::error::FrontError;
use super::quota;
use super::session::{new_id, short, Caller, FrontSession, Kind};
use super::Front;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// The sessions of the front.
#[derive(Default)]
pub(super) struct Sessions {
    map: Mutex<HashMap<String, Arc<FrontSession>>>,
    /// Every session's task: shutdown waits for them.
    pub(super) tasks: tokio_util::task::TaskTracker,
}

impl Sessions {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<FrontSession>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions there are.
    pub(super) fn len(&self) -> usize {
        self.map().len()
    }

    /// Starts a session, unless there are `max_sessions` already or its
    /// caller holds `max_sessions_per_principal`.
    pub(super) async fn open(
        &self,
        front: &Arc<Front>,
        kind: Kind,
        caller: &Caller,
    ) -> Result<Arc<FrontSession>, FrontError> {
        if self.len() >= front.settings.max_sessions {
            return Err(FrontError::TooManySessions);
        }
        let id = new_id(front.settings.replica.as_deref());
        let ticket = quota::ask(front, kind, caller, &id).await?;
        self.admit(front, kind, caller, id, ticket)
    }

    /// Starts a session of the 2026-07-28 pool (no caller's count).
    pub(super) fn open_pooled(
        &self,
        front: &Arc<Front>,
        caller: &Caller,
    ) -> Option<Arc<FrontSession>> {
        let id = new_id(front.settings.replica.as_deref());
        self.admit(front, Kind::Shared, caller, id, None).ok()
    }

    /// Starts session `id` if there is room, checked and taken with no
    /// await between (one thread runs them).
    fn admit(
        &self,
        front: &Arc<Front>,
        kind: Kind,
        caller: &Caller,
        id: String,
        ticket: Option<quota::Ticket>,
    ) -> Result<Arc<FrontSession>, FrontError> {
        let mut map = self.map();
        let refused = if map.len() >= front.settings.max_sessions {
            Some(FrontError::TooManySessions)
        } else if ticket.as_ref().is_some_and(|t| !t.room(map.values())) {
            Some(FrontError::TooManyForCaller)
        } else {
            None
        };
        let quota = ticket.map(|t| t.caller);
        if let Some(refused) = refused {
            drop(map);
            if let Some(caller) = &quota {
                quota::release(caller, &id);
            }
            return Err(refused);
        }
        let session = FrontSession::start(front, kind, caller, id, quota);
        map.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// The sessions held here that count for a caller, by caller.
    pub(super) fn held(&self) -> HashMap<String, Vec<String>> {
        let mut held: HashMap<String, Vec<String>> = HashMap::new();
        for session in self.map().values() {
            if let Some(caller) = &session.quota {
                held.entry(caller.clone())
                    .or_default()
                    .push(session.id.clone());
            }
        }
        held
    }

    pub(super) fn get(&self, id: &str) -> Option<Arc<FrontSession>> {
        self.map().get(id).cloned()
    }

    /// Takes a session out of the table (and out of its caller's count).
    pub(super) fn remove(&self, id: &str) -> Option<Arc<FrontSession>> {
        let removed = self.map().remove(id);
        if let Some(caller) = removed.as_ref().and_then(|s| s.quota.as_deref()) {
            quota::release(caller, id);
        }
        removed
    }

    /// Asks every session to end (`hurry`: at once).
    pub(super) fn stop_all(&self, hurry: bool) {
        for session in self.map().values() {
            match hurry {
                false => session.stop(),
                true => session.hurry(),
            }
        }
    }

    /// Ends, every so often, the sessions that are idle, never finished
    /// their handshake, or (legacy) lost their stream.
    pub(super) async fn reap(front: Arc<Front>) {
        let every = (front.settings.init_timeout.min(front.settings.session_idle) / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(5));
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let now = Instant::now();
            let expired: Vec<(Arc<FrontSession>, &str)> = front
                .sessions
                .map()
                .values()
                .filter_map(|s| s.expired(&front, now).map(|why| (s.clone(), why)))
                .collect();
            for (session, why) in expired {
                tracing::info!(session = %short(&session.id), "ending a session: {why}");
                front.sessions.remove(&session.id);
                session.stop();
            }
        }
    }
}
