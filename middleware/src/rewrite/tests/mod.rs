use super::*;
use crate::{BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message, ResponseFuture};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};

type Seen = Arc<Mutex<Vec<Message>>>;

fn item(name: Option<&str>) -> ItemConfig {
    ItemConfig {
        name: name.map(str::to_owned),
        ..ItemConfig::default()
    }
}

/// The issue's example, plus a renamed prompt and a redaction rule.
fn config() -> RewriteConfig {
    let mut read = item(Some("read"));
    read.description = Some("Read a file from the team share".into());
    read.arguments.insert("encoding".into(), json!("utf-8"));
    read.defaults.insert("limit".into(), json!(10));
    let mut summarize = item(Some("team_summary"));
    summarize.defaults.insert("style".into(), json!("short"));
    RewriteConfig {
        tool_prefix: "fs_".into(),
        prompt_prefix: "p_".into(),
        tools: BTreeMap::from([("read_file".into(), read)]),
        prompts: BTreeMap::from([("summarize".into(), summarize)]),
        redact: vec![
            RedactConfig {
                pattern: "AKIA[0-9A-Z]{16}".into(),
                ..RedactConfig::default()
            },
            RedactConfig {
                pattern: "@github_token".into(),
                replacement: Some("<gh>".into()),
                ..RedactConfig::default()
            },
        ],
        redact_arguments: false,
    }
}

const KEY: &str = "AKIAIOSFODNN7EXAMPLE";

fn server_result(method: &str) -> Value {
    match method {
        "tools/list" | "server/discover" => json!({
            "tools": [
                {"name": "read_file", "description": "Reads", "inputSchema": {"type": "object",
                    "properties": {"path": {}, "encoding": {}, "limit": {}},
                    "required": ["path", "encoding", "limit"]}},
                {"name": "list_dir", "description": "Lists"},
            ],
            "prompts": [{"name": "summarize", "arguments": [{"name": "style", "required": true}]}],
            "nextCursor": "n",
            "ttlMs": 5000,
            "cacheScope": "public",
        }),
        "prompts/list" => json!({"prompts": [
            {"name": "summarize", "arguments": [{"name": "style", "required": true}, {"name": "text"}]},
            {"name": "greet"},
        ]}),
        "tools/call" => json!({
            "content": [{"type": "text", "text": format!("key {KEY}")}],
            "structuredContent": {"keys": [KEY], "n": 1},
            "isError": false,
        }),
        "resources/read" => json!({"contents": [{"uri": "f://a", "text": KEY}],
            "ttlMs": 5000, "cacheScope": "public"}),
        "tasks/get" => json!({"resultType": "complete", "taskId": "t", "status": "completed",
            "result": {"content": [{"type": "text", "text": format!("key {KEY}")}], "isError": false}}),
        _ => json!({"echo": KEY}),
    }
}

/// A rewrite in front of a fake server that records what reached it (in
/// `call`) and answers with `server_result`, or an error for `fail`.
/// The fake server's type: boxed, so helpers can name it.
type Peer = BoxCloneService<Envelope, Option<Message>, BoxError>;

fn rewrite(cfg: RewriteConfig) -> (Rewrite<Peer>, Seen) {
    let seen = Seen::default();
    let record = seen.clone();
    let peer = tower::service_fn(move |env: Envelope| -> ResponseFuture {
        record
            .lock()
            .expect("not poisoned")
            .push(env.message.clone());
        let answer = match &env.message {
            Message::Request(r) if r.method == "fail" => {
                let e = ErrorObject::new(ErrorCode(-32603), format!("bad key {KEY}"));
                Some(Message::error(Some(r.id.clone()), e))
            }
            Message::Request(r) => Some(Message::response(r.id.clone(), server_result(&r.method))),
            _ => None,
        };
        Box::pin(async move { Ok(answer) })
    });
    (
        cfg.validate()
            .expect("valid config")
            .layer(BoxCloneService::new(peer)),
        seen,
    )
}

async fn send(svc: &mut Rewrite<Peer>, direction: Direction, msg: Message) -> Option<Message> {
    let ready = svc.ready().await.expect("ready");
    ready
        .call(Envelope::new(direction, msg))
        .await
        .expect("no failure")
}

async fn result(svc: &mut Rewrite<Peer>, method: &str, params: Value) -> Value {
    match send(
        svc,
        Direction::ToServer,
        Message::request(1, method, Some(params)),
    )
    .await
    {
        Some(Message::Response(r)) => r.result.into_value().expect("readable"),
        other => panic!("expected a result, got {other:?}"),
    }
}

fn last_params(seen: &Seen) -> Value {
    let seen = seen.lock().expect("not poisoned");
    seen.last()
        .and_then(Message::params)
        .expect("a request reached the server")
        .to_value()
        .expect("readable")
}

#[tokio::test]
async fn lists_show_renamed_prefixed_and_redescribed_tools() {
    let (mut svc, _) = rewrite(config());
    let r = result(&mut svc, "tools/list", json!({})).await;
    assert_eq!(
        r["tools"],
        json!([
            {"name": "read", "description": "Read a file from the team share",
             "inputSchema": {"type": "object", "properties": {"path": {}, "limit": {}},
                             "required": ["path"]}},
            {"name": "fs_list_dir", "description": "Lists"},
        ])
    );
    assert_eq!(r["nextCursor"], "n");
    // tools/list leaves the prompts array it does not own alone.
    assert_eq!(r["prompts"][0]["name"], "summarize");
}

#[tokio::test]
async fn server_discover_is_renamed_like_the_lists() {
    let (mut svc, _) = rewrite(config());
    let r = result(&mut svc, "server/discover", json!({})).await;
    assert_eq!(r["tools"][0]["name"], "read");
    assert_eq!(r["tools"][1]["name"], "fs_list_dir");
    assert_eq!(
        r["prompts"],
        json!([{"name": "team_summary", "arguments": [{"name": "style", "required": false}]}])
    );
}

#[tokio::test]
async fn calls_are_mapped_back_with_arguments_set_before_they_leave() {
    let (mut svc, seen) = rewrite(config());
    let call = json!({"name": "read", "arguments": {"path": "/a", "encoding": "latin1"}, "_meta": {"progressToken": 1}});
    svc.ready().await.expect("ready");
    let fut = svc.call(Envelope::new(
        Direction::ToServer,
        Message::request(1, "tools/call", Some(call)),
    ));
    // Edited and forwarded inside `call`.
    assert_eq!(
        last_params(&seen),
        json!({"name": "read_file", "arguments": {"path": "/a", "encoding": "utf-8", "limit": 10},
               "_meta": {"progressToken": 1}})
    );
    drop(fut);
    let call = json!({"name": "read", "arguments": {"path": "/a", "limit": 3}});
    result(&mut svc, "tools/call", call).await;
    assert_eq!(last_params(&seen)["arguments"]["limit"], 3);
    result(&mut svc, "tools/call", json!({"name": "fs_list_dir"})).await;
    assert_eq!(last_params(&seen), json!({"name": "list_dir"}));
}

#[tokio::test]
async fn names_the_layer_never_shows_are_unknown_and_stay_here() {
    let (mut svc, seen) = rewrite(config());
    for (method, name, kind) in [
        ("tools/call", "read_file", "tool"),
        ("tools/call", "fs_read_file", "tool"),
        ("tools/call", "list_dir", "tool"),
        ("prompts/get", "summarize", "prompt"),
    ] {
        let req = Message::request("x", method, Some(json!({"name": name})));
        match send(&mut svc, Direction::ToServer, req).await {
            Some(Message::Error(e)) => {
                assert_eq!(e.id, Some("x".into()));
                assert_eq!(e.error.code, ErrorCode::INVALID_PARAMS);
                assert_eq!(e.error.message, format!("Unknown {kind}: {name}"));
                assert_eq!(
                    e.error.data,
                    Some(json!({"layer": "rewrite", "reason": "unknown_name"}))
                );
            }
            other => panic!("{name}: expected an error, got {other:?}"),
        }
    }
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn prompts_are_renamed_and_mapped_back_in_get_and_completion() {
    let (mut svc, seen) = rewrite(config());
    let r = result(&mut svc, "prompts/list", json!({})).await;
    assert_eq!(
        r,
        json!({"prompts": [
            {"name": "team_summary", "arguments": [{"name": "style", "required": false}, {"name": "text"}]},
            {"name": "p_greet"},
        ]})
    );
    result(&mut svc, "prompts/get", json!({"name": "team_summary"})).await;
    assert_eq!(
        last_params(&seen),
        json!({"name": "summarize", "arguments": {"style": "short"}})
    );
    let complete = json!({"ref": {"type": "ref/prompt", "name": "p_greet"}, "argument": {"name": "a", "value": ""}});
    result(&mut svc, "completion/complete", complete).await;
    assert_eq!(last_params(&seen)["ref"]["name"], "greet");
}

#[tokio::test]
async fn results_errors_and_logs_coming_back_are_redacted() {
    let (mut svc, _) = rewrite(config());
    let r = result(&mut svc, "tools/call", json!({"name": "fs_list_dir"})).await;
    assert_eq!(
        r,
        json!({"content": [{"type": "text", "text": "key [REDACTED]"}],
               "structuredContent": {"keys": ["[REDACTED]"], "n": 1}, "isError": false})
    );
    let r = result(&mut svc, "resources/read", json!({"uri": "f://a"})).await;
    assert_eq!(r["contents"][0]["text"], "[REDACTED]");
    // Results that carry no content are not this layer's to change.
    let r = result(&mut svc, "ping", json!({})).await;
    assert_eq!(r["echo"], KEY);
    match send(
        &mut svc,
        Direction::ToServer,
        Message::request(2, "fail", None),
    )
    .await
    {
        Some(Message::Error(e)) => assert_eq!(e.error.message, "bad key [REDACTED]"),
        other => panic!("expected an error, got {other:?}"),
    }
    let log = Message::notification(
        "notifications/message",
        Some(json!({"level": "info", "data": {"msg": format!("using {KEY}")}})),
    );
    let (mut svc, client_saw) = rewrite(config());
    assert_eq!(send(&mut svc, Direction::ToClient, log).await, None);
    assert_eq!(last_params(&client_saw)["data"]["msg"], "using [REDACTED]");
}

#[tokio::test]
async fn arguments_are_redacted_going_out_only_when_configured() {
    let args = json!({"name": "fs_list_dir", "arguments": {"token": format!("t {KEY}")}});
    let (mut svc, seen) = rewrite(config());
    result(&mut svc, "tools/call", args.clone()).await;
    assert_eq!(last_params(&seen)["arguments"]["token"], format!("t {KEY}"));
    let mut cfg = config();
    cfg.redact_arguments = true;
    let (mut svc, seen) = rewrite(cfg);
    result(&mut svc, "tools/call", args).await;
    assert_eq!(last_params(&seen)["arguments"]["token"], "t [REDACTED]");
}

#[tokio::test]
async fn an_upstream_tool_whose_name_a_rename_took_is_hidden() {
    let mut cfg = RewriteConfig::default();
    cfg.tools.insert("read_file".into(), item(Some("list_dir")));
    let (mut svc, seen) = rewrite(cfg);
    let r = result(&mut svc, "tools/list", json!({})).await;
    let names: Vec<&str> = r["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["list_dir"]);
    assert_eq!(r["tools"][0]["description"], "Reads");
    result(&mut svc, "tools/call", json!({"name": "list_dir"})).await;
    assert_eq!(last_params(&seen)["name"], "read_file");
}

#[tokio::test]
async fn an_empty_config_changes_nothing() {
    let (mut svc, seen) = rewrite(RewriteConfig::default());
    let call = json!({"name": "read_file", "arguments": null, "odd": [1]});
    let r = result(&mut svc, "tools/call", call.clone()).await;
    assert_eq!(r, server_result("tools/call"));
    assert_eq!(last_params(&seen), call);
    let r = result(&mut svc, "tools/list", json!({})).await;
    assert_eq!(r, server_result("tools/list"));
}

fn load_error(cfg: RewriteConfig) -> String {
    cfg.validate()
        .expect_err("config must be refused")
        .to_string()
}

#[test]
fn bad_names_are_refused_at_load_time_naming_the_key() {
    let mut cfg = RewriteConfig::default();
    cfg.tools.insert("a".into(), item(Some("same")));
    cfg.tools.insert("b".into(), item(Some("same")));
    let err = load_error(cfg);
    assert!(
        err.starts_with("tools.b: ") && err.contains("\"same\""),
        "{err}"
    );

    let mut cfg = RewriteConfig::default();
    cfg.tools.insert("a".into(), item(Some(&"x".repeat(65))));
    assert!(load_error(cfg).starts_with("tools.a.name: "));

    let mut cfg = RewriteConfig::default();
    cfg.tools.insert("a".into(), item(Some("has space")));
    assert!(load_error(cfg).contains("' '"));

    let mut cfg = RewriteConfig {
        tool_prefix: "p_".into(),
        ..RewriteConfig::default()
    };
    cfg.tools.insert("x".repeat(63), item(None));
    assert!(load_error(cfg).contains("tool_prefix"));

    let mut cfg = RewriteConfig {
        tool_prefix: "fs_".into(),
        ..RewriteConfig::default()
    };
    // The rename takes the name the prefix gives another configured tool.
    cfg.tools.insert("a".into(), item(Some("fs_b")));
    cfg.tools.insert("b".into(), item(None));
    assert!(load_error(cfg).contains("\"fs_b\""));

    let cfg = RewriteConfig {
        tool_prefix: "fs/".into(),
        ..RewriteConfig::default()
    };
    assert!(load_error(cfg).starts_with("tool_prefix: "));
}

#[test]
fn other_load_errors_name_their_key() {
    let mut cfg = config();
    cfg.redact[1].pattern = "@nope".into();
    assert!(load_error(cfg).starts_with("redact[1].pattern: "));
    let mut cfg = config();
    cfg.redact[0].pattern = "(".into();
    assert!(load_error(cfg).starts_with("redact[0].pattern: "));
    let mut cfg = config();
    if let Some(p) = cfg.prompts.get_mut("summarize") {
        p.arguments.insert("n".into(), json!(1));
    }
    assert!(load_error(cfg).starts_with("prompts.summarize.arguments.n: "));
    let mut cfg = config();
    if let Some(t) = cfg.tools.get_mut("read_file") {
        t.defaults.insert("encoding".into(), json!("x"));
    }
    assert!(load_error(cfg).starts_with("tools.read_file.defaults.encoding: "));
    let cfg = RewriteConfig {
        redact_arguments: true,
        ..RewriteConfig::default()
    };
    assert!(load_error(cfg).starts_with("redact_arguments: "));
}

// === fail closed ===

fn refusal_of(answer: Option<Message>) -> (i64, Value) {
    match answer {
        Some(Message::Error(e)) => (e.error.code.0, e.error.data.unwrap_or(Value::Null)),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

/// A call this layer must map back (it renames) but whose name it cannot
/// read is refused, not passed under a name it never judged.
#[tokio::test]
async fn a_call_whose_name_cannot_be_read_is_refused() {
    let (mut svc, seen) = rewrite(config());
    for (method, params) in [
        ("tools/call", Some(json!({"name": 5}))),
        ("tools/call", Some(json!({"arguments": {}}))),
        ("tools/call", None),
        ("prompts/get", Some(json!(["p_summarize"]))),
        (
            "completion/complete",
            Some(json!({"ref": {"type": "ref/prompt", "name": 1}})),
        ),
        ("completion/complete", Some(json!({"ref": 1}))),
    ] {
        let msg = Message::request(1, method, params);
        let (code, data) = refusal_of(send(&mut svc, Direction::ToServer, msg).await);
        assert_eq!(code, -32602, "{method}");
        assert_eq!(
            (data["layer"].as_str(), data["reason"].as_str()),
            (Some("rewrite"), Some("unreadable"))
        );
    }
    assert!(seen.lock().expect("not poisoned").is_empty());
}

/// A line from the server, as the relay would hand it over.
fn received(line: &str) -> Message {
    match crate::message::Incoming::parse(line.as_bytes()) {
        Ok(crate::message::Incoming::Single(Ok(msg))) => msg,
        other => panic!("{line}: {other:?}"),
    }
}

/// A result this layer must redact but cannot read (serde_json passes
/// over 1e999 but will not read it) does not reach the client unredacted.
#[tokio::test]
async fn a_result_that_cannot_be_redacted_becomes_an_error() {
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{KEY}"}}],"n":1e999}}}}"#
    );
    let peer = tower::service_fn(move |_: Envelope| -> ResponseFuture {
        let answer = received(&line);
        Box::pin(async move { Ok(Some(answer)) })
    });
    let mut svc = config()
        .validate()
        .expect("valid config")
        .layer(BoxCloneService::new(peer));
    let call = Message::request(1, "tools/call", Some(json!({"name": "fs_list_dir"})));
    let answer = send(&mut svc, Direction::ToServer, call).await;
    let (code, data) = refusal_of(answer);
    assert_eq!(
        (code, data["reason"].as_str()),
        (-32602, Some("unreadable"))
    );
}

#[tokio::test]
async fn a_log_message_that_cannot_be_redacted_is_dropped() {
    let (mut svc, seen) = rewrite(config());
    let line = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"{KEY}","n":1e999}}}}"#
    );
    assert!(send(&mut svc, Direction::ToClient, received(&line))
        .await
        .is_none());
    assert!(seen.lock().expect("not poisoned").is_empty());
}

mod spared;
mod tasks;
