//! How many lines mcp-chain parsed into messages and wrote from them, so
//! tests can check that a message is parsed once where it enters and
//! written once where it leaves, on every path (stdio, the child, HTTP
//! both ways). One relaxed atomic add per line; the binary prints both at
//! exit when `MCP_CHAIN_COUNT_LINES` is set. The bytes of those lines are
//! counted beside them, for telemetry's bytes in and out.

use std::sync::atomic::{AtomicU64, Ordering};

static PARSED: AtomicU64 = AtomicU64::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);
static BYTES_PARSED: AtomicU64 = AtomicU64::new(0);
static BYTES_WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Lines parsed so far (a batch is one line).
pub fn parsed() -> u64 {
    PARSED.load(Ordering::Relaxed)
}

/// Lines written so far (a batch is one line).
pub fn written() -> u64 {
    WRITTEN.load(Ordering::Relaxed)
}

/// Bytes of the lines parsed so far: what mcp-chain read from its peers.
pub fn bytes_parsed() -> u64 {
    BYTES_PARSED.load(Ordering::Relaxed)
}

/// Bytes of the lines written so far: what mcp-chain sent its peers.
pub fn bytes_written() -> u64 {
    BYTES_WRITTEN.load(Ordering::Relaxed)
}

pub(crate) fn one_parsed(bytes: usize) {
    PARSED.fetch_add(1, Ordering::Relaxed);
    BYTES_PARSED.fetch_add(bytes as u64, Ordering::Relaxed);
}

pub(crate) fn one_written(bytes: usize) {
    WRITTEN.fetch_add(1, Ordering::Relaxed);
    BYTES_WRITTEN.fetch_add(bytes as u64, Ordering::Relaxed);
}
