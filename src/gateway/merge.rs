//! The client's `initialize`, answered for many servers: mcp-chain's own
//! `serverInfo`; the oldest protocol revision any server settled on (every
//! server can speak it; revisions are dates); capabilities the union of
//! the servers' (a list is `listChanged` always: servers join and leave);
//! each server's `instructions` under its name; `tasks` the union of
//! what the servers can do as tasks.

use serde_json::{json, Map, Value};

/// The answer to the client's `initialize` (`params`), from the servers'
/// answers `(name, result)`.
pub(super) fn initialize(params: &Value, answers: &[(&str, &Value)]) -> Value {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("2025-06-18");
    let version = answers
        .iter()
        .filter_map(|(_, r)| r.get("protocolVersion").and_then(Value::as_str))
        .min()
        .unwrap_or(asked);
    let mut capabilities = Map::new();
    let offered = |name: &'static str| {
        answers
            .iter()
            .filter_map(move |(_, r)| r.pointer(&format!("/capabilities/{name}")))
    };
    for list in ["tools", "prompts"] {
        if offered(list).next().is_some() {
            capabilities.insert(list.into(), json!({"listChanged": true}));
        }
    }
    if offered("resources").next().is_some() {
        let subscribe = offered("resources").any(|r| r.get("subscribe") == Some(&json!(true)));
        capabilities.insert(
            "resources".into(),
            json!({"listChanged": true, "subscribe": subscribe}),
        );
    }
    // Tasks: what any server can do as a task (each task routed to its
    // own server).
    let mut tasks = None;
    for offered in offered("tasks") {
        union(tasks.get_or_insert_with(|| json!({})), offered);
    }
    if let Some(tasks) = tasks {
        capabilities.insert("tasks".into(), tasks);
    }
    for plain in ["logging", "completions"] {
        if offered(plain).next().is_some() {
            capabilities.insert(plain.into(), json!({}));
        }
    }
    let instructions: Vec<String> = answers
        .iter()
        .filter_map(|(name, r)| {
            let text = r.get("instructions")?.as_str()?.trim();
            (!text.is_empty()).then(|| format!("## {name}\n\n{text}"))
        })
        .collect();
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": "mcp-chain", "version": env!("CARGO_PKG_VERSION")},
    });
    if !instructions.is_empty() {
        result["instructions"] = Value::String(instructions.join("\n\n"));
    }
    result
}

/// The answer to `server/discover` (2026-07-28) from the servers' answers:
/// what `initialize` would say, with the revisions mcp-chain serves.
pub(super) fn discover(answers: &[(&str, &Value)]) -> Value {
    let mut result = initialize(&json!({}), answers);
    if let Value::Object(result) = &mut result {
        result.remove("protocolVersion");
        result.insert(
            "supportedVersions".into(),
            json!(crate::mcp_http::REVISIONS),
        );
        // What the servers offer changes as they join and leave.
        result.insert("resultType".into(), json!("complete"));
        result.insert("ttlMs".into(), json!(0));
        result.insert("cacheScope".into(), json!("private"));
    }
    result
}

/// `from` merged into `into`: objects member by member, anything else
/// kept as first seen.
fn union(into: &mut Value, from: &Value) {
    if let (Value::Object(into), Value::Object(from)) = (into, from) {
        for (key, value) in from {
            match into.get_mut(key) {
                Some(existing) => union(existing, value),
                None => {
                    into.insert(key.clone(), value.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_answers_are_merged() {
        let files = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "resources": {"subscribe": true},
                           "tasks": {"list": {}, "requests": {"tools": {"call": {}}}}},
                           "serverInfo": {"name": "fs"}, "instructions": "Read files."});
        let time = json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": false}, "logging": {},
                          "tasks": {"cancel": {}}},
                          "serverInfo": {"name": "time"}});
        let merged = initialize(
            &json!({"protocolVersion": "2025-11-25"}),
            &[("files", &files), ("time", &time)],
        );
        assert_eq!(merged["protocolVersion"], "2025-06-18");
        assert_eq!(merged["serverInfo"]["name"], "mcp-chain");
        assert_eq!(
            merged["capabilities"]["tools"],
            json!({"listChanged": true})
        );
        assert_eq!(
            merged["capabilities"]["resources"],
            json!({"listChanged": true, "subscribe": true})
        );
        assert_eq!(merged["capabilities"]["logging"], json!({}));
        assert_eq!(
            merged["capabilities"]["tasks"],
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
        );
        assert!(merged["capabilities"].get("prompts").is_none());
        assert_eq!(merged["instructions"], "## files\n\nRead files.");
        let none = initialize(&json!({"protocolVersion": "2025-03-26"}), &[]);
        assert_eq!(none["protocolVersion"], "2025-03-26");
    }
}
