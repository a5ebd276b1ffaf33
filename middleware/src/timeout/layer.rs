//! [`TimeoutLayer`]: the checked settings and the state both directions share.

use super::service::Timeout;
use crate::message::Request;
use crate::pattern::Pattern;
use crate::target::Target;
use crate::RequestId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;
use tower::Layer;

/// A deadline, or `None` where the config says `"none"`.
pub(super) type Deadline = Option<Duration>;

/// Which deadline applies to which request.
#[derive(Debug)]
pub(super) struct Rules {
    pub(super) default: Deadline,
    pub(super) tools: Vec<(Pattern, Deadline)>,
    pub(super) methods: Vec<(Pattern, Deadline)>,
    pub(super) reset_on_progress: bool,
    pub(super) max_total: Option<Duration>,
}

/// What the client-to-server and server-to-client services share: the rules,
/// and the progress tokens of the requests being timed, so a progress
/// notification coming back from the server can push its request's deadline.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) rules: Arc<Rules>,
    /// progressToken → the waker of the request that carries it. An entry
    /// lives as long as its request's future (removed by [`ProgressWatch`]'s
    /// drop), so the map holds only requests in flight.
    progress: Mutex<HashMap<RequestId, Arc<Notify>>>,
}

/// Builds [`Timeout`] services; clones share one state.
#[derive(Debug, Clone)]
pub struct TimeoutLayer {
    shared: Arc<Shared>,
}

// === impl TimeoutLayer ===

impl TimeoutLayer {
    pub(super) fn new(rules: Rules) -> Self {
        Self::with(Arc::new(rules))
    }

    fn with(rules: Arc<Rules>) -> Self {
        Self {
            shared: Arc::new(Shared {
                rules,
                progress: Mutex::default(),
            }),
        }
    }

    /// The layer for one client session of the HTTP front: the same
    /// deadlines; the progress tokens it watches are the session's own.
    pub fn for_session(&self) -> Self {
        Self::with(self.shared.rules.clone())
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout::new(inner, self.shared.clone())
    }
}

// === impl Rules ===

impl Rules {
    /// The deadline for `req`: a matching `tools` entry for `tools/call`,
    /// else a matching `methods` entry, else `default`.
    pub(super) fn deadline_for(&self, req: &Request) -> Deadline {
        if let Ok(Some(Target::Tool(name))) = Target::of(&req.method, req.params.as_ref()) {
            if let Some((_, d)) = self.tools.iter().find(|(p, _)| p.is_match(&name)) {
                return *d;
            }
        }
        match self.methods.iter().find(|(p, _)| p.is_match(&req.method)) {
            Some((_, d)) => *d,
            None => self.default,
        }
    }
}

// === impl Shared ===

impl Shared {
    /// Starts watching `token` for progress on behalf of one request.
    pub(super) fn watch(self: &Arc<Self>, token: RequestId) -> ProgressWatch {
        let notify = Arc::new(Notify::new());
        self.progress_map().insert(token.clone(), notify.clone());
        ProgressWatch {
            shared: self.clone(),
            token,
            notify,
        }
    }

    /// A progress notification for `token` arrived: wake its request.
    pub(super) fn progressed(&self, token: &RequestId) {
        if let Some(notify) = self.progress_map().get(token) {
            // notify_one keeps a permit when the request is not waiting yet,
            // so progress that races its request's first poll still counts.
            notify.notify_one();
        }
    }

    fn progress_map(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Arc<Notify>>> {
        // The map is left consistent by every critical section (one insert
        // or remove), so a poisoned lock is still safe to use.
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request's interest in its progress token; unregisters on drop.
#[derive(Debug)]
pub(super) struct ProgressWatch {
    shared: Arc<Shared>,
    token: RequestId,
    pub(super) notify: Arc<Notify>,
}

impl Drop for ProgressWatch {
    fn drop(&mut self) {
        let mut map = self.shared.progress_map();
        // Two requests may (wrongly) share a token; remove only our own entry.
        if map
            .get(&self.token)
            .is_some_and(|n| Arc::ptr_eq(n, &self.notify))
        {
            map.remove(&self.token);
        }
    }
}
