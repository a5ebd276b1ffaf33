//! The HTTP front (`--listen`): the chain served to remote clients over
//! Streamable HTTP (and legacy HTTP+SSE), instead of to one client on
//! stdio.
//!
//! Each connection is served by hyper-util through a stack of tower
//! services (`app`): unknown paths 404, then every request is checked
//! (`guard`: Host, Origin, bearer token), then routed and handled
//! (`handler`): `initialize` opens a session (`session`): its own server
//! and its own instance of the chain, the stdio relay with an HTTP client
//! end; its answers find their way back to the right HTTP response
//! (`routes`, `router`, as a `reply::Outgoing`). What is refused is a
//! `FrontError` (`error`). Sessions end on DELETE, when idle, when their
//! server is gone, and at shutdown, which ends them all within the grace
//! and then lets every open connection finish what it is sending.

mod app;
mod backlog;
mod checks;
mod error;
pub(crate) mod guard;
mod handler;
mod intake;
mod public;
mod quota;
mod reply;
pub(crate) mod resource;
mod router;
mod routes;
mod session;
mod sessions;
mod stateless;

use crate::config::{Config, FrontConfig};
use crate::layers::Policy;
use crate::relay::{Make, SessionLayers};
use crate::transport::budget::Budget;
use checks::{Checks, OAuth};
use hyper_util::service::TowerToHyperService;
use mcp_chain_middleware::session::SessionInfo;
use sessions::Sessions;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

/// Most headers a request may carry, and most bytes of its head.
const MAX_HEADERS: usize = 64;
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long a client may take to send a request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// What every request and session of the front shares.
pub(crate) struct Front {
    config: Arc<Config>,
    settings: FrontConfig,
    upstream: crate::relay::Served,
    /// Host, Origin, token and OAuth checks; a reload replaces them
    /// (`[front]` tokens, allowed_hosts, allowed_origins, oauth), for the
    /// requests after it.
    checks: std::sync::RwLock<Arc<Checks>>,
    sessions: Sessions,
    /// Shared sessions for requests without one (2026-07-28).
    pool: stateless::SessionlessPool,
    /// The process's budget of big messages in flight: request bodies and
    /// every session's servers share it.
    budget: Arc<Budget>,
    /// The address listened on.
    listen: SocketAddr,
    /// The shared pool of server connections, in shared mode.
    shared: Option<Arc<crate::pool::SharedPool>>,
    /// Where the layers come from when the config can be reloaded.
    policy: Option<watch::Receiver<Arc<Policy>>>,
}

impl Front {
    /// The checks a request goes through now.
    fn checks(&self) -> Arc<Checks> {
        self.checks
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Takes up each `[front]` a reload publishes: its checks apply to the
    /// requests after it (sessions already open keep their owner).
    async fn follow(self: Arc<Self>, mut settings: watch::Receiver<Arc<FrontConfig>>) {
        while settings.changed().await.is_ok() {
            let next = settings.borrow_and_update().clone();
            let checks = Arc::new(self.checks().reloaded(&next, self.listen));
            *self
                .checks
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = checks;
        }
    }

    /// The scopes some `when` or `unless` of the policy in force names:
    /// two tokens of one subject that hold the same of these get the same
    /// layers, and so may share sessions.
    pub(super) fn named_scopes(&self) -> Arc<std::collections::BTreeSet<String>> {
        let named = |entries: &mut dyn Iterator<Item = &crate::layers::Entry>| {
            let mut named = std::collections::BTreeSet::new();
            for entry in entries {
                let tables = [&entry.applies.when, &entry.applies.unless];
                for callers in tables.into_iter().flatten() {
                    named.extend(callers.scopes.iter().cloned());
                }
            }
            Arc::new(named)
        };
        match &self.policy {
            Some(policy) => {
                let policy = policy.borrow();
                named(&mut policy.entries.iter().map(|e| &**e))
            }
            None => named(&mut self.config.chain.iter()),
        }
    }

    /// The chain's layers for a new session: what a layer learns about a
    /// session starts empty; what is shared by design (a global rate
    /// limit's buckets, the audit file) stays shared.
    /// Only the layers that apply to its caller (`when`, `unless`); they
    /// follow the policy when the config can be reloaded.
    fn layers_for_session(&self, session: &SessionInfo) -> SessionLayers {
        let Some(policy) = &self.policy else {
            let who = crate::callers::Who::of(session);
            let layers = crate::layers::applying(&self.config.chain, who);
            return SessionLayers::fixed(layers.iter().map(|l| l.for_session(session)).collect());
        };
        let session = session.clone();
        let make: Make = Box::new(move |entry| {
            let who = crate::callers::Who::of(&session);
            entry
                .applies
                .to(who)
                .then(|| entry.layer.for_session(&session))
        });
        SessionLayers::following(policy.clone(), make)
    }
}

/// Why the front does not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error("{0} is not a loopback address: anyone who can reach it could use the server. Set front.tokens (a bearer token each client must send), listen on 127.0.0.1, or pass --allow-unauthenticated")]
    Exposed(SocketAddr),
    #[error("front.oauth: {0}")]
    OAuth(#[from] resource::SetupError),
    #[error("front.shared_pool: the shared pool serves one [upstream]; [servers.*] is served a gateway per session")]
    SharedGateway,
    #[error("cannot listen on {listen}: {source}")]
    Listen {
        listen: SocketAddr,
        source: std::io::Error,
    },
}

/// Checks, before binding, that listening on `listen` is safe as
/// configured.
pub(crate) fn check_exposure(
    front: &FrontConfig,
    listen: SocketAddr,
    allow_unauthenticated: bool,
) -> Result<(), StartError> {
    let authenticated = !front.tokens.is_empty() || front.oauth.is_some();
    if listen.ip().is_loopback() || authenticated || allow_unauthenticated {
        return Ok(());
    }
    Err(StartError::Exposed(listen))
}

/// Serves until the first signal, then ends every session (a second
/// signal cuts their grace short).
pub(crate) async fn run(
    config: Config,
    upstream: crate::relay::Served,
    listen: SocketAddr,
    mut signals: mpsc::Receiver<()>,
    followed: Option<crate::reload::Followed>,
) -> Result<(), StartError> {
    let (policy, live) = match followed {
        Some(f) => (Some(f.policy), Some(f.front)),
        None => (None, None),
    };
    let failed = |source| StartError::Listen { listen, source };
    let listener = TcpListener::bind(listen).await.map_err(failed)?;
    let bound = listener.local_addr().map_err(failed)?;
    let settings = config.front.clone();
    let budget = Budget::new(config.max_bytes_in_flight);
    let oauth = match settings.oauth.as_deref() {
        Some(oauth) => OAuth::On(Arc::new(resource::ResourceServer::new(oauth.clone())?)),
        None => OAuth::Off,
    };
    let config = Arc::new(config);
    let shared = match (settings.shared_pool, &upstream) {
        (None, _) => None,
        (Some(size), crate::relay::Served::One(one)) => Some(crate::pool::SharedPool::start(
            size,
            config.clone(),
            budget.clone(),
            one.clone(),
        )),
        (Some(_), crate::relay::Served::Many(_)) => return Err(StartError::SharedGateway),
    };
    let front = Arc::new(Front {
        checks: std::sync::RwLock::new(Arc::new(Checks::new(&settings, bound, oauth))),
        config,
        settings,
        upstream,
        sessions: Sessions::default(),
        pool: stateless::SessionlessPool::default(),
        budget,
        listen: bound,
        shared,
        policy,
    });
    let path = &front.settings.path;
    let legacy = if front.settings.legacy_sse {
        ", legacy HTTP+SSE at /sse"
    } else {
        ""
    };
    tracing::warn!("mcp-chain serving Streamable HTTP at http://{bound}{path}{legacy}");
    let reaper = tokio::spawn(Sessions::reap(front.clone()));
    let renewer = tokio::spawn(quota::renew(front.clone()));
    let following = live.map(|live| tokio::spawn(front.clone().follow(live)));
    let limits = crate::serve::Limits {
        max_connections: front.settings.max_connections,
        head_timeout: HEAD_TIMEOUT,
        connection_time: None,
        keep_alive: true,
        max_headers: MAX_HEADERS,
        max_head_bytes: MAX_HEAD_BYTES,
    };
    let stop = async {
        // A closed signal channel is no stop: only a signal is.
        if signals.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    };
    let connections = crate::serve::serve(
        listener,
        limits,
        |peer| TowerToHyperService::new(app::stack(&front, peer)),
        stop,
    )
    .await;
    reaper.abort();
    renewer.abort();
    if let Some(following) = following {
        following.abort();
    }
    tracing::info!("asked to stop; ending every session");
    // Given back before the sessions end, so other replicas can open
    // them at once rather than when their leases run out.
    quota::release_all(front.sessions.held()).await;
    front.sessions.stop_all(false);
    front.sessions.tasks.close();
    let hurried = tokio::select! {
        () = front.sessions.tasks.wait() => false,
        Some(()) = signals.recv() => {
            tracing::warn!("asked to stop again; ending the servers now");
            front.sessions.stop_all(true);
            front.sessions.tasks.wait().await;
            true
        }
    };
    if let Some(pool) = &front.shared {
        pool.stop();
    }
    // Every session's streams have ended; each connection finishes the
    // response it is writing (an answer owed, a stream's last events),
    // idle ones close. A client that stops reading is not waited for
    // beyond the grace, nor after a second signal.
    if !hurried {
        let grace = front.config.shutdown_grace;
        tokio::select! {
            () = connections.shutdown() => {}
            () = tokio::time::sleep(grace) => {
                tracing::warn!("HTTP connections still open after the grace; closed");
            }
            Some(()) = signals.recv() => {}
        }
    }
    Ok(())
}
