//! How many lines mcp-chain parsed into messages and wrote from them, so
//! tests can check that a message is parsed once where it enters and
//! written once where it leaves, on every path (stdio, the child, HTTP
//! both ways). One relaxed atomic add per line; the binary prints both at
//! exit when `MCP_CHAIN_COUNT_LINES` is set.

use std::sync::atomic::{AtomicU64, Ordering};

static PARSED: AtomicU64 = AtomicU64::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Lines parsed so far (a batch is one line).
pub fn parsed() -> u64 {
    PARSED.load(Ordering::Relaxed)
}

/// Lines written so far (a batch is one line).
pub fn written() -> u64 {
    WRITTEN.load(Ordering::Relaxed)
}

pub(crate) fn one_parsed() {
    PARSED.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn one_written() {
    WRITTEN.fetch_add(1, Ordering::Relaxed);
}
