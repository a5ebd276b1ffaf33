//! How bytes cross a pipe, whichever peer is at the other end:
//! newline-delimited JSON framing (`codec`), mcp-chain's own stdin and
//! stdout (`stdio`), the byte-bounded queue each outgoing pipe has with
//! the task that writes it (`queue`, `writer`), the messages an HTTP
//! transport takes off such a queue with their kind and id (`lines`), and
//! the process's budget of bytes in flight (`budget`). What is at the
//! server's end (a child process, a URL) is `upstream`'s business; serving
//! the chain over HTTP is a front of its own, beside the relay.

pub(crate) mod budget;
pub(crate) mod codec;
pub(crate) mod lines;
pub(crate) mod queue;
pub(crate) mod stdio;
pub(crate) mod writer;
