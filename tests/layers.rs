//! The layers end to end, through the real binary and the recording fake.

mod support;

use serde_json::{json, Value};
use support::{call, req, Proxy, TempDir, FAKE};

fn with_layers(dir: &TempDir, layers: &str) -> Proxy {
    let path = dir.write(
        "c.toml",
        &format!("[upstream]\ncommand = {FAKE:?}\n{layers}\n"),
    );
    Proxy::spawn(&["--config", &path])
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .map(|t| t[field].as_str().unwrap_or_default().to_owned())
        .collect()
}

const FILTER: &str = r#"
[[middleware]]
type = "filter"
tools = { allow = ["echo", "ask", "delay", "tool_*"], deny = ["tool_0001"] }
resources = { deny = ["file:///etc/**", "mem://**"] }
prompts = { deny = ["secret_*"] }
methods = { deny = ["sampling/createMessage", "logging/setLevel"] }
"#;

#[tokio::test]
async fn filter_hides_items_from_every_list_and_page() {
    let dir = TempDir::new("filter-lists");
    let path = dir.write(
        "c.toml",
        &format!("[upstream]\ncommand = {FAKE:?}\nargs = [\"--tools\", \"5\", \"--page-size\", \"3\"]\n{FILTER}"),
    );
    let mut proxy = Proxy::spawn(&["--config", &path]);
    let mut tools = Vec::new();
    let mut cursor = Value::Null;
    for page in 0.. {
        assert!(page < 20, "too many pages");
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let list = proxy.request(json!(page), "tools/list", params).await;
        tools.extend(names(&list, "tools", "name"));
        cursor = list["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    tools.sort();
    assert_eq!(
        tools,
        [
            "ask",
            "delay",
            "echo",
            "tool_0000",
            "tool_0002",
            "tool_0003",
            "tool_0004"
        ]
    );
    let resources = proxy.request(json!("r"), "resources/list", json!({})).await;
    assert_eq!(
        names(&resources, "resources", "uri"),
        ["file:///srv/readme.txt"]
    );
    let prompts = proxy.request(json!("p"), "prompts/list", json!({})).await;
    assert_eq!(names(&prompts, "prompts", "name"), ["greet"]);
    let discover = proxy
        .request(json!("d"), "server/discover", json!({}))
        .await;
    let mut listed = names(&discover, "tools", "name");
    listed.sort();
    assert_eq!(
        listed,
        [
            "ask",
            "delay",
            "echo",
            "tool_0000",
            "tool_0002",
            "tool_0003",
            "tool_0004"
        ]
    );
}

#[tokio::test]
async fn filter_closes_every_way_to_a_hidden_item_and_nothing_reaches_the_server() {
    let dir = TempDir::new("filter-calls");
    let mut proxy = with_layers(&dir, FILTER);
    let cases = [
        (call(json!(1), "crash", json!({})), -32602),
        (call(json!(2), "tool_0001", json!({})), -32602),
        (
            req(
                json!(3),
                "resources/read",
                json!({"uri": "file:///etc/passwd"}),
            ),
            -32002,
        ),
        (
            req(
                json!(4),
                "resources/subscribe",
                json!({"uri": "mem://secret/key"}),
            ),
            -32002,
        ),
        (
            req(json!(5), "prompts/get", json!({"name": "secret_prompt"})),
            -32602,
        ),
        (
            req(
                json!(6),
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "secret_prompt"}, "argument": {"name": "a", "value": ""}}),
            ),
            -32602,
        ),
        (
            req(json!(7), "logging/setLevel", json!({"level": "debug"})),
            -32601,
        ),
    ];
    for (msg, code) in cases {
        proxy.send(msg.clone()).await;
        let (answer, _) = proxy.recv_answer(&msg["id"]).await;
        assert_eq!(answer["error"]["code"], code, "{msg} → {answer}");
        assert_eq!(answer["error"]["data"]["layer"], "filter", "{answer}");
        assert!(answer["error"]["data"]["reason"].is_string(), "{answer}");
    }
    let received = proxy.server_received().await;
    assert!(
        received.is_empty(),
        "denied requests reached the server: {received:?}"
    );
    // Allowed traffic still flows.
    let ok = proxy.call_tool(json!(8), "echo", json!({})).await;
    assert!(ok["result"].is_object(), "{ok}");
}

#[tokio::test]
async fn filter_answers_a_denied_server_request_itself() {
    let dir = TempDir::new("filter-sampling");
    let mut proxy = with_layers(&dir, FILTER);
    proxy
        .send(call(
            json!(1),
            "ask",
            json!({"method": "sampling/createMessage", "params": {}}),
        ))
        .await;
    let (answer, before) = proxy.recv_answer(&json!(1)).await;
    assert!(
        before.is_empty(),
        "the client must not see the denied request: {before:?}"
    );
    let response = &answer["result"]["structuredContent"]["response"];
    assert_eq!(response["error"]["code"], -32601, "{answer}");
    // Another server request is not denied and reaches the client.
    proxy
        .send(call(json!(2), "ask", json!({"method": "roots/list"})))
        .await;
    let server_req = proxy.recv().await;
    assert_eq!(server_req["method"], "roots/list");
}

#[tokio::test]
async fn rewrite_renames_everywhere_and_maps_calls_back() {
    let dir = TempDir::new("rewrite");
    let mut proxy = with_layers(
        &dir,
        r#"
[[middleware]]
type = "rewrite"
tool_prefix = "fx_"
[middleware.tools.echo]
name = "say"
description = "Says it back"
arguments = { forced = "yes" }
defaults = { mode = "plain" }
[[middleware.redact]]
pattern = "@aws_access_key"
replacement = "[KEY]"
"#,
    );
    let list = proxy.request(json!(1), "tools/list", json!({})).await;
    let tools = names(&list, "tools", "name");
    assert!(
        tools.contains(&"say".to_owned()) && tools.contains(&"fx_delay".to_owned()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"echo".to_owned()));
    let say = list["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "say"))
        .cloned();
    assert_eq!(say.expect("say listed")["description"], "Says it back");
    let discover = proxy.request(json!(2), "server/discover", json!({})).await;
    assert!(names(&discover, "tools", "name").contains(&"say".to_owned()));

    let answer = proxy
        .call_tool(json!(3), "say", json!({"forced": "no", "text": "hi"}))
        .await;
    let received = &answer["result"]["structuredContent"]["received"];
    assert_eq!(received["name"], "echo");
    assert_eq!(
        received["arguments"],
        json!({"forced": "yes", "text": "hi", "mode": "plain"})
    );
    // An upstream name is not reachable under its old name.
    let old = proxy.call_tool(json!(4), "echo", json!({})).await;
    assert_eq!(old["error"]["code"], -32602, "{old}");
    // Redaction of what comes back.
    let secret = proxy
        .request(
            json!(5),
            "resources/read",
            json!({"uri": "mem://secret/key"}),
        )
        .await;
    assert_eq!(secret["result"]["contents"][0]["text"], "[KEY]", "{secret}");
}

#[tokio::test]
async fn rewrite_config_errors_are_caught_at_load_time() {
    let dir = TempDir::new("rewrite-bad");
    for (bad, what) in [
        (
            "[middleware.tools.a]\nname = \"same\"\n[middleware.tools.b]\nname = \"same\"\n",
            "same",
        ),
        (
            &format!("[middleware.tools.a]\nname = \"{}\"\n", "n".repeat(129)) as &str,
            "long",
        ),
        ("[middleware.tools.a]\nname = \"has space\"\n", "space"),
    ] {
        let path = dir.write(
            "bad.toml",
            &format!("[[middleware]]\ntype = \"rewrite\"\n{bad}"),
        );
        let out = std::process::Command::new(support::PROXY)
            .args(["check", "--config", &path])
            .output()
            .expect("runs");
        assert!(!out.status.success(), "{what}: accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("middleware[0] (rewrite)"),
            "{what}: {stderr}"
        );
    }
}

#[tokio::test]
async fn rate_limit_refuses_with_429_and_other_traffic_flows() {
    let dir = TempDir::new("rate");
    let mut proxy = with_layers(
        &dir,
        "[[middleware]]\ntype = \"rate_limit\"\nrules = [ { tool = \"echo\", rate = \"1/min\", burst = 1 } ]\n",
    );
    assert!(proxy.call_tool(json!(1), "echo", json!({})).await["result"].is_object());
    let limited = proxy.call_tool(json!(2), "echo", json!({})).await;
    assert_eq!(limited["error"]["code"], 429, "{limited}");
    assert_eq!(limited["error"]["data"]["layer"], "rate_limit");
    assert!(limited["error"]["data"]["retryAfterMs"]
        .as_u64()
        .is_some_and(|ms| ms > 0));
    assert!(limited["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("mcp-chain"));
    for i in 0..20 {
        assert_eq!(
            proxy
                .request(json!(format!("p{i}")), "ping", json!({}))
                .await["result"],
            json!({})
        );
    }
}

#[tokio::test]
async fn timeout_answers_the_client_and_cancels_at_the_server() {
    let dir = TempDir::new("timeout");
    let mut proxy = with_layers(
        &dir,
        "[[middleware]]\ntype = \"timeout\"\ndefault = \"10s\"\ntools = { \"delay\" = \"200ms\" }\n",
    );
    let answer = proxy
        .call_tool(json!("slow"), "delay", json!({"ms": 60_000}))
        .await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    assert_eq!(answer["error"]["data"]["layer"], "timeout");
    let received = proxy.server_received().await;
    let call_id = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("call sent")["id"]
        .clone();
    let cancel = received
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("cancel sent");
    assert_eq!(cancel["params"]["requestId"], call_id);
    // A quick call within its deadline is unaffected.
    assert!(proxy.call_tool(json!(2), "delay", json!({"ms": 10})).await["result"].is_object());
}

#[tokio::test]
async fn audit_records_every_request_before_the_server_gets_it() {
    let dir = TempDir::new("audit");
    let log = dir.path("audit.jsonl");
    let record = dir.path("received.jsonl");
    let path = dir.write(
        "c.toml",
        &format!(
            "[upstream]\ncommand = {FAKE:?}\nargs = [\"--record\", {:?}]\n[[middleware]]\ntype = \"audit\"\npath = {:?}\n{FILTER}",
            record.display().to_string(),
            log.display().to_string()
        ),
    );
    let mut proxy = Proxy::spawn(&["--config", &path]);
    for i in 0..50 {
        proxy
            .send(call(json!(i), "delay", json!({"ms": 5000})))
            .await;
    }
    proxy.send(call(json!("denied"), "crash", json!({}))).await;
    let (denied, _) = proxy.recv_answer(&json!("denied")).await;
    assert_eq!(denied["error"]["code"], -32602);
    support::eventually("the server to record 50 calls", || {
        std::fs::read_to_string(&record)
            .map(|t| t.lines().count())
            .unwrap_or(0)
            >= 50
    })
    .await;
    proxy.signal("KILL");
    proxy.wait().await;

    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .expect("audit log written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each audit line is JSON"))
        .collect();
    let requests: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "request").collect();
    for i in 0..50 {
        assert!(
            requests
                .iter()
                .any(|l| l["id"] == json!(i) && l["tool"] == "delay"),
            "no audit line for request {i}"
        );
    }
    let refusal = lines
        .iter()
        .find(|l| l["id"] == "denied" && l["kind"] != "request")
        .expect("the filter's refusal is audited");
    assert_eq!(refusal["outcome"], "denied", "{refusal}");
    assert_eq!(refusal["layer"], "filter", "{refusal}");
    let mode = std::fs::metadata(&log)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    assert_eq!(mode.ok(), Some(0o600));
}

const LIMIT: &str = r#"
[[middleware]]
type = "limit"
action = "truncate"
max_result_bytes = 200
tools = { "whole" = "none", "strict" = 100 }
max_list_items = 3
"#;

#[tokio::test]
async fn limit_cuts_refuses_and_trims_through_the_binary() {
    let dir = TempDir::new("limit");
    let mut proxy = with_layers(&dir, LIMIT);
    proxy.initialize("2025-11-25").await;
    let long = "word ".repeat(100);
    let text = json!({"content": [{"type": "text", "text": long}]});
    // Cut to fit, saying so.
    let cut = proxy
        .request(
            json!(1),
            "tools/call",
            json!({"name": "echo", "fixtureReply": text}),
        )
        .await;
    let written = serde_json::to_vec(&cut["result"]).expect("json").len();
    assert!(written <= 200, "{written}: {cut}");
    let said = cut["result"]["content"][0]["text"].as_str().expect("text");
    assert!(
        said.starts_with("word word") && said.contains("[mcp-chain: cut to fit 200 bytes;"),
        "{said}"
    );
    // No limit for this tool: as it came.
    let whole = proxy
        .request(
            json!(2),
            "tools/call",
            json!({"name": "whole", "fixtureReply": text}),
        )
        .await;
    assert_eq!(whole["result"], text);
    // A structured result cannot be cut: refused, with size and limit.
    let structured =
        json!({"content": [{"type": "text", "text": long}], "structuredContent": {"t": long}});
    let refused = proxy
        .request(
            json!(3),
            "tools/call",
            json!({"name": "strict", "fixtureReply": structured}),
        )
        .await;
    assert_eq!(refused["error"]["code"], 403, "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], 100);
    assert_eq!(refused["error"]["data"]["reason"], "too_large");
    // Listings keep their first items; the handshake was never limited.
    let list = proxy.request(json!(4), "tools/list", json!({})).await;
    assert_eq!(names(&list, "tools", "name").len(), 3, "{list}");
}

#[tokio::test]
async fn validate_refuses_arguments_that_do_not_fit_and_the_server_sees_nothing() {
    let dir = TempDir::new("validate");
    let mut proxy = with_layers(&dir, "[[middleware]]\ntype = \"validate\"\n");
    proxy.initialize("2025-11-25").await;
    let schema =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let listing = json!({"tools": [{"name": "echo", "inputSchema": schema}]});
    proxy
        .request(json!(1), "tools/list", json!({"fixtureReply": listing}))
        .await;
    let refused = proxy
        .request(
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": 42}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["reason"], "invalid_arguments");
    assert_eq!(refused["error"]["data"]["errors"][0]["pointer"], "/text");
    let fits = proxy
        .request(
            json!(3),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
    assert!(fits.get("result").is_some(), "{fits}");
    let calls: Vec<Value> = proxy
        .server_received()
        .await
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert_eq!(
        calls.len(),
        1,
        "only the call that fits reached the server: {calls:?}"
    );
    assert_eq!(calls[0]["params"]["arguments"]["text"], "hi");
}

/// Nothing leaks past redaction and limits: a secret in an error's `data`
/// or in a `structuredContent` key is redacted; an error of any size is
/// held to `max_result_bytes`; text full of escapes is cut, not emptied.
#[tokio::test]
async fn nothing_leaks_past_redaction_and_limits() {
    let dir = TempDir::new("leaks");
    let mut proxy = with_layers(
        &dir,
        r#"
[[middleware]]
type = "limit"
max_result_bytes = 2000
action = "truncate"

[[middleware]]
type = "rewrite"
[[middleware.redact]]
pattern = "@aws_access_key"
"#,
    );
    proxy.initialize("2025-11-25").await;
    let key = "AKIAIOSFODNN7EXAMPLE";
    let error = json!({"code": -32000, "message": "failed", "data": {"input": {key: key}, "note": format!("key {key}")}});
    let answer = proxy
        .request(
            json!(1),
            "tools/call",
            json!({"name": "echo", "fixtureError": error}),
        )
        .await;
    assert!(!answer.to_string().contains(key), "{answer}");
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert_eq!(answer["error"]["data"]["input"]["[REDACTED]"], "[REDACTED]");

    let structured = json!({"content": [], "structuredContent": {"keys": {key: {"user": "ci"}}}});
    let answer = proxy
        .request(
            json!(2),
            "tools/call",
            json!({"name": "echo", "fixtureReply": structured}),
        )
        .await;
    assert!(!answer.to_string().contains(key), "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["keys"]["[REDACTED]"]["user"],
        "ci"
    );

    let huge = json!({"code": -32603, "message": "x".repeat(50_000), "data": {"dump": "y".repeat(50_000)}});
    let answer = proxy
        .request(
            json!(3),
            "tools/call",
            json!({"name": "echo", "fixtureError": huge}),
        )
        .await;
    assert!(
        answer.to_string().len() < 3000,
        "{}",
        answer.to_string().len()
    );
    assert_eq!(answer["error"]["code"], -32603);
    assert_eq!(answer["error"]["data"]["reason"], "too_large");

    let escapes = json!({"content": [{"type": "text", "text": "\u{1}".repeat(5000)}]});
    let answer = proxy
        .request(
            json!(4),
            "tools/call",
            json!({"name": "echo", "fixtureReply": escapes}),
        )
        .await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let kept = text.chars().filter(|c| *c == '\u{1}').count();
    assert!(kept > 200, "kept {kept} characters: {answer}");
}
