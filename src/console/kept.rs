//! "Keep hidden": a person looked at a drifted definition on the page and
//! left it hidden (the pin layer goes on hiding it; nothing in the pin
//! file changes). The page then lists it under "Kept hidden" rather than
//! among the drifts that wait for a look, until the server changes it
//! again: what is kept is a fingerprint of the pin file, the definition's
//! kind and name, and what was seen, so a new change asks again. Kept in
//! the state directory (`console/kept_hidden.json`, private), the last
//! [`KEPT_AT_MOST`].

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const KEPT_AT_MOST: usize = 1000;

/// Where the keys are kept, when there is a state directory.
fn file() -> Option<PathBuf> {
    let state = crate::platform::dirs::state_dir().ok()?;
    Some(state.join("console").join("kept_hidden.json"))
}

/// The key of one drift as seen now.
pub(super) fn key(pins: &Path, kind: &str, name: &str, seen: &BTreeMap<String, String>) -> String {
    let seen: serde_json::Map<String, Value> = seen
        .iter()
        .map(|(field, text)| (field.clone(), Value::String(text.clone())))
        .collect();
    mcp_chain_middleware::pin::file::fingerprint(&json!([
        pins.to_string_lossy(),
        kind,
        name,
        Value::Object(seen)
    ]))
}

/// The keys kept (none when the file is missing or unreadable: a drift
/// then asks for a look again, which is the safe side).
pub(super) fn all() -> Vec<String> {
    file()
        .and_then(|path| std::fs::read(path).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Keeps `key`.
pub(super) fn keep(key: String) -> std::io::Result<()> {
    let path = file().ok_or_else(|| std::io::Error::other("no state directory"))?;
    let mut keys = all();
    if !keys.contains(&key) {
        keys.push(key);
    }
    let excess = keys.len().saturating_sub(KEPT_AT_MOST);
    keys.drain(..excess);
    let text = serde_json::to_vec(&keys).map_err(std::io::Error::other)?;
    mcp_chain_private::write_whole(&path, &text)
}
