//! How bytes reach a peer, whichever side it is on: newline-delimited JSON
//! framing (`codec`), mcp-chain's own stdin and stdout (`stdio`), the child
//! process a command upstream runs in (`process`), and the byte-bounded
//! queue each outgoing pipe has with the task that writes it (`queue`,
//! `writer`). Remote upstreams (Streamable HTTP, legacy SSE, WebSocket) join
//! them here; serving the chain over HTTP is a front of its own, beside the
//! relay.

pub(crate) mod codec;
pub(crate) mod process;
pub(crate) mod queue;
pub(crate) mod stdio;
pub(crate) mod writer;
