//! A session's two chains: built at its start between its connectors, and
//! built again whenever a reload changes its layers. Each reading side
//! takes the new chain up at its next message; what is in flight finishes
//! in the chain it started in (its future holds that chain's services).

use super::layers::SessionLayers;
use super::lists::{self, Declared, Declaring};
use super::Seen;
use crate::chain::{self, AnyLayer, ChainService};
use crate::connector::Connector;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

#[cfg(feature = "telemetry")]
use crate::telemetry::SessionSpan as Telemetry;
/// Without telemetry, nothing is kept.
#[cfg(not(feature = "telemetry"))]
pub(super) enum Telemetry {}

/// What a session's chains are built between, and around.
pub(super) struct Ends {
    upstream: Connector,
    downstream: Connector,
    /// The session's telemetry, kept as long as the session (its duration
    /// is measured when it is dropped).
    telemetry: Option<Telemetry>,
    /// Where a reload is possible: what the client was told may change.
    declared: Option<Arc<Declared>>,
}

impl Ends {
    pub(super) fn new(
        upstream: &Connector,
        downstream: &Connector,
        seen: Option<Seen>,
        reloadable: bool,
    ) -> Self {
        #[cfg(feature = "telemetry")]
        let telemetry = seen.and_then(|s| Telemetry::open(s.client, s.server, s.id.as_deref()));
        #[cfg(not(feature = "telemetry"))]
        let telemetry = seen.and(None);
        Self {
            upstream: upstream.clone(),
            downstream: downstream.clone(),
            telemetry,
            declared: reloadable.then(Arc::default),
        }
    }

    /// The client → server and server → client chains of `layers`, traced
    /// at both ends when telemetry is on.
    pub(super) fn build(&self, layers: &[AnyLayer]) -> (ChainService, ChainService) {
        let upstream = ChainService::new(self.upstream.clone());
        let mut downstream = ChainService::new(self.downstream.clone());
        // The console's off switch, when served: outermost toward the
        // server, and told the way to the client to say the list changed.
        let switch = mcp_chain_middleware::switch::installed()
            .map(mcp_chain_middleware::switch::SwitchLayer::new);
        if let Some(switch) = &switch {
            downstream = switch.toward_client(downstream);
        }
        let outermost = |stack: ChainService| match &switch {
            Some(switch) => ChainService::new(tower::Layer::layer(switch, stack)),
            None => stack,
        };
        let (mut to_server, to_client) = match &self.telemetry {
            #[cfg(feature = "telemetry")]
            Some(t) => {
                use crate::telemetry::Facing;
                let to_server = chain::to_server(layers, t.sent(Facing::Server, upstream));
                let to_client = chain::to_client(layers, t.sent(Facing::Client, downstream));
                (
                    t.received(Facing::Client, outermost(to_server)),
                    t.received(Facing::Server, to_client),
                )
            }
            _ => (
                outermost(chain::to_server(layers, upstream)),
                chain::to_client(layers, downstream),
            ),
        };
        if let Some(declared) = &self.declared {
            to_server = ChainService::new(Declaring {
                inner: to_server,
                declared: declared.clone(),
            });
        }
        (to_server, to_client)
    }
}

/// The chain a reading side (or the task announcing restarts) takes up at
/// its next message, once a reload built it. Each clone notices the change
/// for itself.
#[derive(Clone)]
pub(super) struct Next {
    changed: watch::Receiver<()>,
    chain: Arc<Mutex<ChainService>>,
}

impl Next {
    /// `chain`, replaced by the newest one if a reload built one since.
    pub(super) fn update(&mut self, chain: &mut ChainService) {
        if self.changed.has_changed().unwrap_or(false) {
            self.changed.mark_unchanged();
            *chain = lock(&self.chain).clone();
        }
    }
}

/// Hands chains to a [`Next`].
struct Publish {
    changed: watch::Sender<()>,
    chain: Arc<Mutex<ChainService>>,
}

impl Publish {
    fn new(chain: &ChainService) -> (Self, Next) {
        let (changed, rx) = watch::channel(());
        let chain = Arc::new(Mutex::new(chain.clone()));
        let next = Next {
            changed: rx,
            chain: chain.clone(),
        };
        (Self { changed, chain }, next)
    }

    fn publish(&self, chain: ChainService) {
        *lock(&self.chain) = chain;
        self.changed.send_replace(());
    }
}

/// A slot's lock, poisoned or not: it only ever holds a whole chain.
fn lock(slot: &Mutex<ChainService>) -> std::sync::MutexGuard<'_, ChainService> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The chains a session starts with and, where its layers follow the
/// policy, the task that builds them again on each reload (to run as long
/// as the session) and where each side finds them.
pub(super) struct Built {
    pub(super) to_server: ChainService,
    pub(super) to_client: ChainService,
    pub(super) follow: Option<(Follow, Next, Next)>,
    /// The ends, kept for the session's length when nothing follows.
    pub(super) ends: Option<Ends>,
}

/// The task that follows the policy.
pub(super) type Follow = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

pub(super) fn start(mut layers: SessionLayers, ends: Ends) -> Built {
    let (to_server, to_client) = ends.build(&layers.layers());
    let Some(mut updates) = layers.updates.take() else {
        return Built {
            to_server,
            to_client,
            follow: None,
            ends: Some(ends),
        };
    };
    let (servers, next_server) = Publish::new(&to_server);
    let (clients, next_client) = Publish::new(&to_client);
    let follow = async move {
        while updates.changed().await.is_ok() {
            let policy = updates.borrow_and_update().clone();
            let changed = layers.take_up(&policy);
            let (to_server, to_client) = ends.build(&layers.layers());
            servers.publish(to_server);
            clients.publish(to_client.clone());
            if changed.lists {
                if let Some(declared) = &ends.declared {
                    lists::announce(&mut to_client.clone(), declared).await;
                }
            }
        }
    };
    Built {
        to_server,
        to_client,
        follow: Some((Box::pin(follow), next_server, next_client)),
        ends: None,
    }
}
