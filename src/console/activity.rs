//! What the console's activity page shows as it happens: the layers'
//! decisions (the `mcp_chain::decision` events telemetry counts, caught
//! here by a tracing layer installed with `[console]` only, the last
//! [`KEPT`] kept in memory), the audit's last lines and the approvals
//! decided (the tails of the audit files of the chain and of the approve
//! book's `decisions.jsonl`, read when the page is asked for, never
//! whole). Each text is a server's or a client's choice: it is cut and
//! escaped here (`shown`) and escaped again for HTML by the template.

use mcp_chain_middleware::shown::shown;
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

/// The decisions kept for the page.
const KEPT: usize = 200;
/// The most of a file's end read for its last lines.
const TAIL_BYTES: u64 = 256 * 1024;

/// One decision of a layer, as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Decided {
    pub(super) at_ms: u128,
    pub(super) layer: String,
    pub(super) outcome: String,
    /// The event's other fields (`rule`, `reason`, `kind`, `name`, …).
    pub(super) details: Vec<(String, String)>,
}

/// The decisions seen, newest last, and how many ever (so the page's
/// event stream can tell that something happened).
#[derive(Default)]
struct Recent {
    kept: VecDeque<Decided>,
    seen: u64,
}

static RECENT: OnceLock<Mutex<Recent>> = OnceLock::new();

/// The tracing layer that keeps decisions for the page; interested in
/// decision events alone (see [`mcp_chain_middleware::decision`]).
pub(crate) fn layer<S>() -> impl Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    let _ = RECENT.set(Mutex::new(Recent::default()));
    Keeper.with_filter(tracing_subscriber::filter::filter_fn(|meta| {
        meta.target() == mcp_chain_middleware::decision::TARGET
    }))
}

struct Keeper;

impl<S: tracing::Subscriber> Layer<S> for Keeper {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let Some(recent) = RECENT.get() else { return };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let decided = Decided {
            at_ms: now_ms(),
            layer: fields.layer,
            outcome: fields.outcome,
            details: fields.details,
        };
        let mut recent = recent.lock().unwrap_or_else(PoisonError::into_inner);
        if recent.kept.len() == KEPT {
            recent.kept.pop_front();
        }
        recent.kept.push_back(decided);
        recent.seen += 1;
    }
}

#[derive(Default)]
struct Fields {
    layer: String,
    outcome: String,
    details: Vec<(String, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.keep(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.keep(field, &format!("{value:?}"));
    }
}

impl Fields {
    fn keep(&mut self, field: &Field, value: &str) {
        let value = shown(value, 300);
        match field.name() {
            "layer" => self.layer = value,
            "outcome" => self.outcome = value,
            // The message repeats layer and outcome.
            "message" => {}
            name => self.details.push((name.to_owned(), value)),
        }
    }
}

/// The decisions kept, newest first, those of `outcome` only when given.
pub(super) fn decisions(outcome: Option<&str>) -> Vec<Decided> {
    let Some(recent) = RECENT.get() else {
        return Vec::new();
    };
    let recent = recent.lock().unwrap_or_else(PoisonError::into_inner);
    recent
        .kept
        .iter()
        .rev()
        .filter(|d| outcome.is_none_or(|o| d.outcome == o))
        .cloned()
        .collect()
}

/// How many decisions were ever kept: it changes when one is made.
pub(super) fn seen() -> u64 {
    RECENT.get().map_or(0, |recent| {
        recent.lock().unwrap_or_else(PoisonError::into_inner).seen
    })
}

/// The last complete JSON lines of the file at `path` (its last
/// [`TAIL_BYTES`] at most), oldest first; a missing or unreadable file
/// has none, a line that is no JSON object is skipped.
pub(super) fn tail(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let length = file.metadata().map_or(0, |m| m.len());
    let start = length.saturating_sub(TAIL_BYTES);
    let mut bytes = Vec::new();
    let read = file
        .seek(SeekFrom::Start(start))
        .and_then(|_| file.take(TAIL_BYTES).read_to_end(&mut bytes));
    if read.is_err() {
        return Vec::new();
    }
    // The first line may be cut by where reading began; the last may be
    // half written: only whole lines are read.
    let from = match start {
        0 => 0,
        _ => bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| i + 1),
    };
    let to = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes
        .get(from..to.max(from))
        .unwrap_or_default()
        .split(|&b| b == b'\n')
        .filter_map(|line| match serde_json::from_slice(line) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        })
        .collect()
}

/// The size of each file: when one grows, the page has something new.
pub(super) fn sizes(paths: &[std::path::PathBuf]) -> Vec<u64> {
    paths
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .collect()
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_reads_whole_lines_only() {
        let dir = std::env::temp_dir().join(format!("mcp-chain-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.jsonl");
        std::fs::write(&path, "{\"a\":1}\nnot json\n{\"a\":2}\n{\"a\":3").unwrap();
        let read: Vec<_> = tail(&path).iter().map(|m| m["a"].clone()).collect();
        assert_eq!(read, vec![Value::from(1), Value::from(2)]);
        // Longer than what is read: the cut first line is left out.
        let long = format!(
            "{{\"pad\":\"{}\"}}\n{{\"a\":4}}\n",
            "x".repeat(TAIL_BYTES as usize)
        );
        std::fs::write(&path, long).unwrap();
        let read: Vec<_> = tail(&path).iter().map(|m| m["a"].clone()).collect();
        assert_eq!(read, vec![Value::from(4)]);
        assert!(tail(&dir.join("missing")).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
