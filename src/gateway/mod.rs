//! Many servers behind one mcp-chain (`[servers.NAME]`): to the client one
//! server, to each server an ordinary client.
//!
//! ```text
//! client ─▶ shared chain ─▶ [hub] ─▶ server A's session (A's chain) ─▶ A
//!                                └─▶ server B's session (B's chain) ─▶ B
//! ```
//!
//! The client's session is relayed as for one server, through the shared
//! `[[middleware]]`; its "server" is the gateway, which starts here (the
//! [`Starts`] the relay asks for). The gateway runs each server in a
//! session of its own, the same relay with the server's own chain and
//! `[upstream]`-like settings (restarts, OAuth, transports), whose
//! "client" is the hub (`hub.rs`): messages pass between them in memory,
//! parsed once where they entered. One server that fails to start,
//! crashes or hangs is its own: its session ends or stops keeping up, and
//! the hub answers what it owed and takes its names out of the lists.

mod hub;
mod merge;
mod names;

use crate::config::{Config, GatewayConfig, ServerConfig};
use crate::peer::{Peer, Read};
use crate::relay::{self, SessionLayers, Starts};
use crate::transport::budget::Budget;
use crate::transport::queue::{Outgoing, Queue, Taken};
use crate::upstream::{End, Lifecycle, Server, ServerSource, StartError, Upstream};
use hub::{GatewayServer, Hub, State};
use mcp_chain_middleware::servers::ServerNames;
use mcp_chain_middleware::session::{ServerInfo, SessionInfo};
use mcp_chain_middleware::Message;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Messages held toward the client, and toward each server's session,
/// before the sender waits (toward the client) or the server is deemed
/// not to keep up (toward a server).
const HELD: usize = 256;

/// What the hub hears.
enum Event {
    /// A message a server's session sends its client (the hub).
    FromServer(usize, Message),
    /// A server's session ended: why.
    Ended(usize, String),
}

/// The servers of `[servers.*]`, as the relay starts its server.
pub(crate) struct Gateway {
    /// The limits each server's session keeps (the process's own).
    limits: Arc<Config>,
    gateway: Arc<GatewayConfig>,
    names: Arc<ServerNames>,
    /// The HTTP front's session this gateway serves (`None`: stdio): its
    /// caller decides which layers of a server's chain apply (`when`,
    /// `unless`), and each server's layers are that session's own.
    session: Option<SessionInfo>,
}

impl Gateway {
    pub(crate) fn new(config: &Config, gateway: GatewayConfig) -> Self {
        let limits = Config {
            max_message_bytes: config.max_message_bytes,
            max_bytes_in_flight: config.max_bytes_in_flight,
            shutdown_grace: config.shutdown_grace,
            ..Config::default()
        };
        let servers: Vec<(String, String)> = gateway
            .servers
            .iter()
            .map(|s| (s.name.clone(), s.prefix.clone()))
            .collect();
        let mut names = ServerNames::new(&gateway.separator, &servers);
        for (k, server) in gateway.servers.iter().enumerate() {
            if let Some(head) = &server.uri_prefix {
                names = names.with_uri_head(k, head.clone());
            }
        }
        let names = Arc::new(names);
        // The shared chain's layers read the same table (the audit's
        // `server`, a rate limit per server).
        mcp_chain_middleware::servers::install(names.clone());
        Self {
            limits: Arc::new(limits),
            gateway: Arc::new(gateway),
            names,
            session: None,
        }
    }

    /// The gateway serving one session of the HTTP front.
    pub(crate) fn for_session(&self, session: &SessionInfo) -> Self {
        Self {
            limits: self.limits.clone(),
            gateway: self.gateway.clone(),
            names: self.names.clone(),
            session: Some(session.clone()),
        }
    }
}

impl Starts for Gateway {
    fn takes_messages(&self) -> bool {
        true
    }

    fn start(&self, up: Upstream, stop: oneshot::Receiver<()>) -> Result<Server, StartError> {
        let (to_client, from_hub) = mpsc::channel(HELD);
        let (events_tx, events) = mpsc::channel(HELD);
        let mut members = Vec::new();
        let mut stops = Vec::new();
        for (k, server) in self.gateway.servers.iter().enumerate() {
            let layers = server_layers(server, self.session.as_ref());
            let (member, stop) = start_member(
                k,
                server,
                layers,
                &self.limits,
                &up.budget,
                events_tx.clone(),
            );
            members.push(member);
            stops.push(stop);
        }
        let names = names::Names::new(self.names.clone());
        // The cursors' tokens are checked against those issued; the random
        // part only keeps one session's from looking like another's.
        let secret = random_hex().unwrap_or_default();
        let timeout = self.gateway.startup_timeout;
        let hub = Hub::new(to_client, members, names, secret, timeout);
        let run = Run {
            hub,
            queue: up.queue.clone(),
            events,
            stops,
            startup_timeout: self.gateway.startup_timeout,
        };
        let end = tokio::spawn(run.serve(stop));
        let (_, restarted) = mpsc::channel(1);
        Ok(Peer {
            source: ServerSource::Parsed(from_hub),
            sink: up.queue,
            lifecycle: Lifecycle { restarted, end },
        })
    }
}

/// Starts server `k`'s session, the hub its client; the member, and the
/// way to ask its session to stop.
fn start_member(
    k: usize,
    server: &ServerConfig,
    layers: SessionLayers,
    limits: &Arc<Config>,
    budget: &Arc<Budget>,
    events: mpsc::Sender<Event>,
) -> (GatewayServer, Stopping) {
    let (to, source) = mpsc::channel::<Read>(HELD);
    let queue = Queue::of_messages();
    // What the server's session sends its client reaches the hub.
    let taking = queue.clone();
    let heard = events.clone();
    let writer = tokio::spawn(async move {
        let mut taken = Taken::default();
        while taking.take(&mut taken).await {
            for message in taken.messages.drain(..).flat_map(Outgoing::into_messages) {
                if heard.send(Event::FromServer(k, message)).await.is_err() {
                    return;
                }
            }
            taken.clear();
        }
    });
    let client = Peer {
        source,
        sink: queue,
        lifecycle: writer,
    };
    let (stop, signals) = mpsc::channel(2);
    let (limits, budget, upstream) = (limits.clone(), budget.clone(), server.upstream.clone());
    let name = server.name.clone();
    let session = tokio::spawn(async move {
        let ended =
            relay::session(&limits, &budget, layers, &upstream, client, signals, None).await;
        let why = match ended {
            Ok(relay::Ending::Clean) => "its session ended".to_owned(),
            Ok(relay::Ending::ServerGone(reason)) => reason,
            Err(e) => format!("it could not start: {e}"),
        };
        tracing::debug!(server = %name, reason = %why, "gateway: a server's session ended");
        let _ = events.send(Event::Ended(k, why)).await;
    });
    let member = GatewayServer {
        name: server.name.clone(),
        uri_prefix: server.uri_prefix.clone(),
        to,
        state: State::Starting,
    };
    (member, Stopping { stop, session })
}

/// Server `server`'s own layers for `session` (stdio: `None`): those
/// that apply to its caller, each the session's own instance (as the
/// shared chain's are), told which server they guard.
fn server_layers(server: &ServerConfig, session: Option<&SessionInfo>) -> SessionLayers {
    let who = session.and_then(crate::callers::Who::of);
    let place = ServerInfo {
        name: server.name.clone(),
        identity: crate::approvals::server_of(&server.upstream),
    };
    let layers = server
        .chain
        .iter()
        .filter(|entry| entry.applies.to(who))
        .map(|entry| match session {
            Some(session) => entry.layer.for_session(session),
            None => entry.layer.clone(),
        })
        .map(|layer| layer.for_server(&place))
        .collect();
    SessionLayers::fixed(layers)
}

/// A server's session, as the gateway stops it.
struct Stopping {
    /// Asks it to stop as a single server's session stops.
    stop: mpsc::Sender<()>,
    session: tokio::task::JoinHandle<()>,
}

/// The hub at work: the client's messages (after the shared chain), the
/// servers' (after theirs), the start-up time, the stop.
struct Run {
    hub: Hub,
    queue: Queue,
    events: mpsc::Receiver<Event>,
    stops: Vec<Stopping>,
    startup_timeout: std::time::Duration,
}

impl Run {
    async fn serve(mut self, mut stop: oneshot::Receiver<()>) -> End {
        let mut taken = Taken::default();
        let mut deadline: Option<tokio::time::Instant> = None;
        // The client's end closed: what was asked is still answered (as a
        // server answers what it read before its input closed), then the
        // servers stop.
        let mut client_done = false;
        loop {
            if client_done && self.hub.idle() {
                break;
            }
            if deadline.is_none() && self.hub.starting() {
                deadline = Some(tokio::time::Instant::now() + self.startup_timeout);
            }
            // The first of: the start-up time over, a listing's time up.
            let wake = match (deadline, self.hub.next_deadline()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let woken = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut stop => break,
                more = self.queue.take(&mut taken), if !client_done => {
                    if !more {
                        client_done = true;
                        continue;
                    }
                    for message in taken.messages.drain(..).flat_map(Outgoing::into_messages) {
                        self.hub.client_sent(message).await;
                    }
                    taken.clear();
                }
                Some(event) = self.events.recv() => match event {
                    Event::FromServer(k, message) => self.hub.server_sent(k, message).await,
                    Event::Ended(k, why) => self.hub.ended(k, why).await,
                },
                () = woken, if wake.is_some() => {
                    let now = tokio::time::Instant::now();
                    if deadline.is_some_and(|at| at <= now) {
                        self.hub.answer_initialize(true).await;
                        deadline = None;
                    }
                    self.hub.expire(now).await;
                }
            }
            if !self.hub.starting() {
                deadline = None;
            }
        }
        // Each server's session stops as a single server's would (its owed
        // answers, then its server's grace); nothing listens for them now.
        drop(self.events);
        for stopping in &self.stops {
            let _ = stopping.stop.try_send(());
        }
        for stopping in self.stops {
            let _ = stopping.session.await;
        }
        End::Stopped(None)
    }
}

fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
