//! `scan`: reads what a server says, not only whether it changed. `pin`
//! catches a tool that changes after it was trusted; a tool poisoned from
//! the start (instructions to the model hidden in its description, its
//! parameters' descriptions, its title, or the server's instructions) and
//! instructions injected into a result (a fetched page, an issue comment)
//! are what this layer reads for.
//!
//! ```toml
//! [[middleware]]
//! type = "scan"
//! listings = "hide"       # "audit" | "hide" | "refuse"
//! results = "redact"      # "audit" | "redact" | "refuse"
//! instructions = "audit"  # "audit" | "redact"
//! [[middleware.rule]]
//! id = "corp-exfil"
//! pattern = "re:https?://[^ ]*paste\\.example"
//! where = ["descriptions", "results"]
//! ```
//!
//! Text is normalised first (`normal.rs`), then read by the built-in rules
//! (`rules.rs`, each with its reason) and the user's own. Every finding is
//! noted for the audit (`"scan"`: rule, item, where) and is a decision
//! event; a hidden item's call is refused with `data.layer = "scan"`.
//! What it reads and what it cannot catch: docs/layers/scan.md.

mod config;
mod cross;
mod encoded;
mod first_look;
mod judge;
mod lanes;
mod normal;
mod rules;
mod scanner;
mod service;
mod strings;

pub use config::{RuleConfig, ScanConfig};
pub use service::{Scan, ScanLayer};

/// The built-in rules that flag a definition as a person is asked to
/// trust it (`pin`'s first pins and the drifts offered for acceptance),
/// each once: `field → JSON text` as the pin file keeps it.
pub(crate) fn flagged_definition(
    texts: &std::collections::BTreeMap<String, String>,
) -> Vec<String> {
    static BUILT_IN: std::sync::LazyLock<scanner::Scanner> =
        std::sync::LazyLock::new(|| scanner::Scanner::new(rules::Rule::built_in()));
    let item: serde_json::Map<String, serde_json::Value> = texts
        .iter()
        .map(|(field, text)| {
            // A text cut at its length is read as it stands.
            let value = serde_json::from_str(text).unwrap_or_else(|_| text.clone().into());
            (field.clone(), value)
        })
        .collect();
    let mut rules: Vec<String> = Vec::new();
    for finding in BUILT_IN.item(&item) {
        if !rules.contains(&finding.rule) {
            rules.push(finding.rule);
        }
    }
    rules
}

#[cfg(test)]
mod tests;
