//! One server of the shared pool (a child, or a URL), started as
//! `[upstream]` says, initialized once by mcp-chain, started again when it
//! ends. Nothing stands between the pool and it: the pool's books already
//! give every request an id no other session's can meet, so what the
//! sessions send is written to the server as the pool renamed it, and
//! what the server says is routed (`route.rs`) as it is read.
//!
//! The server's connector is kept for what the upstream needs of one: it
//! says when the server restarts or is gone (the pool then answers what
//! was in flight on it) and keeps the pool's handshake, which a restarted
//! child is given again.

use super::{SharedPool, ASKED_REVISION};
use crate::config::{Config, UpstreamConfig};
use crate::connector::Connector;
use crate::peer::{Peer, Source};
use crate::relay::Starts;
use crate::transport::budget::Budget;
use crate::transport::queue::{Outgoing, Queue};
use crate::upstream::{End, StartError, Upstream};
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message, RequestId};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// The longest wait before a member that ended starts again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub(super) struct PooledServer {
    pub(super) index: usize,
    /// The running server, while one runs.
    link: Mutex<Option<Link>>,
    /// Asks the running server to stop.
    stopper: Mutex<Option<oneshot::Sender<()>>>,
    stopping: AtomicBool,
    /// The id of the pool's `initialize` on the running server.
    init_id: Mutex<Option<RequestId>>,
}

/// A running server: where its messages are written, and its connector.
#[derive(Clone)]
struct Link {
    sink: Queue,
    conn: Connector,
}

impl PooledServer {
    pub(super) fn new(index: usize) -> Arc<Self> {
        Arc::new(Self {
            index,
            link: Mutex::new(None),
            stopper: Mutex::new(None),
            stopping: AtomicBool::new(false),
            init_id: Mutex::new(None),
        })
    }

    /// Whether its server runs and takes requests (not restarting).
    pub(super) fn is_up(&self) -> bool {
        let link = lock(&self.link);
        link.as_ref()
            .is_some_and(|link| link.conn.refusal().is_none())
    }

    /// Why its server cannot take a request now, while it restarts (or
    /// is closing); `None` when it can, or when no server runs.
    pub(super) fn refusal(&self) -> Option<ErrorObject> {
        lock(&self.link)
            .as_ref()
            .and_then(|link| link.conn.refusal())
    }

    /// Writes a message (renamed by the pool) to the member's server.
    /// `Err`: why it cannot take it (down, restarting, gone).
    pub(super) async fn send(&self, message: Message) -> Result<(), ErrorObject> {
        let link = lock(&self.link).clone();
        let Some(link) = link else {
            return Err(down());
        };
        if let Some(refusal) = link.conn.refusal() {
            return Err(refusal);
        }
        match link.sink.send(Outgoing::One(message)).await {
            true => Ok(()),
            false => Err(down()),
        }
    }

    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(stopper) = lock(&self.stopper).take() {
            let _ = stopper.send(());
        }
    }

    /// Whether `id` is that of the pool's `initialize` on this server.
    pub(super) fn is_handshake(&self, id: &RequestId) -> bool {
        lock(&self.init_id).as_ref() == Some(id)
    }

    /// The server answered the pool's `initialize`: kept for a restart.
    pub(super) fn handshaken(&self, result: Option<Value>) {
        if let Some(link) = lock(&self.link).as_ref() {
            link.conn.record(|handshake| handshake.result = result);
        }
    }

    /// Runs the member's servers, one after the other, until stopped.
    pub(super) fn run(
        self: Arc<Self>,
        pool: Arc<SharedPool>,
        config: Arc<Config>,
        budget: Arc<Budget>,
        upstream: UpstreamConfig,
    ) {
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(500);
            while !self.stopping.load(Ordering::Relaxed) {
                let started = tokio::time::Instant::now();
                match self.serve(&pool, &config, &budget, &upstream).await {
                    Ok(End::Gone { reason, .. }) => {
                        tracing::warn!(member = self.index, %reason, "a server of the shared pool is gone; starting another");
                    }
                    Ok(End::Stopped(_)) => {}
                    Err(e) => {
                        tracing::warn!(member = self.index, error = %e, "a server of the shared pool could not start")
                    }
                }
                if started.elapsed() > MAX_BACKOFF {
                    backoff = Duration::from_millis(500);
                }
                if !self.stopping.load(Ordering::Relaxed) {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        });
    }

    /// Starts one server and serves it until it is gone or the pool stops.
    async fn serve(
        &self,
        pool: &SharedPool,
        config: &Config,
        budget: &Arc<Budget>,
        upstream: &UpstreamConfig,
    ) -> Result<End, StartError> {
        let queue = match upstream.takes_messages() {
            false => Queue::default(),
            true => Queue::of_messages(),
        };
        let conn = Connector::new(queue.clone(), "server").recording();
        let failures = conn.failures();
        let (stopper, stop) = oneshot::channel();
        // Held while the server runs: a dropped sender reads as "hurry".
        let (_hurry, hurry) = watch::channel(false);
        let up = Upstream {
            max_message_bytes: config.max_message_bytes,
            budget: budget.clone(),
            grace: config.shutdown_grace,
            conn: conn.clone(),
            // The pool answers its servers' questions itself (through its
            // books); nothing is ever sent through this one.
            downstream: Connector::new(Queue::of_messages(), "client"),
            queue,
            hurry,
        };
        let Peer {
            mut source,
            sink,
            lifecycle,
        } = upstream.start(up, stop)?;
        let link = Link {
            sink: sink.clone(),
            conn: conn.clone(),
        };
        self.hello(pool, &link);
        *lock(&self.link) = Some(link);
        *lock(&self.stopper) = Some(stopper);
        if self.stopping.load(Ordering::Relaxed) {
            self.stop();
        }
        let mut restarted = lifecycle.restarted;
        let mut end = lifecycle.end;
        let mut reading = true;
        let ended = loop {
            tokio::select! {
                read = source.next(), if reading => match read {
                    Ok(Some(read)) => pool.server_read(self, read).await,
                    // What ends its output is said by how it ended.
                    Ok(None) | Err(_) => reading = false,
                },
                () = failures.notified() => {
                    if let Some(error) = conn.failure() {
                        pool.settle(self.index, error);
                    }
                }
                Some(new) = restarted.recv() => pool.restarted(&new.refetch),
                ended = &mut end => break ended,
            }
        };
        *lock(&self.link) = None;
        lock(&self.stopper).take();
        let ended = ended.unwrap_or_else(|e| End::Gone {
            reason: format!("the server's supervisor failed: {e}"),
            failed: true,
        });
        let reason = match &ended {
            End::Gone { reason, .. } => reason.clone(),
            End::Stopped(_) => "mcp-chain is shutting down".to_owned(),
        };
        conn.close(&reason);
        pool.settle(self.index, conn.failure().unwrap_or_else(down));
        Ok(ended)
    }

    /// Writes the pool's handshake to a new server, and keeps it for a
    /// restart. The pool asks for every client capability: the sessions'
    /// clients are asked on the server's behalf (see `route.rs`).
    fn hello(&self, pool: &SharedPool, link: &Link) {
        let init = pool.id("init");
        let hello = json!({
            "protocolVersion": ASKED_REVISION,
            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
            "clientInfo": {"name": "mcp-chain", "version": env!("CARGO_PKG_VERSION")},
        });
        link.conn.record(|handshake| {
            handshake.initialize = Some(hello.clone().into());
            handshake.result = None;
            handshake.initialized = true;
        });
        *lock(&self.init_id) = Some(init.clone());
        let initialize = Message::request(init, method::INITIALIZE, Some(hello));
        let initialized = Message::notification(method::NOTIFICATION_INITIALIZED, None);
        link.sink.push(Outgoing::One(initialize));
        link.sink.push(Outgoing::One(initialized));
    }
}

fn down() -> ErrorObject {
    ErrorObject::new(
        ErrorCode::CONNECTION_CLOSED,
        "mcp-chain: the shared server went away",
    )
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
