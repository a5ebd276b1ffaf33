//! `[servers.NAME]` and `[gateway]`: many servers behind one mcp-chain.
//! Each `[servers.NAME]` table is an upstream as `[upstream]` is (every
//! key of it), with its own `prefix` (default: its name) and its own
//! chain (`[[servers.NAME.middleware]]`, inside the shared
//! `[[middleware]]`). `[gateway]` says how names are joined (`separator`,
//! default `"__"`) and how long `initialize` waits for servers to start
//! (`startup_timeout`, default 10 s). `resources = "prefix"` offers a
//! server's resource URIs as `NAME+scheme://…` (two servers may then
//! offer the same URI).
//!
//! A config holds `[upstream]` or `[servers.*]`, never both.

use super::file::UpstreamFile;
use super::validate::{parse_duration, Problem};
use super::UpstreamConfig;
use crate::layers::{AnyLayer, Entry, MiddlewareFile};
use serde::Deserialize;
use std::time::Duration;

/// The longest a tool or prompt name may be (the MCP specification's
/// limit on tool names, applied to prompts alike).
pub(crate) const MAX_NAME_LEN: usize = 128;

/// `[gateway]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GatewayFile {
    separator: Option<String>,
    startup_timeout: Option<String>,
}

/// Many servers behind one, checked.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub separator: String,
    pub startup_timeout: Duration,
    /// In the file's order of names (sorted, as TOML tables are read).
    pub servers: Vec<ServerConfig>,
}

/// One `[servers.NAME]`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub name: String,
    pub prefix: String,
    pub upstream: UpstreamConfig,
    /// `resources = "prefix"`: its URIs are offered as `NAME+scheme://…`
    /// (this is the `NAME+`), and read back without it.
    pub uri_prefix: Option<String>,
    /// Its own layers, inside the shared chain; the first is outermost.
    pub(crate) chain: Vec<Entry>,
}

/// Whether `name` can start a URI scheme (`NAME+scheme:`): a letter, then
/// letters, digits, `+`, `-` or `.` (RFC 3986 §3.1).
fn scheme_chars(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Whether `text` is made only of what a tool name may hold.
pub(crate) fn name_chars(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

pub(super) fn gateway(
    servers: Option<toml::Table>,
    gateway: Option<GatewayFile>,
    problems: &mut Vec<Problem>,
) -> Option<GatewayConfig> {
    let Some(servers) = servers else {
        if gateway.is_some() {
            problems.push((
                None,
                "gateway: there are no [servers.NAME] tables for it to serve".to_owned(),
            ));
        }
        return None;
    };
    let gateway = gateway.unwrap_or_default();
    let separator = gateway.separator.unwrap_or_else(|| "__".to_owned());
    if separator.is_empty() || !name_chars(&separator) {
        problems.push((None, format!(
            "gateway.separator: {separator:?} must be one or more of A-Z a-z 0-9 _ - . (what a tool name may hold)"
        )));
    }
    let startup_timeout = match gateway.startup_timeout.as_deref().map(parse_duration) {
        None => Duration::from_secs(10),
        Some(Ok(d)) if !d.is_zero() => d,
        Some(Ok(_)) => {
            problems.push((
                None,
                "gateway.startup_timeout: must be more than 0".to_owned(),
            ));
            Duration::from_secs(10)
        }
        Some(Err(e)) => {
            problems.push((None, format!("gateway.startup_timeout: {e}")));
            Duration::from_secs(10)
        }
    };
    if servers.is_empty() {
        problems.push((
            None,
            "servers: name at least one server ([servers.NAME])".to_owned(),
        ));
    }
    let mut checked = Vec::new();
    for (name, table) in servers {
        if let Some(server) = server(&name, table, problems) {
            checked.push(server);
        }
    }
    for (n, a) in checked.iter().enumerate() {
        for b in &checked[n + 1..] {
            if a.prefix == b.prefix {
                problems.push((None, format!(
                    "servers.{}.prefix: {:?} is servers.{}'s too; each server's names need a prefix of their own",
                    b.name, b.prefix, a.name
                )));
            }
        }
    }
    shared_pin_files(&checked, problems);
    Some(GatewayConfig {
        separator,
        startup_timeout,
        servers: checked,
    })
}

/// Two servers' chains pinning to one file would each write their own
/// pins over the other's (and the same name may be two servers' tools):
/// each server's pins need a file of their own. In the shared chain the
/// names carry their server's prefix, so one file there keys by server.
fn shared_pin_files(servers: &[ServerConfig], problems: &mut Vec<Problem>) {
    let mut seen: Vec<(&str, &std::path::Path)> = Vec::new();
    for server in servers {
        for entry in &server.chain {
            let AnyLayer::Pin(pin) = &entry.layer else {
                continue;
            };
            let file = pin.pin_file();
            match seen.iter().find(|(_, f)| *f == file) {
                Some((other, _)) => problems.push((None, format!(
                    "servers.{}.middleware (pin): {} is servers.{other}'s pin file too; give each server's pins a file of their own (or pin in the shared chain, where names carry their server)",
                    server.name,
                    file.display()
                ))),
                None => seen.push((&server.name, file)),
            }
        }
    }
}

fn server(name: &str, table: toml::Value, problems: &mut Vec<Problem>) -> Option<ServerConfig> {
    let at = |message: String| (None, format!("servers.{name}.{message}"));
    if name.is_empty() || !name_chars(name) {
        problems.push((None, format!(
            "servers.{name:?}: a server's name is one or more of A-Z a-z 0-9 _ - . (it names its tools)"
        )));
        return None;
    }
    let toml::Value::Table(mut table) = table else {
        problems.push(at("is not a table".to_owned()));
        return None;
    };
    let prefix = match table.remove("prefix") {
        None => name.to_owned(),
        Some(toml::Value::String(prefix)) if name_chars(&prefix) => prefix,
        Some(other) => {
            problems.push(at(format!(
                "prefix: {other:?} is not a string of A-Z a-z 0-9 _ - . (what a tool name may hold)"
            )));
            return None;
        }
    };
    let uri_prefix = match table.remove("resources") {
        None => None,
        Some(toml::Value::String(how)) if how == "prefix" && scheme_chars(name) => {
            Some(format!("{name}+"))
        }
        Some(toml::Value::String(how)) if how == "prefix" => {
            problems.push(at(format!(
                "resources: \"prefix\" writes URIs as {name}+scheme://…, and {name:?} cannot start a URI scheme (a letter, then letters, digits, + - .): rename the server"
            )));
            return None;
        }
        Some(other) => {
            problems.push(at(format!(
                "resources: {other:?} is not \"prefix\" (the one way to rewrite a server's URIs; leave it out to keep them as they are)"
            )));
            return None;
        }
    };
    let mut chain = Vec::new();
    let entries = match table.remove("middleware") {
        None => Vec::new(),
        Some(toml::Value::Array(entries)) => entries,
        Some(_) => {
            problems.push(at(
                "middleware: write each layer as [[servers.NAME.middleware]]".to_owned(),
            ));
            Vec::new()
        }
    };
    for (index, entry) in entries.into_iter().enumerate() {
        let parsed = entry
            .try_into::<MiddlewareFile>()
            .map_err(|e| e.to_string())
            .and_then(|entry| {
                let name = entry.type_name();
                entry.validate().map_err(|e| format!("({name}): {e}"))
            });
        match parsed {
            Ok(entry) => chain.push(entry),
            Err(e) => problems.push(at(format!("middleware[{index}] {e}"))),
        }
    }
    let file: UpstreamFile = match toml::Value::Table(table).try_into() {
        Ok(file) => file,
        Err(e) => {
            problems.push(at(e.message().to_owned()));
            return None;
        }
    };
    let mut found = Vec::new();
    let upstream = super::upstream::upstream(file, &mut found);
    for (place, message) in found {
        let message = message.replace("upstream.", &format!("servers.{name}."));
        problems.push((place, message));
    }
    Some(ServerConfig {
        name: name.to_owned(),
        prefix,
        upstream: upstream?,
        uri_prefix,
        chain,
    })
}
