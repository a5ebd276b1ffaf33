//! The server side: the child process mcp-chain starts and talks to.

pub(crate) mod process;

pub(crate) use process::{Upstream, UpstreamError};
