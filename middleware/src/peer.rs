//! The way from a layer back to the client, for the layers that must
//! speak first: `approve` asks the user (`elicitation/create`), `pin` tells
//! the client its tool list changed.
//!
//! A layer sits in both stacks of a chain (see the crate's docs). Built
//! into the server → client stack, its inner service leads to the client
//! through the layers between it and the client, so what it sends there
//! is audited, filtered and rewritten like any server message. The chain
//! builder hands that inner service to the layer's [`ClientSlot`] (the
//! layer's `toward_client`), and the layer's client → server half, which
//! holds the request, uses it.

use crate::{BoxError, Envelope, Message};
use std::sync::{Arc, Mutex};
use tower::util::BoxCloneService;
use tower::{Service, ServiceExt};

type ToClient = BoxCloneService<Envelope, Option<Message>, BoxError>;

/// Where the server → client half of a layer leaves the way to the client.
#[derive(Clone, Default)]
pub struct ClientSlot(Arc<Mutex<Option<ToClient>>>);

impl std::fmt::Debug for ClientSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self.0.lock().map(|s| s.is_some()).unwrap_or(false);
        f.debug_struct("ClientSlot").field("set", &set).finish()
    }
}

impl ClientSlot {
    /// Keeps `inner` (the rest of the server → client stack) as the way to
    /// the client.
    pub fn set<S>(&self, inner: S)
    where
        S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(BoxCloneService::new(inner));
    }

    /// Whether a way to the client was given.
    pub fn is_set(&self) -> bool {
        self.0.lock().map(|s| s.is_some()).unwrap_or(false)
    }

    /// Sends `message` to the client: a request's answer, or `None` for a
    /// notification. `Err` when there is no way to the client or it is gone.
    pub async fn send(&self, message: Message) -> Result<Option<Message>, BoxError> {
        let to_client = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(to_client) = to_client else {
            return Err("no way to the client in this chain".into());
        };
        to_client
            .oneshot(Envelope::new(crate::Direction::ToClient, message))
            .await
    }
}
