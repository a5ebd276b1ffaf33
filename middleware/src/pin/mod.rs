//! `pin`: a server cannot silently change what the user approved. A tool's
//! definition can change after the user trusted it (a "rug pull": new
//! description text that instructs the model, a widened schema). The layer
//! pins, on first sight, a fingerprint of each tool's title, description,
//! schemas and annotations (and of prompts and resource templates) in a pin
//! file, and judges every later listing against it.
//!
//! ```toml
//! [[middleware]]
//! type = "pin"
//! path = "pins/filesystem.json"   # created 0600; review it, commit it
//! on_change = "hide"              # or "refuse", or "warn"
//! ```
//!
//! - unchanged: passes;
//! - changed, or new once the first listing was pinned: recorded in the
//!   pin file as pending, noted in the audit line (which fields, not their
//!   text) and logged; then `hide` takes it out of listings and refuses
//!   its calls, `refuse` keeps it listed but refuses its calls, `warn` only
//!   records;
//! - `mcp-chain pin list|accept [NAME…] --config c.toml` shows and accepts
//!   the drift (or the file is edited by hand); a running mcp-chain reads
//!   the file again when it changes and tells a client whose view changed
//!   (`notifications/tools/list_changed`).
//! - with `[state]`, what is pinned is shared by the replicas
//!   (`shared.rs`): an accept on one is in force on all.
//!
//! A call is judged against a listing this session has seen: one that
//! comes first makes the layer list the server's tools itself. A guard
//! fails closed: an item it cannot read is hidden, a call it cannot read
//! refused, a tool no listing names refused (except under `warn`).

mod config;
mod disk;
mod error;
pub(crate) mod fingerprint;
mod pages;
mod service;
mod shared;
mod store;

pub use config::PinConfig;
pub use error::PinFileError;
pub use service::{Pin, PinLayer};

/// The pin file as the command line sees it (`mcp-chain pin`).
pub mod file {
    pub use super::store::Drift;
    use super::store::Store;
    use super::PinFileError;
    use std::path::Path;

    /// `sha256:…` of `value` with its object keys sorted: the fingerprint
    /// pins are made of, for what the console keeps of a drift.
    pub fn fingerprint(value: &serde_json::Value) -> String {
        super::fingerprint::digest(value)
    }

    /// What is pinned and unchanged: (kind in words, name).
    pub type Pinned = Vec<(&'static str, String)>;

    /// Every drift recorded in the pin file at `path`, and what is pinned
    /// and unchanged.
    pub fn list(path: &Path) -> Result<(Vec<Drift>, Pinned), PinFileError> {
        let store = Store::open_existing(path)?;
        let pinned = store
            .pinned()
            .into_iter()
            .map(|(kind, name)| (kind.word(), name))
            .collect();
        Ok((store.drifts(), pinned))
    }

    /// Each drift in the pin file at `path`, with the fields pinned (none
    /// for a new definition) and those seen now (field name → its text).
    pub fn compared(path: &Path) -> Result<Vec<Compared>, PinFileError> {
        Ok(Store::open_existing(path)?.compared())
    }

    /// A drift, what is pinned, what was seen.
    pub type Compared = (
        Drift,
        Option<std::collections::BTreeMap<String, String>>,
        std::collections::BTreeMap<String, String>,
    );

    /// Accepts the drift of `names` (all when empty) in the pin file at
    /// `path`; the drifts accepted.
    pub fn accept(path: &Path, names: &[String]) -> Result<Vec<Drift>, PinFileError> {
        Store::open_existing(path)?.accept(names)
    }

    pub use super::shared::{accept as accept_shared, share_as};
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_scanned;
