//! The tools `search` lists as its own, and what their calls answer.

use super::index::{self, Index};
use serde_json::{json, Map, Value};

pub(super) const SEARCH_TOOLS: &str = "search_tools";
pub(super) const CALL_TOOL: &str = "call_tool";
pub(super) const DESCRIBE_TOOL: &str = "describe_tool";

/// The most of a description a result carries.
const DESCRIPTION_AT_MOST: usize = 300;

/// The layer's own tools: `search_tools`, `call_tool`, and `describe_tool`
/// when results carry no schema.
pub(super) fn own(describe: bool, max_results: usize) -> Vec<Value> {
    let mut tools = vec![
        json!({
            "name": SEARCH_TOOLS,
            "title": "Search tools",
            "description": format!("Finds the tools for a task among the server's tools, which are not listed here; returns up to {max_results}, best first, each with its name and description{}. Call one with call_tool.", if describe { " and the arguments it takes (inputSchema)" } else { " (describe_tool gives the arguments it takes)" }),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in words: \"read a file\", \"current time in Tokyo\"."},
                    "server": {"type": "string", "description": "Only tools of this server (the name before the separator in their names)."}
                },
                "required": ["query"]
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }),
        json!({
            "name": CALL_TOOL,
            "title": "Call a tool",
            "description": "Calls a tool found with search_tools, by its name, with its arguments.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name, as search_tools gave it."},
                    "arguments": {"type": "object", "description": "The tool's arguments, as its inputSchema says."}
                },
                "required": ["name"]
            }
        }),
    ];
    if !describe {
        tools.push(json!({
            "name": DESCRIBE_TOOL,
            "title": "Describe a tool",
            "description": "Gives a tool's whole definition (the arguments it takes), by the name search_tools gave.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }));
    }
    tools
}

/// A search's answer: the tools found, as text and as structured content.
pub(super) fn found(
    index: &Index,
    query: &str,
    server: Option<&str>,
    limit: usize,
    describe: bool,
) -> Value {
    let tools: Vec<Value> = index
        .search(query, server, limit)
        .into_iter()
        .map(|tool| shown(tool, describe))
        .collect();
    let text = if tools.is_empty() {
        "No tool matches; try other words.".to_owned()
    } else {
        serde_json::to_string_pretty(&tools).expect("JSON values serialize")
    };
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"tools": tools}
    })
}

/// A tool as a result shows it.
fn shown(tool: &Map<String, Value>, describe: bool) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), index::name(tool).into());
    if let Some(title) = tool.get("title") {
        out.insert("title".into(), title.clone());
    }
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    out.insert(
        "description".into(),
        cut_words(description, DESCRIPTION_AT_MOST).into(),
    );
    if describe {
        if let Some(schema) = tool.get("inputSchema") {
            out.insert("inputSchema".into(), schema.clone());
        }
    }
    Value::Object(out)
}

/// `text` cut to about `at` characters, at a word, with `…` when cut.
fn cut_words(text: &str, at: usize) -> String {
    if text.chars().count() <= at {
        return text.to_owned();
    }
    let head: String = text.chars().take(at).collect();
    let head = head.rsplit_once(' ').map_or(head.as_str(), |(h, _)| h);
    format!("{head}…")
}

/// A tool-call answer carrying an error the model can read.
pub(super) fn tool_error(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}
