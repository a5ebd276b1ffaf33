//! Codex's config (`~/.codex/config.toml`), edited as text as the JSON
//! files are: each `[mcp_servers.NAME]` table found with its place
//! (toml_edit keeps every item's span), and a wrapped table written as its
//! header and its `key = value` lines, the keys it does not change copied
//! as they were. Only tables of their own are wrapped; a server written
//! inline (`mcp_servers = { … }`) is a shape left as it is.
//!
//! For `wrap --gateway` the servers "object" is the stretch of the file
//! from the first `[mcp_servers.*]` table to the next table of another
//! kind (`json::WHOLE`): the chosen servers' tables (their own sub-tables
//! too) are cut out of it and one `[mcp_servers.mcp-chain]` table put
//! where the first was, so `unwrap` puts the stretch back byte for byte.
//! Servers' tables with another table between them are refused.

use super::json::{Entry, WHOLE};
use super::render::{toml_inline, toml_key};
use serde_json::Value;
use std::ops::Range;
use toml_edit::{Item, Table};

/// The stretch of a Codex file its server tables are in.
#[derive(Debug, Clone)]
pub(super) struct Stretch {
    /// Where it starts in the file.
    start: usize,
    /// Its text.
    text: String,
    /// Each server's pieces (its table, its sub-tables), in the file.
    pieces: Vec<(String, Vec<Range<usize>>)>,
    /// The servers, each read as the other entries are.
    servers: Vec<Entry>,
}

/// The server tables of `text`, in order; an error names the line.
pub(super) fn entries(text: &str) -> Result<Vec<Entry>, String> {
    let doc = toml_edit::ImDocument::parse(text).map_err(|e| {
        let line = e
            .span()
            .map_or(0, |s| text[..s.start].matches('\n').count() + 1);
        format!("line {line}: {}", e.message())
    })?;
    let Some(servers) = doc.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_table() else {
        return Err("\"mcp_servers\" is not a table".into());
    };
    let mut found = Vec::new();
    let mut pieces = Vec::new();
    for (name, item) in servers.iter() {
        let mut own = Vec::new();
        if let Some(table) = item.as_table() {
            table_pieces(text, table, &mut own);
        }
        pieces.push((name.to_owned(), own));
        let Some(table) = item.as_table() else {
            continue;
        };
        // The table's span: its header line, then its own keys.
        let (Some(span), false) = (table.span(), table.is_implicit()) else {
            continue;
        };
        let head_end = text[span.clone()]
            .find('\n')
            .map_or(span.end, |n| span.start + n);
        let head = span.start..head_end;
        let mut members = Vec::new();
        let mut end = head.end;
        for (key, value) in table.iter() {
            if value.is_table() {
                continue; // a table of its own ([mcp_servers.NAME.env]) stays where it is
            }
            let Some(value_at) = value.span() else {
                continue;
            };
            end = end.max(value_at.end);
            members.push((key.to_owned(), text[value_at].to_owned()));
        }
        let value: Value = toml::from_str::<toml::Value>(&text[head.start..end])
            .ok()
            .and_then(|v| v.get("mcp_servers")?.get(name).cloned())
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or(Value::Null);
        found.push(Entry::of_toml(
            name,
            head.start..end,
            text[head.clone()].to_owned(),
            members,
            value,
        ));
    }
    let mut all_ours: Vec<Range<usize>> = pieces.iter().flat_map(|(_, p)| p.clone()).collect();
    if servers.span().is_some() && !servers.is_implicit() {
        all_ours.push(piece(text, servers));
    }
    let stretch = stretch(text, doc.as_table(), &all_ours).map(|at| Stretch {
        start: at.start,
        text: text[at].to_owned(),
        pieces,
        servers: found
            .iter()
            .map(|e| e.with_value(whole_value(text, &e.name)))
            .collect(),
    });
    let at = stretch
        .as_ref()
        .map_or(0..0, |s| s.start..s.start + s.text.len());
    found.push(Entry::of_stretch(WHOLE, at, stretch));
    Ok(found)
}

/// A server's whole value, its sub-tables (`[mcp_servers.NAME.env]`) in it.
fn whole_value(text: &str, name: &str) -> Value {
    toml::from_str::<toml::Value>(text)
        .ok()
        .and_then(|v| v.get("mcp_servers")?.get(name).cloned())
        .and_then(|v| serde_json::to_value(v).ok())
        .unwrap_or(Value::Null)
}

/// The stretch the server tables are in: from the first to the next
/// table that is not one of them (or the end); `Err` when another table
/// is between them.
fn stretch(text: &str, root: &Table, ours: &[Range<usize>]) -> Result<Range<usize>, String> {
    let (Some(first), Some(last)) = (
        ours.iter().map(|r| r.start).min(),
        ours.iter().map(|r| r.end).max(),
    ) else {
        return Err("it has no [mcp_servers.NAME] table".into());
    };
    let mut heads = Vec::new();
    for (key, item) in root.iter() {
        if key != "mcp_servers" {
            headers(item, &mut heads);
        }
    }
    if heads.iter().any(|&h| h > first && h < last) {
        return Err("another table is between its [mcp_servers.NAME] tables; put them one after another first".into());
    }
    let end = heads
        .into_iter()
        .filter(|&h| h >= last)
        .min()
        .unwrap_or(text.len());
    Ok(first..end)
}

/// Where each table under `item` starts (its header).
fn headers(item: &Item, out: &mut Vec<usize>) {
    let mut table = |t: &Table| {
        if let (Some(span), false) = (t.span(), t.is_implicit()) {
            out.push(span.start);
        }
        for (_, inner) in t.iter() {
            headers(inner, out);
        }
    };
    match item {
        Item::Table(t) => table(t),
        Item::ArrayOfTables(tables) => tables.iter().for_each(table),
        _ => {}
    }
}

/// A server's table and its sub-tables, each from its header to the end
/// of its last line.
fn table_pieces(text: &str, table: &Table, out: &mut Vec<Range<usize>>) {
    if table.span().is_some() && !table.is_implicit() {
        out.push(piece(text, table));
    }
    for (_, item) in table.iter() {
        match item {
            Item::Table(inner) => table_pieces(text, inner, out),
            Item::ArrayOfTables(tables) => tables.iter().for_each(|t| table_pieces(text, t, out)),
            _ => {}
        }
    }
}

/// One table's header and its own keys, to the end of the last line.
fn piece(text: &str, table: &Table) -> Range<usize> {
    let span = table.span().unwrap_or(0..0);
    let mut end = text[span.clone()]
        .find('\n')
        .map_or(span.end, |n| span.start + n);
    for (_, value) in table.iter() {
        if let (Some(at), false) = (value.span(), value.is_table() || value.is_array_of_tables()) {
            end = end.max(at.end);
        }
    }
    let end = text[end..].find('\n').map_or(text.len(), |n| end + n + 1);
    span.start..end
}

impl Stretch {
    /// The servers, each read as the other entries are.
    pub(super) fn servers(&self) -> impl Iterator<Item = Entry> + '_ {
        self.servers.iter().cloned()
    }

    /// The stretch with `dropped`'s tables cut out and the table `added`
    /// (a name, its keys) put where the first of them was.
    pub(super) fn replaced(&self, dropped: &[String], added: (&str, &Value)) -> String {
        let mut cuts: Vec<Range<usize>> = self
            .pieces
            .iter()
            .filter(|(name, _)| dropped.contains(name))
            .flat_map(|(_, p)| p.iter().map(|r| r.start - self.start..r.end - self.start))
            .collect();
        cuts.sort_by_key(|r| r.start);
        let at = cuts.first().map_or(0, |r| r.start);
        let mut table = format!("[mcp_servers.{}]\n", toml_key(added.0));
        for (key, value) in added.1.as_object().into_iter().flatten() {
            table += &format!("{} = {}\n", toml_key(key), toml_inline(value));
        }
        let mut out = String::with_capacity(self.text.len());
        let mut from = 0;
        for cut in &cuts {
            // What only parted two cut tables (blank lines) goes with them.
            let between = &self.text[from..cut.start];
            if from == 0 || !between.trim().is_empty() {
                out.push_str(between);
            }
            if cut.start == at {
                out.push_str(&table);
            }
            from = cut.end;
        }
        out.push_str(&self.text[from..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::json::splice;
    use crate::clients::Client;

    const CODEX: &str = "model = \"o3\"\n\n# files\n[mcp_servers.files]\ncommand = \"npx\" # the runner\nargs = [\"-y\", \"@modelcontextprotocol/server-filesystem\"]\nenv_vars = [\"HOME\"]\n\n[mcp_servers.files.env]\nDEBUG = \"1\"\n\n[mcp_servers.figma]\nurl = \"https://mcp.figma.com/mcp\"\nbearer_token_env_var = \"FIGMA_TOKEN\"\nhttp_headers = { \"X-Region\" = \"us\" }\n";

    #[test]
    fn a_server_table_is_found_with_its_place_and_wrapped_in_its_own_order() {
        let found = entries(CODEX).expect("reads");
        let names: Vec<&str> = found.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["files", "figma", WHOLE],
            "and the stretch they are in"
        );
        let files = &found[0];
        assert!(CODEX[files.at.clone()].starts_with("[mcp_servers.files]\ncommand"));
        assert!(CODEX[files.at.clone()].ends_with("env_vars = [\"HOME\"]"));
        let args = vec!["--".to_owned(), "npx".to_owned()];
        let wrapped = files.wrapped(Client::Codex, "/bin/mcp-chain", &args, &Default::default());
        let text = splice(CODEX, &files.at, &wrapped);
        let value: toml::Value = toml::from_str(&text).expect("still TOML");
        let files = &value["mcp_servers"]["files"];
        assert_eq!(files["command"].as_str(), Some("/bin/mcp-chain"));
        assert_eq!(files["env_vars"][0].as_str(), Some("HOME"));
        assert_eq!(
            files["env"]["DEBUG"].as_str(),
            Some("1"),
            "its own table stays"
        );
        assert!(text.starts_with("model = \"o3\"\n\n# files\n[mcp_servers.files]\n"));
        assert_eq!(found[1].value["bearer_token_env_var"], "FIGMA_TOKEN");
    }

    #[test]
    fn a_malformed_file_names_its_line() {
        let e = entries("[mcp_servers.a]\ncommand = \"x\"\nargs = [\n").unwrap_err();
        assert!(e.starts_with("line "), "{e}");
    }
}
