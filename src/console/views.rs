//! What the console's page shows, as the template gets it: the calls
//! waiting (each argument folded past a length, with its full length),
//! the lasting approvals, what drifted from the pins, the tools and their
//! switches. Every text a server, a tool call or a caller chose is
//! escaped and cut here, and escaped again for HTML by the template.

use super::page::{Body, Pages, PAGE_TEMPLATE};
use hyper::Response;
use mcp_chain_middleware::approve::desk::Waiting;
use mcp_chain_middleware::shown::shown;
use serde::Serialize;
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// How much of one argument's value is shown before it is folded, and
/// the most of it the page carries at all.
const FOLD_AT: usize = 300;
const SHOW_AT_MOST: usize = 64 * 1024;

#[derive(Serialize)]
struct Shown {
    id: u64,
    tool: String,
    /// The gateway server whose tool it is.
    server: Option<String>,
    caller: Option<String>,
    policy: String,
    session_choice: bool,
    always_choice: bool,
    since_ms: u128,
    waited_s: u64,
    arguments: Vec<Argument>,
}

#[derive(Serialize)]
struct ShownGrant {
    index: usize,
    tool: String,
    server: String,
    arguments: Option<String>,
    granted_ms: u128,
    caller: Option<String>,
}

#[derive(Serialize)]
struct Argument {
    key: String,
    head: String,
    full: Option<String>,
    length: usize,
    cut: bool,
}

pub(super) async fn page(pages: &Pages) -> Response<Body> {
    let now = SystemTime::now();
    let waiting: Vec<Shown> = pages
        .desk
        .waiting()
        .into_iter()
        .map(|w| shown_waiting(&w, now))
        .collect();
    let book = mcp_chain_middleware::approve::book::installed();
    let kept = match &book {
        // Away (and refused): none shown, as none is used.
        Some(book) => book.all().await.unwrap_or_default(),
        None => Vec::new(),
    };
    let grants: Vec<ShownGrant> = kept
        .iter()
        .enumerate()
        .map(|(index, g)| ShownGrant {
            index,
            tool: shown(&g.tool, 200),
            server: shown(&g.server, 200),
            arguments: g.arguments.clone(),
            granted_ms: u128::from(g.granted_at) * 1000,
            caller: g.caller.as_deref().map(|c| shown(c, 200)),
        })
        .collect();
    let context = minijinja::context! {
        waiting => waiting,
        grants => grants,
        drifts => drifts(pages),
        tools => tools(),
        answered => super::recent::answered(&pages.server).await,
        sessions => super::sessions::running(),
        server => shown(&pages.server, 300),
        page => "approvals",
        token => &pages.token,
        listen => pages.bound.to_string(),
    };
    pages.render(PAGE_TEMPLATE, context)
}

fn shown_waiting(w: &Waiting, now: SystemTime) -> Shown {
    let arguments = match &w.arguments {
        Value::Object(map) if map.is_empty() => Vec::new(),
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| argument(&Value::String(key.clone()).to_string(), value))
            .collect(),
        other => vec![argument("(arguments)", other)],
    };
    Shown {
        id: w.id,
        tool: shown(&w.tool, 200),
        server: w.server.as_deref().map(|s| shown(s, 200)),
        caller: w.caller.as_deref().map(|c| shown(c, 200)),
        policy: shown(&w.policy, 300),
        session_choice: w.session_choice,
        always_choice: w.always_choice,
        since_ms: w
            .since
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
        waited_s: now.duration_since(w.since).map_or(0, |d| d.as_secs()),
        arguments,
    }
}

/// One argument as the page shows it: its value as JSON, folded past
/// [`FOLD_AT`] characters with its full length, carried up to
/// [`SHOW_AT_MOST`].
fn argument(key: &str, value: &Value) -> Argument {
    let json = serde_json::to_string_pretty(value).unwrap_or_default();
    let length = json.chars().count();
    let head: String = json.chars().take(FOLD_AT).collect();
    let full = (length > FOLD_AT).then(|| json.chars().take(SHOW_AT_MOST).collect());
    Argument {
        key: shown(key, 200),
        head,
        full,
        length,
        cut: length > SHOW_AT_MOST,
    }
}

#[derive(Serialize)]
struct ShownDrift {
    file: usize,
    kind: &'static str,
    name: String,
    what: String,
    rows: Vec<(String, String, String)>,
    /// A person chose "Keep hidden" for it as it is now.
    kept: bool,
}

/// What drifted from the pins, with the pinned and the seen definition of
/// each field that differs (every field of a new one), escaped and cut.
fn drifts(pages: &Pages) -> Vec<ShownDrift> {
    let cut = |text: &str| shown(text, 2000);
    let kept = super::kept::all();
    let mut shown_drifts = Vec::new();
    for (file, path) in pages.pin_files.iter().enumerate() {
        let Ok(compared) = mcp_chain_middleware::pin::file::compared(path) else {
            continue;
        };
        for (drift, pinned, seen) in compared {
            let key = super::kept::key(path, drift.kind(), &drift.name, &seen);
            let fields: Vec<&String> = match drift.changed.is_empty() {
                true => seen.keys().collect(),
                false => drift.changed.iter().collect(),
            };
            let rows = fields
                .into_iter()
                .map(|field| {
                    let old = pinned.as_ref().and_then(|p| p.get(field));
                    let new = seen.get(field);
                    (
                        cut(field),
                        old.map_or_else(|| "(none)".to_owned(), |t| cut(t)),
                        new.map_or_else(|| "(none)".to_owned(), |t| cut(t)),
                    )
                })
                .collect();
            shown_drifts.push(ShownDrift {
                file,
                kind: drift.kind(),
                name: shown(&drift.name, 200),
                what: drift.what(),
                rows,
                kept: kept.contains(&key),
            });
        }
    }
    shown_drifts
}

#[derive(Serialize)]
struct ShownTool {
    name: String,
    off: bool,
}

/// The tools the server listed and those switched off, by name.
fn tools() -> Vec<ShownTool> {
    let Some(board) = mcp_chain_middleware::switch::installed() else {
        return Vec::new();
    };
    let (off, seen) = board.tools();
    let mut names: Vec<String> = seen.into_iter().chain(off.iter().cloned()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| ShownTool {
            off: off.contains(&name),
            name: shown(&name, 200),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_argument_is_folded_with_its_length() {
        let long = Value::String("x".repeat(1000));
        let shown = argument("\"body\"", &long);
        assert_eq!(shown.length, 1002);
        assert_eq!(shown.head.chars().count(), FOLD_AT);
        assert!(shown.full.is_some() && !shown.cut);
        let short = argument("\"n\"", &Value::from(5));
        assert!(short.full.is_none() && short.head == "5");
    }
}
