use super::*;
use serde_json::json;

fn learned(tools: Value) -> (ToolParams, Value) {
    let marked = ToolParams::default();
    let mut result = Payload::from(json!({ "tools": tools }));
    marked.learn(&mut result);
    let listed = result.to_value().expect("readable");
    (marked, listed)
}

fn names(listed: &Value) -> Vec<&str> {
    listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect()
}

fn sent(marked: &ToolParams, tool: &str, arguments: Value) -> Vec<(String, String)> {
    marked
        .headers(tool, || Some(arguments))
        .into_iter()
        .map(|(n, v)| (n.to_string(), v.to_str().expect("ascii").to_owned()))
        .collect()
}

#[test]
fn marked_arguments_become_headers_encoded_as_the_revision_says() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "query": {"type": "string"}
        }
    });
    let (marked, listed) = learned(json!([{"name": "execute_sql", "inputSchema": schema}]));
    assert_eq!(names(&listed), ["execute_sql"]);
    let args = json!({"region": "Hello, 世界", "limit": 42, "dry": true, "where": {"zone": "eu-1"}, "query": "x"});
    assert_eq!(
        sent(&marked, "execute_sql", args),
        [
            (
                "mcp-param-region".into(),
                "=?base64?SGVsbG8sIOS4lueVjA==?=".into()
            ),
            ("mcp-param-limit".into(), "42".into()),
            ("mcp-param-dry-run".into(), "true".into()),
            ("mcp-param-zone".into(), "eu-1".into()),
        ]
    );
    // An absent argument, or one of another type than marked, sends nothing.
    assert_eq!(sent(&marked, "execute_sql", json!({"limit": 1.5})), []);
    // A tool without marks, or unknown, sends nothing either.
    assert_eq!(sent(&marked, "other", json!({"region": "x"})), []);
}

#[test]
fn a_tool_whose_marks_break_the_rules_is_left_out() {
    let string = |mark: &str| json!({"type": "string", "x-mcp-header": mark});
    let tools = json!([
        {"name": "ok", "inputSchema": {"type": "object", "properties": {"a": string("A")}}},
        {"name": "empty", "inputSchema": {"type": "object", "properties": {"a": string("")}}},
        {"name": "spaced", "inputSchema": {"type": "object", "properties": {"a": string("A B")}}},
        {"name": "twice", "inputSchema": {"type": "object", "properties": {"a": string("X"), "b": string("x")}}},
        {"name": "number", "inputSchema": {"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "N"}}}},
        {"name": "in-items", "inputSchema": {"type": "object", "properties": {"a": {"type": "array", "items": string("I")}}}},
        {"name": "in-anyof", "inputSchema": {"type": "object", "anyOf": [{"properties": {"a": string("O")}}]}},
        {"name": "at-root", "inputSchema": {"type": "object", "x-mcp-header": "Root"}},
        {"name": "data", "inputSchema": {"type": "object", "properties": {"a": {"type": "object", "enum": [{"x-mcp-header": "no"}]}}}},
    ]);
    let (marked, listed) = learned(tools);
    assert_eq!(names(&listed), ["ok", "data"]);
    assert_eq!(
        sent(&marked, "ok", json!({"a": "v"})),
        [("mcp-param-a".into(), "v".into())]
    );
}

#[test]
fn a_listing_that_drops_a_tools_marks_drops_its_headers() {
    let marked_schema =
        json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A"}}});
    let marked = ToolParams::default();
    let mut first = Payload::from(json!({"tools": [{"name": "t", "inputSchema": marked_schema}]}));
    marked.learn(&mut first);
    assert_eq!(sent(&marked, "t", json!({"a": "v"})).len(), 1);
    let mut again =
        Payload::from(json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}));
    marked.learn(&mut again);
    assert_eq!(sent(&marked, "t", json!({"a": "v"})), []);
}
