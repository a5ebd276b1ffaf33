//! The relay: both pipes, both chains, and the order of shutdown.
//!
//! ```text
//! client ─▶ client reader ─▶ to_server chain ─▶ upstream connector ─▶ server writer ─▶ child stdin
//! client ◀─ client writer ◀─ to_client chain ◀─ server reader ◀──────────────────────── child stdout
//! ```
//!
//! Each reader reads one message at a time. A request or notification goes
//! down the chain toward the other peer; `call` does the request-side work
//! and queues the write before the next message is read (invariant 1). The
//! answer's future is awaited by the peer's answering task (`owed`), along
//! with every other answer owed to that peer, so a slow tool call holds up
//! nothing else (invariant 2). An answer from a peer is handed to the future
//! waiting for it, and before the reader passes on that peer's next request
//! or notification it waits until the answer is written, so an answer is
//! never overtaken by what its sender sent after it.
//!
//! Both ends are [`Peer`]s: the client (mcp-chain's stdio, or an HTTP
//! client of the front) is handed in, the server is what the upstream
//! starts. The relay builds a reading [`Side`] from each and knows nothing
//! of what carries their bytes.

mod answer;
mod build;
mod layers;
mod lists;
mod owed;
mod side;

pub(crate) use answer::invalid_answer;
pub(crate) use layers::{Make, SessionLayers};

use owed::Owed;
use side::{Side, Unwritten};

use crate::chain::ChainService;
use crate::config::{Config, UpstreamConfig};
use crate::connector::Connector;
use crate::layers::Policy;
use crate::peer::{Peer, Source};
use crate::transport::budget::Budget;
use crate::transport::codec::FrameReader;
use crate::transport::queue::Queue;
use crate::transport::stdio::{Reader, Writer};
use crate::transport::writer;
use crate::upstream::{End, Restarted, Server, StartError, Upstream};
use mcp_chain_middleware::{Direction, Envelope, Message};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;
use tower::{Service, ServiceExt};

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// The client closed stdin, or a signal asked us to stop.
    Clean,
    /// The server went away on its own; the reason is one line.
    ServerGone(String),
}

/// The session could not start (the server could not be started).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct RunError(#[from] StartError);

/// Runs one session: starts the server, relays until the client leaves, a
/// signal arrives or the server is gone for good, then shuts down in order.
pub(crate) async fn run(
    config: &Config,
    upstream: &dyn Starts,
    client_in: Reader,
    client_out: Writer,
    signals: mpsc::Receiver<()>,
    policy: Option<watch::Receiver<Arc<Policy>>>,
) -> Result<Ending, RunError> {
    let queue = Queue::default();
    let writer = tokio::spawn(writer::run(queue.clone(), client_out, "client", true));
    let budget = Budget::new(config.max_bytes_in_flight);
    let client = Peer {
        source: FrameReader::new(client_in, config.max_message_bytes).with_budget(budget.clone()),
        sink: queue,
        lifecycle: writer,
    };
    // Over stdio there is no caller: a layer for some callers only
    // (`when`) is left out, one that exempts some (`unless`) is in.
    let layers = match policy {
        Some(policy) => SessionLayers::following(
            policy,
            Box::new(|entry| entry.applies.to(None).then(|| entry.layer.clone())),
        ),
        None => SessionLayers::fixed(crate::layers::applying(&config.chain, None)),
    };
    let seen = Seen {
        client: "pipe",
        server: upstream.network_transport(),
        id: None,
        from: None,
        caller: None,
    };
    session(
        config,
        &budget,
        layers,
        upstream,
        client,
        signals,
        Some(seen),
    )
    .await
}

/// How a session's peers are reached and which session it is, as its
/// telemetry says (`network.transport`: `pipe` or `tcp`).
#[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
pub(crate) struct Seen {
    pub(crate) client: &'static str,
    pub(crate) server: &'static str,
    /// The front session's id, shortened.
    pub(crate) id: Option<String>,
    /// Where its client is (an HTTP front's client address), and who it
    /// is: the console lists the session with them.
    pub(crate) from: Option<String>,
    pub(crate) caller: Option<String>,
}

/// The client's end of a session: its messages, the queue of what goes to
/// it, and the task that takes from that queue (a pipe's writer, or the
/// HTTP front's router), done once everything queued is taken.
pub(crate) type Client<S> = Peer<S, JoinHandle<()>>;

/// [`run`] for any client end, through `layers`. The first message on
/// `signals` asks for a graceful stop, the next one cuts it short. With
/// `seen`, and telemetry on, the session is traced and measured.
pub(crate) async fn session<S: Source>(
    config: &Config,
    budget: &Arc<Budget>,
    layers: SessionLayers,
    upstream: &dyn Starts,
    client: Client<S>,
    mut signals: mpsc::Receiver<()>,
    seen: Option<Seen>,
) -> Result<Ending, RunError> {
    let Peer {
        source,
        sink: client_queue,
        lifecycle: client_writer,
    } = client;
    // A pipe takes bytes; a server at a URL takes messages (see the queue).
    let server_queue = match upstream.takes_messages() {
        false => Queue::default(),
        true => Queue::of_messages(),
    };
    // Listed in the console (with one) while the session runs.
    let _listed = seen.as_ref().map(|seen| {
        crate::console::sessions::started(
            seen.id.as_deref(),
            seen.from.clone(),
            seen.caller.clone(),
        )
    });
    let upstream_conn = Connector::new(server_queue.clone(), "server").recording();
    let downstream_conn = Connector::new(client_queue.clone(), "client");
    let reloadable = layers.updates.is_some();
    let ends = build::Ends::new(&upstream_conn, &downstream_conn, seen, reloadable);
    let built = build::start(layers, ends);
    let (to_server, to_client) = (built.to_server, built.to_client);
    let _ends = built.ends;
    let (follow, next_server, next_client) = match built.follow {
        Some((task, server, client)) => (Some(tokio::spawn(task)), Some(server), Some(client)),
        None => (None, None, None),
    };
    let next_announcer = next_client.clone();
    // Whatever way the session ends, it stops following the policy.
    let _follow = follow.map(AbortOnDrop);

    let (stop_server, server_stop) = oneshot::channel();
    let (hurry_tx, hurry) = watch::channel(false);
    let started = Upstream {
        max_message_bytes: config.max_message_bytes,
        budget: budget.clone(),
        grace: config.shutdown_grace,
        conn: upstream_conn.clone(),
        downstream: downstream_conn.clone(),
        queue: server_queue,
        hurry: hurry.clone(),
    };
    let started = upstream.start(started, server_stop);
    let server = match started {
        Ok(server) => server,
        Err(why) => {
            // No server: the client's end is closed at once, so its writer
            // ends (an HTTP session's router answers every request it
            // holds with an error and ends its streams) and nothing waits.
            client_queue.close();
            let _ = client_writer.await;
            return Err(RunError(why));
        }
    };

    // The server's messages go down the to-client chain; its restarts are
    // announced down the same chain.
    let Peer {
        source: server_source,
        sink: server_sink,
        lifecycle: server_life,
    } = server;
    let mut server = server_life.end;
    let mut server_side = Side {
        source: server_source,
        chain: to_client.clone(),
        next: next_client,
        own: upstream_conn.clone(),
        reply: server_sink,
        direction: Direction::ToClient,
        owed: Owed::new(TaskTracker::new()),
        unwritten: Unwritten::default(),
    };
    let server_reader = tokio::spawn(async move { server_side.run().await });
    tokio::spawn(announce(server_life.restarted, to_client, next_announcer));

    // Answers owed to the client: shutdown waits for these.
    let owed = TaskTracker::new();
    let mut client_side = Side {
        source,
        chain: to_server,
        next: next_server,
        own: downstream_conn.clone(),
        reply: client_queue.clone(),
        direction: Direction::ToServer,
        owed: Owed::new(owed.clone()),
        unwritten: Unwritten::default(),
    };

    let gone = tokio::select! {
        () = client_side.run() => {
            tracing::info!("the client closed its input; finishing");
            None
        }
        Some(()) = signals.recv() => {
            tracing::info!("asked to stop; finishing");
            None
        }
        end = &mut server => Some(match end {
            Ok(End::Gone { reason, .. }) => reason,
            Ok(End::Stopped(_)) => "the server stopped".to_owned(),
            Err(e) => format!("the server's supervisor failed: {e}"),
        }),
    };
    drop(client_side);
    // A (further) signal while shutting down means: stop waiting. Clients
    // such as the MCP SDKs close stdin, then signal, then kill.
    // When no more signals can come (an HTTP session's stopper is gone),
    // `hurry` stays false until the session is over: a dropped sender
    // would read as "hurry" to everyone waiting on it.
    tokio::spawn(async move {
        if signals.recv().await.is_some() {
            tracing::warn!("asked to stop again; ending the server now");
            let _ = hurry_tx.send(true);
        } else {
            hurry_tx.closed().await;
        }
    });
    // Nobody will answer the server's requests now: say so, so a server
    // waiting on one (roots, sampling) can exit when its stdin closes.
    downstream_conn.closing("the client is going away");

    let grace = config.shutdown_grace;
    let mut hurry = hurry;
    let ending = match gone {
        Some(reason) => {
            server_reader.abort();
            // Every request in flight has its error answer already.
            owed.close();
            bounded(grace, owed.wait(), &mut hurry).await;
            Ending::ServerGone(reason)
        }
        None => {
            // Keep relaying until every answer owed to the client is written.
            owed.close();
            if !bounded(grace, owed.wait(), &mut hurry).await {
                tracing::warn!(
                    unanswered = upstream_conn.in_flight(),
                    "shutdown grace ran out with answers still owed; answering them with errors"
                );
            }
            upstream_conn.close("mcp-chain is shutting down");
            bounded(grace, owed.wait(), &mut hurry).await;
            // Close the child's stdin (after what is queued), end its group.
            let _ = stop_server.send(());
            // A server that failed on its own makes the session a failure,
            // even when the client left first; one we terminated does not.
            match tokio::time::timeout(grace * 3, &mut server).await {
                Ok(Ok(End::Stopped(Some(status)))) if status.code().is_some_and(|c| c != 0) => {
                    Ending::ServerGone(format!("the server exited ({status})"))
                }
                Ok(Ok(End::Gone {
                    reason,
                    failed: true,
                })) => Ending::ServerGone(reason),
                _ => Ending::Clean,
            }
        }
    };
    server_reader.abort();
    downstream_conn.close("mcp-chain is shutting down");
    client_queue.close();
    bounded(grace, client_writer, &mut hurry).await;
    Ok(ending)
}

/// Aborts a task when dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a session's server is started from: a configured upstream (a
/// child, a URL: `Upstream::start`), or a port into a pool of servers
/// shared by sessions (`pool`). The relay asks for nothing else of it.
pub(crate) trait Starts: Sync {
    /// Whether the server takes messages (anything but a pipe): its queue
    /// is then a queue of messages, written where they leave.
    fn takes_messages(&self) -> bool;

    /// How the server is reached, as telemetry says (`pipe`, `tcp`).
    fn network_transport(&self) -> &'static str {
        "pipe"
    }

    fn start(&self, up: Upstream, stop: oneshot::Receiver<()>) -> Result<Server, StartError>;
}

impl Starts for UpstreamConfig {
    fn takes_messages(&self) -> bool {
        matches!(self, Self::Url(_))
    }

    fn network_transport(&self) -> &'static str {
        match self {
            Self::Url(_) => "tcp",
            Self::Command(_) => "pipe",
        }
    }

    fn start(&self, up: Upstream, stop: oneshot::Receiver<()>) -> Result<Server, StartError> {
        up.start(self, stop)
    }
}

/// What a session's server is: one upstream (`[upstream]`, or what
/// `--` names), or many behind one (`[servers.*]`).
pub(crate) enum Served {
    One(UpstreamConfig),
    Many(crate::gateway::Gateway),
}

impl Starts for Served {
    fn takes_messages(&self) -> bool {
        match self {
            Self::One(one) => one.takes_messages(),
            Self::Many(many) => many.takes_messages(),
        }
    }

    fn network_transport(&self) -> &'static str {
        match self {
            Self::One(one) => one.network_transport(),
            Self::Many(many) => many.network_transport(),
        }
    }

    fn start(&self, up: Upstream, stop: oneshot::Receiver<()>) -> Result<Server, StartError> {
        match self {
            Self::One(one) => one.start(up, stop),
            Self::Many(many) => many.start(up, stop),
        }
    }
}

/// Tells the client, down the to-client chain, to list again what each new
/// server may list differently.
async fn announce(
    mut restarted: mpsc::Receiver<Restarted>,
    mut to_client: ChainService,
    mut next: Option<build::Next>,
) {
    while let Some(Restarted { refetch }) = restarted.recv().await {
        if let Some(next) = &mut next {
            next.update(&mut to_client);
        }
        #[cfg(feature = "telemetry")]
        crate::telemetry::restarted();
        for note in refetch {
            let env = Envelope::new(Direction::ToClient, Message::notification(note, None));
            if let Ok(chain) = to_client.ready().await {
                let _ = chain.call(env).await;
            }
        }
    }
}

/// Waits for `fut`, at most `grace`, and not at all once `hurry` is true.
/// Whether it finished.
async fn bounded<F: Future>(grace: Duration, fut: F, hurry: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        done = tokio::time::timeout(grace, fut) => done.is_ok(),
        _ = hurry.wait_for(|hurry| *hurry) => false,
    }
}
