//! The index `search` ranks tools in: each tool's words (its name split
//! at `_`, `-`, `.` and case changes, its title, description, and its
//! parameters' names and descriptions) ranked with Okapi BM25 (the `bm25`
//! crate, English stemming and stop words). Built from one listing, whole;
//! a changed list builds a new one.

use bm25::{Language, SearchEngine, SearchEngineBuilder};
use serde_json::{Map, Value};

/// The most of a query read: a longer one is cut (at a character), so a
/// query of 100 KB costs what one of this length does.
pub(super) const QUERY_AT_MOST: usize = 2_048;

/// Tools and their ranking.
pub(super) struct Index {
    engine: SearchEngine<u32>,
    /// Each tool's definition as listed, by its number in the engine.
    tools: Vec<Map<String, Value>>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl Index {
    /// The index of `tools` (definitions without a name are left out).
    pub(super) fn new(tools: Vec<Map<String, Value>>) -> Self {
        let tools: Vec<Map<String, Value>> = tools
            .into_iter()
            .filter(|t| t.get("name").and_then(Value::as_str).is_some())
            .collect();
        let documents: Vec<bm25::Document<u32>> = tools
            .iter()
            .enumerate()
            .map(|(n, tool)| bm25::Document::new(n as u32, words_of(tool)))
            .collect();
        let engine = match documents.is_empty() {
            // The builder would divide by the mean length of nothing.
            true => SearchEngineBuilder::<u32>::with_avgdl(1.0).build(),
            false => {
                SearchEngineBuilder::<u32>::with_documents(Language::English, documents).build()
            }
        };
        Self { engine, tools }
    }

    /// The tools best matching `query` (cut at [`QUERY_AT_MOST`]), best
    /// first, at most `limit`; only those whose name starts with `server`
    /// and a separator when one is named.
    pub(super) fn search(
        &self,
        query: &str,
        server: Option<&str>,
        limit: usize,
    ) -> Vec<&Map<String, Value>> {
        let query = words(cut(query, QUERY_AT_MOST));
        let results = self.engine.search(&query, None);
        results
            .into_iter()
            .filter_map(|r| self.tools.get(r.document.id as usize))
            .filter(|tool| server.is_none_or(|s| of_server(name(tool), s)))
            .take(limit)
            .collect()
    }

    /// The tool named `name`, as listed.
    pub(super) fn get(&self, name: &str) -> Option<&Map<String, Value>> {
        self.tools.iter().find(|t| self::name(t) == name)
    }

    /// Every tool, as listed.
    pub(super) fn tools(&self) -> &[Map<String, Value>] {
        &self.tools
    }
}

pub(super) fn name(tool: &Map<String, Value>) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// Whether `tool` is one of `server`'s in a gateway (`server` then a
/// character that is not a letter or digit: `files__read_file`).
fn of_server(tool: &str, server: &str) -> bool {
    tool.strip_prefix(server)
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| !c.is_alphanumeric())
}

/// `text` cut at `at` bytes, at a character.
fn cut(text: &str, at: usize) -> &str {
    if text.len() <= at {
        return text;
    }
    let mut end = at;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A tool's words for the index: its name twice (a name says most),
/// title, description, and each parameter's name and description.
fn words_of(tool: &Map<String, Value>) -> String {
    let mut text = String::new();
    let name = name(tool);
    for _ in 0..2 {
        text.push_str(&words(name));
        text.push(' ');
    }
    for key in ["title", "description"] {
        if let Some(Value::String(s)) = tool.get(key) {
            text.push_str(&words(s));
            text.push(' ');
        }
    }
    let properties = tool
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    for (param, schema) in properties.into_iter().flatten() {
        text.push_str(&words(param));
        text.push(' ');
        if let Some(Value::String(s)) = schema.get("description") {
            text.push_str(&words(s));
            text.push(' ');
        }
    }
    text
}

/// `text` with identifiers split into words: `read_file`, `read-file`,
/// `readFile` and `HTTPServer` become `read file`, `HTTP Server`.
pub(super) fn words(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if matches!(c, '_' | '-' | '.' | '/' | ':') {
            out.push(' ');
            previous = Some(' ');
            continue;
        }
        if let Some(p) = previous {
            let next_lower = chars.peek().is_some_and(|n| n.is_lowercase());
            let camel = p.is_lowercase() && c.is_uppercase();
            let acronym_end = p.is_uppercase() && c.is_uppercase() && next_lower;
            let digit_edge = p.is_alphabetic() && c.is_ascii_digit();
            if camel || acronym_end || digit_edge {
                out.push(' ');
            }
        }
        out.push(c);
        previous = Some(c);
    }
    out
}
