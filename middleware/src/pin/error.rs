//! Why the pin file cannot be used: read, written, or acted on. The path
//! is the user's own (from the config), so it is shown as given.

use super::disk::VERSION;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PinFileError {
    #[error("pin file {}: {why}", path.display())]
    Open { path: PathBuf, why: std::io::Error },
    #[error("pin file {} cannot be read: {why}", path.display())]
    Unreadable {
        path: PathBuf,
        why: serde_json::Error,
    },
    #[error("pin file {}: version {found} is not {VERSION}", path.display())]
    Version { path: PathBuf, found: u32 },
    #[error("pin file {}: cannot write: {why}", path.display())]
    Write { path: PathBuf, why: std::io::Error },
    #[error("pin file {}: no directory {}", path.display(), dir.display())]
    NoDirectory { path: PathBuf, dir: PathBuf },
    #[error("pin file {} does not exist yet: it is written when mcp-chain first lists the server's tools", path.display())]
    NotYet { path: PathBuf },
    /// Accepted in this replica's pin file, not in the replicas' shared
    /// state (`[state]` unavailable).
    #[error("accepted in this replica's pin file only: the state replicas share is unavailable ({0}); the other replicas still hold the drift (accept again once it is back)")]
    Shared(String),
    /// Names given to accept that have no drift (nothing was accepted).
    #[error("no drift to accept for {0:?}")]
    NoDrift(Vec<String>),
}
