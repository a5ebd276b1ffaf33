//! One client session of the HTTP front (the table of them is `sessions`).
//!
//! A session is the stdio relay with its client end swapped: what the
//! client POSTs is parsed once and handed to the relay's reading side
//! through a channel, and what the relay queues for the client is taken by
//! the session's router (see `routes`) instead of a pipe's writer. Each
//! session has its own server (its own child process: a stdio server
//! serves one client; its own connection to a URL) and its own instance
//! of the chain.

use super::resource::Principal;
use super::routes::{self, Owner, Routes};
use super::Front;
use crate::peer::{Peer, Read};
use crate::relay::{self, Ending};
use crate::transport::queue::Queue;
use mcp_chain_middleware::session::SessionInfo;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Messages a session holds from its client before a POST waits.
const INBOX: usize = 64;

/// What a session serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A Streamable HTTP client's session (2025-03-26 to 2025-11-25).
    Streamable,
    /// A legacy HTTP+SSE client's (2024-11-05).
    Legacy,
    /// Requests without a session (2026-07-28), from any client.
    Shared,
}

/// Who sent a request: its address, and what let it in: a static token
/// (an index into `[front] tokens`), or an OAuth access token's principal.
#[derive(Debug, Clone)]
pub(super) struct Caller {
    pub(super) peer: SocketAddr,
    pub(super) token: Option<super::guard::Pass>,
    pub(super) principal: Option<Arc<Principal>>,
    /// The scopes some `when` or `unless` names (of the policy in force):
    /// what of a principal's scopes its sessions are keyed by.
    pub(super) named: Arc<std::collections::BTreeSet<String>>,
}

impl Caller {
    /// What the caller's sessions and requests belong to.
    pub(super) fn owner(&self) -> Owner {
        match (&self.principal, &self.token) {
            (Some(principal), _) => Owner::Principal(principal.owner_key(&self.named)),
            (None, Some(pass)) => Owner::Token(pass.clone()),
            (None, None) => Owner::Anyone,
        }
    }
}

pub(super) struct FrontSession {
    pub(super) id: String,
    /// Taken at [`FrontSession::stop`]: the relay sees its client's input end.
    inbox: Mutex<Option<mpsc::Sender<Read>>>,
    pub(super) routes: routes::Shared,
    stop: mpsc::Sender<()>,
    /// Served over legacy HTTP+SSE (`/sse`): it lives as long as its stream.
    pub(super) legacy: bool,
    /// A pool session, shared by requests without a session.
    pub(super) shared: bool,
    /// The token that opened it: only a request let in by the same one
    /// may use it (another is told there is no such session).
    owner: Owner,
    created: Instant,
    last_seen: Mutex<Instant>,
    /// The client sent `notifications/initialized`.
    initialized: AtomicBool,
    /// The caller it counts for under `max_sessions_per_principal`.
    pub(super) quota: Option<String>,
}

impl FrontSession {
    /// Starts a session for `caller`: its server, its chain, its router.
    pub(super) fn start(
        front: &Arc<Front>,
        kind: Kind,
        caller: &Caller,
        id: String,
        quota: Option<String>,
    ) -> Arc<Self> {
        let (legacy, shared) = (kind == Kind::Legacy, kind == Kind::Shared);
        let (inbox, source) = mpsc::channel(INBOX);
        let (stop, signals) = mpsc::channel(4);
        let queue = Queue::of_messages();
        let routes = Arc::new(Mutex::new(Routes::default()));
        let session = Arc::new(Self {
            id,
            inbox: Mutex::new(Some(inbox)),
            routes: routes.clone(),
            stop,
            legacy,
            shared,
            owner: caller.owner(),
            created: Instant::now(),
            last_seen: Mutex::new(Instant::now()),
            initialized: AtomicBool::new(false),
            quota,
        });
        let client = Peer {
            lifecycle: tokio::spawn(super::router::run(queue.clone(), routes)),
            source,
            sink: queue,
        };
        let front = front.clone();
        let id = session.id.clone();
        // A shared session serves many clients of one caller: its audit
        // lines name the caller, not a client.
        let info = SessionInfo {
            id: short(&id).to_owned(),
            client: if shared {
                "shared".to_owned()
            } else {
                caller.peer.to_string()
            },
            token: caller.token.as_ref().map(|pass| pass.name.to_string()),
            principal: caller.principal.as_deref().map(|p| {
                mcp_chain_middleware::session::Principal {
                    subject: p.subject.clone(),
                    client_id: p.client_id.clone(),
                    issuer: p.issuer.clone(),
                    scopes: p.scopes.clone(),
                }
            }),
        };
        tracing::info!(session = %short(&id), client = %info.client, token = info.token.as_deref(), ?kind, "session started");
        let layers = front.layers_for_session(&info);
        let from = info.client.clone();
        let caller = match (&info.principal, &info.token) {
            (Some(p), _) => Some(format!("{} ({})", p.subject, p.issuer)),
            (None, Some(token)) => Some(format!("token {token}")),
            (None, None) => None,
        };
        // A gateway serves each session its own servers' chains.
        let gateway = match &front.upstream {
            relay::Served::Many(gateway) => Some(gateway.for_session(&info)),
            relay::Served::One(_) => None,
        };
        let tasks = front.sessions.tasks.clone();
        tasks.spawn(async move {
            // In shared mode the session's server is a port into the pool.
            let port = front.shared.clone().map(crate::pool::Port);
            let server: &dyn relay::Starts = match (&port, &gateway) {
                (Some(port), _) => port,
                (None, Some(gateway)) => gateway,
                (None, None) => &front.upstream,
            };
            // In shared mode, the server a session's telemetry names is
            // the pool's (what the port leads to).
            let seen = relay::Seen {
                client: "tcp",
                server: relay::Starts::network_transport(&front.upstream),
                id: Some(short(&id).to_owned()),
                from: Some(from),
                caller,
            };
            let ending = relay::session(&front.config, &front.budget, layers, server, client, signals, Some(seen)).await;
            match ending {
                Ok(Ending::Clean) => tracing::info!(session = %short(&id), "session ended"),
                Ok(Ending::ServerGone(reason)) => {
                    tracing::warn!(session = %short(&id), %reason, "session ended: its server is gone")
                }
                Err(e) => tracing::warn!(session = %short(&id), error = %e, "session could not start"),
            }
            front.sessions.remove(&id);
        });
        session
    }

    /// Hands a client's message to the session. `false` when it has ended.
    pub(super) async fn send(&self, read: Read) -> bool {
        self.touch();
        let inbox = self
            .inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match inbox {
            Some(inbox) => inbox.send(read).await.is_ok(),
            None => false,
        }
    }

    /// Whether `caller` may use this session: the one that opened it.
    pub(super) fn belongs_to(&self, caller: &Caller) -> bool {
        self.owner == caller.owner()
    }

    pub(super) fn touch(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    pub(super) fn initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
    }

    /// Ends the session as a stdio client ends one by closing its input:
    /// answers still owed are finished within the shutdown grace, then its
    /// server is ended.
    pub(super) fn stop(&self) {
        self.inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// Cuts a stopping session's grace short.
    pub(super) fn hurry(&self) {
        let _ = self.stop.try_send(());
    }

    /// Why the session should be reaped now, if it should.
    /// A session with a request in flight is never idle, and its idle
    /// time counts from its last request or answer, whichever came last.
    pub(super) fn expired(&self, front: &Front, now: Instant) -> Option<&'static str> {
        let (streaming, busy, last_done) = {
            let routes = routes::lock(&self.routes);
            (routes.streaming(), routes.in_flight(), routes.last_done)
        };
        let last_seen = *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let last_active = last_done.map_or(last_seen, |done| done.max(last_seen));
        if self.legacy && !streaming && now - self.created > LEGACY_GRACE {
            return Some("its event stream closed");
        }
        if busy {
            return None;
        }
        if !self.initialized.load(Ordering::Relaxed)
            && now - last_active.max(self.created) > front.settings.init_timeout
        {
            return Some("its client never finished the handshake");
        }
        (!streaming && now - last_active > front.settings.session_idle).then_some("it was idle")
    }

    /// Whether the session is still in the table (not ended or reaped).
    pub(super) fn alive(&self, front: &Front) -> bool {
        front.sessions.get(&self.id).is_some()
    }
}

/// How long a legacy session may be without its stream (its first POST can
/// come before the stream's first byte is read).
const LEGACY_GRACE: Duration = Duration::from_secs(5);

/// 128 random bits, as 32 lowercase hex digits.
/// After `replica-` when `[front] replica` names this one (a load balancer
/// routes by it).
pub(super) fn new_id(replica: Option<&str>) -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS's random generator works");
    let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    match replica {
        Some(replica) => format!("{replica}-{random}"),
        None => random,
    }
}

/// Whether `id` has the shape of a session id this front hands out.
pub(super) fn well_formed(id: &str, replica: Option<&str>) -> bool {
    let random = match replica {
        Some(replica) => id
            .strip_prefix(replica)
            .and_then(|rest| rest.strip_prefix('-')),
        None => Some(id),
    };
    random
        .is_some_and(|r| r.len() == 32 && r.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// A session id shortened for logs: the replica and 8 hex digits, enough
/// to tell sessions apart, not enough to use one.
pub(super) fn short(id: &str) -> &str {
    let random = id.rfind('-').map_or(0, |dash| dash + 1);
    id.get(..random + 8).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_hex_after_the_replica_and_checked_for_shape() {
        let plain = new_id(None);
        assert!(well_formed(&plain, None) && plain.len() == 32);
        assert_ne!(plain, new_id(None));
        let named = new_id(Some("a"));
        assert!(named.starts_with("a-") && well_formed(&named, Some("a")));
        assert!(!well_formed(&named, Some("b")) && !well_formed(&named, None));
        assert!(!well_formed(&plain, Some("a")));
        for bad in [
            "",
            "../../etc/passwd",
            &plain.to_uppercase(),
            &plain[1..],
            &format!("{plain}0"),
        ] {
            assert!(!well_formed(bad, None), "{bad}");
        }
        assert_eq!(short(&plain), &plain[..8]);
        assert_eq!(short(&named), &named[..10]);
    }
}
