//! [`RateLimitLayer`]: the rules with their buckets, shared by every service
//! the layer builds (both directions, every clone).

use super::bucket::Bucket;
use super::config::{OnLimit, RuleDirection, Scope};
use super::service::RateLimit;
use crate::message::Request;
use crate::pattern::Pattern;
use crate::shared::{SharedBucket, SharedState};
use crate::target::Target;
use crate::units::Rate;
use crate::{lock, Direction, RequestId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use tower::Layer;

/// Checked settings.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) on_limit: OnLimit,
    pub(super) max_wait: Duration,
    pub(super) rules: Vec<Rule>,
    pub(super) scope: Scope,
    /// Where these buckets are kept in the shared state (`[state]`): the
    /// layer's identity and whose buckets they are; `None` for buckets
    /// of one session, which lives on one replica. Rule `i`'s bucket is
    /// `{shared_key}:{i}`.
    pub(super) shared_key: Option<String>,
}

impl Settings {
    /// The first rule that matches, with its index.
    pub(super) fn rule_for(&self, direction: Direction, req: &Request) -> Option<usize> {
        self.rules.iter().position(|r| r.matches(direction, req))
    }

    /// The same rules with full buckets of their own, kept in the shared
    /// state under `shared_key`.
    fn fresh(&self, shared_key: Option<String>) -> Self {
        Self {
            on_limit: self.on_limit,
            max_wait: self.max_wait,
            rules: self.rules.iter().map(Rule::fresh).collect(),
            scope: self.scope,
            shared_key,
        }
    }

    /// What the layer limits, in words: the same text on every replica
    /// that runs the same config (its digest names the shared buckets).
    pub(super) fn describe(&self) -> String {
        let rules: Vec<String> = self
            .rules
            .iter()
            .map(|r| format!("{r} {:?}", r.direction))
            .collect();
        format!(
            "{:?} {:?} {:?} {}",
            self.scope,
            self.on_limit,
            self.max_wait,
            rules.join("; ")
        )
    }
}

/// What a rule matches.
#[derive(Debug, Clone)]
pub(super) enum Matcher {
    /// `tools/call` for a tool whose name matches.
    Tool(Pattern),
    /// A request whose method matches.
    Method(Pattern),
    /// Every request: a global limit.
    Any,
}

/// One rule and its bucket.
#[derive(Debug)]
pub(super) struct Rule {
    pub(super) matcher: Matcher,
    pub(super) direction: RuleDirection,
    pub(super) rate: Rate,
    pub(super) burst: u32,
    pub(super) bucket: Mutex<Bucket>,
}

/// The rules, and the requests held in `wait` mode (so a cancellation for
/// one can release it before it ever reaches the other side).
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) settings: Arc<Settings>,
    /// `scope = "server"` in a gateway's shared chain: each server's
    /// rules, by its index in the gateway (shared by every session).
    servers: Option<PerServer>,
    /// (direction of the request, its id) → the wake-up for its cancellation.
    /// An entry lives as long as the held request's [`Hold`].
    held: Mutex<HashMap<(Direction, RequestId), Arc<Notify>>>,
    /// The shared state these buckets are kept in, when it is not the
    /// process's installed one (tests, an embedding program).
    pub(super) store: Option<Arc<dyn SharedState>>,
    /// In a gateway server's own chain: the server (a digest of its name),
    /// whose own these buckets are in the shared state.
    own: Option<String>,
}

/// Each gateway server's own copy of the rules (made on its first request).
type PerServer = Arc<Mutex<HashMap<usize, Arc<Settings>>>>;

/// Builds [`RateLimit`] services; clones share the buckets.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    shared: Arc<Shared>,
    /// `scope = "principal"`: each caller's rules, kept for the life of
    /// the process (a caller does not get fresh buckets by reconnecting).
    principals: Arc<Mutex<HashMap<String, Arc<Settings>>>>,
}

/// Callers whose buckets are kept at most; past it, the buckets of callers
/// with no session left go.
const MAX_PRINCIPALS: usize = 10_000;

// === impl RateLimitLayer ===

impl RateLimitLayer {
    pub(super) fn new(settings: Settings) -> Self {
        Self::with(Arc::new(settings))
    }

    fn with(settings: Arc<Settings>) -> Self {
        Self::sharing(settings, None)
    }

    fn sharing(settings: Arc<Settings>, store: Option<Arc<dyn SharedState>>) -> Self {
        let servers = (settings.scope == Scope::Server).then(PerServer::default);
        Self {
            shared: Arc::new(Shared {
                settings,
                servers,
                held: Mutex::default(),
                store,
                own: None,
            }),
            principals: Arc::default(),
        }
    }

    /// The layer in the own chain of a gateway's server, `name`: its
    /// requests are all that server's, so `scope = "server"` is one set of
    /// buckets (kept in the shared state as that server's own).
    pub fn for_server(&self, name: &str) -> Self {
        Self {
            shared: Arc::new(Shared {
                settings: self.shared.settings.clone(),
                servers: None,
                held: Mutex::default(),
                store: self.shared.store.clone(),
                own: Some(crate::shared::digest(name)),
            }),
            principals: self.principals.clone(),
        }
    }

    /// The same layer, its buckets kept in `store` rather than the
    /// process's installed shared state (tests, a program embedding the
    /// layers).
    pub fn with_store(mut self, store: Arc<dyn SharedState>) -> Self {
        let shared = Arc::get_mut(&mut self.shared).expect("a layer not yet shared");
        shared.store = Some(store);
        self
    }

    /// The layer for one client session of the HTTP front, whose caller is
    /// `principal` (a key naming it; `None` without one): requests held
    /// are the session's own (ids are per session); the buckets are shared
    /// by every session, the session's own with `scope = "session"`, or
    /// its caller's with `scope = "principal"`.
    pub fn for_session(&self, principal: Option<&str>) -> Self {
        let settings = &self.shared.settings;
        let fresh = |key: Option<String>| Arc::new(settings.fresh(key));
        let store = self.shared.store.clone();
        let mut layer = match settings.scope {
            Scope::Global => Self::sharing(settings.clone(), store),
            // The same buckets for every session, as global, each server's.
            Scope::Server => Self {
                shared: Arc::new(Shared {
                    settings: settings.clone(),
                    servers: self.shared.servers.clone(),
                    held: Mutex::default(),
                    store,
                    own: None,
                }),
                principals: Arc::default(),
            },
            Scope::Session => Self::sharing(fresh(None), store),
            Scope::Principal => {
                let mut principals = lock(&self.principals);
                if principals.len() >= MAX_PRINCIPALS {
                    principals.retain(|_, s| Arc::strong_count(s) > 1);
                }
                let key = principal.unwrap_or_default().to_owned();
                // The caller is named in the shared state by a digest only.
                let shared = settings
                    .shared_key
                    .as_ref()
                    .map(|k| format!("{k}{}", crate::shared::digest(&key)));
                let settings = principals.entry(key).or_insert_with(|| fresh(shared));
                Self::sharing(settings.clone(), store)
            }
        };
        layer.principals = self.principals.clone();
        layer
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit::new(inner, self.shared.clone())
    }
}

// === impl Rule ===

impl Rule {
    /// The same rule with a full bucket of its own.
    fn fresh(&self) -> Self {
        Self {
            matcher: self.matcher.clone(),
            direction: self.direction,
            rate: self.rate,
            burst: self.burst,
            bucket: Mutex::new(Bucket::new(self.rate, self.burst)),
        }
    }

    fn matches(&self, direction: Direction, req: &Request) -> bool {
        let direction_ok = matches!(
            (self.direction, direction),
            (RuleDirection::Both, _)
                | (RuleDirection::ClientToServer, Direction::ToServer)
                | (RuleDirection::ServerToClient, Direction::ToClient)
        );
        direction_ok
            && match &self.matcher {
                Matcher::Tool(p) => match Target::of(&req.method, req.params.as_ref()) {
                    Ok(Some(Target::Tool(name))) => p.is_match(&name),
                    // A call whose tool cannot be read counts against every
                    // tool rule: it cannot slip past a limit unjudged.
                    Err(_) => req.method == crate::message::method::TOOLS_CALL,
                    Ok(_) => false,
                },
                Matcher::Method(p) => p.is_match(&req.method),
                Matcher::Any => true,
            }
    }

    pub(super) fn take(&self, now: Instant) -> Result<(), Duration> {
        lock(&self.bucket).take(now)
    }

    pub(super) fn reserve(&self, now: Instant, max_wait: Duration) -> Result<Duration, Duration> {
        lock(&self.bucket).reserve(now, max_wait)
    }
}

impl fmt::Display for Rule {
    /// `tool "search*" (5/s, burst 5)`, for refusal messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.matcher {
            Matcher::Tool(p) => write!(f, "tool {:?}", p.as_str())?,
            Matcher::Method(p) => write!(f, "method {:?}", p.as_str())?,
            Matcher::Any => f.write_str("all requests")?,
        }
        write!(f, " ({}, burst {})", self.rate, self.burst)
    }
}

// === impl Shared ===

impl Shared {
    /// Rule `rule`'s bucket of `settings` in the shared state, when these
    /// buckets are kept there.
    pub(super) fn shared_bucket(&self, settings: &Settings, rule: usize) -> Option<SharedBucket> {
        let mut key = settings.shared_key.clone()?;
        if let Some(own) = &self.own {
            key = format!("{key}:own:{own}");
        }
        let rule_of = settings.rules.get(rule)?;
        Some(SharedBucket {
            key: format!("{key}:{rule}"),
            per_second: rule_of.rate.per_second(),
            burst: rule_of.burst,
        })
    }

    /// The rules `req` is judged by: the layer's, or with `scope =
    /// "server"` in a gateway's shared chain, those of the server the tool
    /// it names is of (one that names none, or no server, the layer's).
    pub(super) fn settings_for(&self, req: &Request) -> Arc<Settings> {
        let server = self.servers.as_ref().and_then(|servers| {
            let names = crate::servers::installed()?;
            let target = Target::of(&req.method, req.params.as_ref()).ok()??;
            let (Target::Tool(name) | Target::Prompt(name)) = target else {
                return None;
            };
            Some((servers, names.split(&name)?.0))
        });
        let Some((servers, k)) = server else {
            return self.settings.clone();
        };
        let mut servers = lock(servers);
        servers
            .entry(k)
            .or_insert_with(|| {
                let name = crate::servers::installed().map_or("", |n| n.name(k));
                let shared = self
                    .settings
                    .shared_key
                    .as_ref()
                    .map(|key| format!("{key}:server:{}", crate::shared::digest(name)));
                Arc::new(self.settings.fresh(shared))
            })
            .clone()
    }

    /// Registers a request held for `rule`'s token of `settings`.
    pub(super) fn hold(
        self: &Arc<Self>,
        settings: Arc<Settings>,
        direction: Direction,
        id: RequestId,
        rule: usize,
        from: Option<(Arc<dyn SharedState>, SharedBucket)>,
    ) -> Hold {
        let cancelled = Arc::new(Notify::new());
        lock(&self.held).insert((direction, id.clone()), cancelled.clone());
        Hold {
            shared: self.clone(),
            settings,
            key: (direction, id),
            rule,
            from,
            cancelled,
            used: false,
        }
    }

    /// Wakes the held request `id`, if there is one, so it gives up its
    /// token and answers nothing. True when a held request was cancelled.
    pub(super) fn cancel_held(&self, direction: Direction, id: RequestId) -> bool {
        match lock(&self.held).remove(&(direction, id)) {
            Some(cancelled) => {
                // notify_one keeps a permit if the request has not started
                // waiting yet, so the cancellation cannot be missed.
                cancelled.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A request held in `wait` mode. Dropped without [`Hold::use_token`] (the
/// request was cancelled, or its future dropped), it refunds the token it
/// reserved so the requests behind it move up.
#[derive(Debug)]
pub(super) struct Hold {
    shared: Arc<Shared>,
    /// The rules whose bucket the token was reserved from.
    settings: Arc<Settings>,
    key: (Direction, RequestId),
    rule: usize,
    /// The shared bucket the token was reserved from, if it was.
    from: Option<(Arc<dyn SharedState>, SharedBucket)>,
    pub(super) cancelled: Arc<Notify>,
    used: bool,
}

impl Hold {
    /// The wait is over and the request goes on: the token is spent.
    pub(super) fn use_token(mut self) {
        self.used = true;
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut held = lock(&self.shared.held);
        if held
            .get(&self.key)
            .is_some_and(|n| Arc::ptr_eq(n, &self.cancelled))
        {
            held.remove(&self.key);
        }
        drop(held);
        if self.used {
            return;
        }
        match self.from.take() {
            Some((store, bucket)) => {
                // Best effort, bounded by the store; never on this thread.
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(store.refund(&bucket));
                }
            }
            None => {
                if let Some(rule) = self.settings.rules.get(self.rule) {
                    lock(&rule.bucket).refund(Instant::now());
                }
            }
        }
    }
}
