//! What travels down a chain: a message, the way it is going, and for a
//! request, the signal that its answer has been written.

use crate::message::Message;
use std::fmt;
use tokio::sync::oneshot;

/// Which way a message is travelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Sent by the client, on its way to the server.
    ToServer,
    /// Sent by the server, on its way to the client.
    ToClient,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToServer => "client_to_server",
            Self::ToClient => "server_to_client",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message on its way through a chain.
#[derive(Debug)]
pub struct Envelope {
    pub direction: Direction,
    pub message: Message,
    /// Set by the side that will write the answer; the connector at the
    /// other end keeps it and waits on it after handing over the answer, so
    /// that an answer never overtakes what its sender sent next (docs/architecture.md,
    /// invariant 1). Layers pass it along untouched.
    pub delivered: Option<Delivered>,
}

impl Envelope {
    pub fn new(direction: Direction, message: Message) -> Self {
        Self {
            direction,
            message,
            delivered: None,
        }
    }
}

/// Resolves once the answer to a request has been written (or dropped).
#[derive(Debug)]
pub struct Delivered(oneshot::Receiver<()>);

/// Held by whoever writes the answer; dropping it signals [`Delivered`].
#[derive(Debug)]
pub struct DeliveryTicket(#[allow(dead_code)] oneshot::Sender<()>);

/// A linked ticket and signal.
pub fn delivery() -> (DeliveryTicket, Delivered) {
    let (tx, rx) = oneshot::channel();
    (DeliveryTicket(tx), Delivered(rx))
}

impl Delivered {
    /// Whether the ticket is already gone.
    pub fn is_done(&mut self) -> bool {
        !matches!(self.0.try_recv(), Err(oneshot::error::TryRecvError::Empty))
    }

    /// Waits until the ticket is dropped.
    pub async fn wait(self) {
        // An error only means the ticket is gone, which is the signal.
        let _ = self.0.await;
    }
}
