//! A peer: whatever is at one end of a session, seen the same way by the
//! relay whatever carries its bytes.
//!
//! Every way bytes reach a peer (mcp-chain's own stdin and stdout, a child
//! process's pipes, a server at a URL over Streamable HTTP, legacy HTTP+SSE
//! or WebSocket, an HTTP client of the front) gives the relay the same three
//! things, a [`Peer`]:
//!
//! - a [`Source`]: the peer's messages, each parsed once where it enters
//!   (a [`Read`]);
//! - a sink: the [`Queue`] the relay pushes messages to. A pipe's writer
//!   serializes each message once as it takes it (and writes a big payload
//!   from the buffer it was read into); any other transport takes the
//!   messages themselves and never parses what mcp-chain wrote;
//! - its lifecycle: for a client, the task that takes from its sink (done
//!   once everything owed to it is written); for a server, its restarts and
//!   its end (`upstream::Lifecycle`).
//!
//! The relay builds its two reading sides from two peers. Nothing here, nor
//! in the transports and upstreams that make peers, knows the relay.

mod source;

pub(crate) use source::{Read, Source};

use crate::transport::queue::Queue;

/// One end of a session: where its messages come from, where the relay
/// puts what goes to it, and how its life is seen.
pub(crate) struct Peer<S, L> {
    pub(crate) source: S,
    pub(crate) sink: Queue,
    pub(crate) lifecycle: L,
}
