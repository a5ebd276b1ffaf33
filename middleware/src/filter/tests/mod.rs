use super::*;
use crate::config_error::keys;
use crate::pattern::AllowDenyConfig;
use crate::{BoxError, Direction, Envelope, Message, ResponseFuture};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tower::{Layer, Service, ServiceExt};

type Seen = Arc<Mutex<Vec<Message>>>;

fn list(allow: Option<&[&str]>, deny: &[&str]) -> AllowDenyConfig {
    AllowDenyConfig {
        allow: allow.map(|a| a.iter().map(|s| s.to_string()).collect()),
        deny: deny.iter().map(|s| s.to_string()).collect(),
    }
}

/// The issue's example policy.
fn config() -> FilterConfig {
    FilterConfig {
        tools: list(Some(&["read_*", "list_*"]), &["*secret*"]),
        resources: list(None, &["file:///etc/**"]),
        resource_templates: list(None, &["db://*"]),
        prompts: list(None, &["secret_*"]),
        methods: list(None, &["sampling/createMessage", "notifications/message"]),
    }
}

/// A filter in front of a fake peer that records what reached it (in
/// `call`, before any await) and answers requests with `result(method)`.
fn filter(
    result: fn(&str) -> Value,
) -> (
    Filter<
        impl Service<Envelope, Response = Option<Message>, Error = BoxError, Future = ResponseFuture>
            + Clone,
    >,
    Seen,
) {
    filter_with(config(), result)
}

/// [`filter`] with a policy of the test's own.
fn filter_with(
    config: FilterConfig,
    result: fn(&str) -> Value,
) -> (
    Filter<
        impl Service<Envelope, Response = Option<Message>, Error = BoxError, Future = ResponseFuture>
            + Clone,
    >,
    Seen,
) {
    let seen = Seen::default();
    let record = seen.clone();
    let peer = tower::service_fn(move |env: Envelope| -> ResponseFuture {
        record
            .lock()
            .expect("not poisoned")
            .push(env.message.clone());
        let answer = match &env.message {
            Message::Request(r) => Some(Message::response(r.id.clone(), result(&r.method))),
            _ => None,
        };
        Box::pin(async move { Ok(answer) })
    });
    let layer = config.validate().expect("valid config");
    (layer.layer(peer), seen)
}

fn empty(_: &str) -> Value {
    json!({})
}

async fn send<S>(svc: &mut S, direction: Direction, msg: Message) -> Option<Message>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
{
    svc.ready()
        .await
        .expect("ready")
        .call(Envelope::new(direction, msg))
        .await
        .expect("no failure")
}

fn error_of(answer: Option<Message>) -> (i64, String, Value) {
    match answer {
        Some(Message::Error(e)) => (
            e.error.code.0,
            e.error.message,
            e.error.data.unwrap_or(Value::Null),
        ),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

fn result_of(answer: Option<Message>) -> Value {
    match answer {
        Some(Message::Response(r)) => r.result.into_value().expect("readable"),
        other => panic!("expected a result, got {other:?}"),
    }
}

fn tools_page(_: &str) -> Value {
    json!({"tools": [
        {"name": "read_file", "inputSchema": {}},
        {"name": "read_secret", "inputSchema": {}},
        {"name": "write_file", "inputSchema": {}},
        {"name": "list_dir", "annotations": {"readOnlyHint": true}},
    ], "nextCursor": "page-2", "_meta": {"k": 1}})
}

#[tokio::test]
async fn hidden_tools_vanish_from_each_page_which_keeps_its_cursor() {
    let (mut svc, _) = filter(tools_page);
    let req = Message::request(1, "tools/list", Some(json!({"cursor": "page-1"})));
    let result = result_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!(
        result,
        json!({"tools": [
            {"name": "read_file", "inputSchema": {}},
            {"name": "list_dir", "annotations": {"readOnlyHint": true}},
        ], "nextCursor": "page-2", "_meta": {"k": 1}})
    );
}

fn discover(_: &str) -> Value {
    json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
        "tools": [{"name": "read_a"}, {"name": "rm_rf"}],
        "resources": [{"uri": "file:///etc/passwd"}, {"uri": "file:///srv/a"}],
        "resourceTemplates": [{"uriTemplate": "db://{table}"}, {"uriTemplate": "file:///srv/{p}"}],
        "prompts": [{"name": "secret_plan"}, {"name": "greet"}]})
}

#[tokio::test]
async fn server_discover_is_pruned_like_every_list() {
    let (mut svc, _) = filter(discover);
    let req = Message::request(1, "server/discover", None);
    let result = result_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!(result["tools"], json!([{"name": "read_a"}]));
    assert_eq!(result["resources"], json!([{"uri": "file:///srv/a"}]));
    assert_eq!(
        result["resourceTemplates"],
        json!([{"uriTemplate": "file:///srv/{p}"}])
    );
    assert_eq!(result["prompts"], json!([{"name": "greet"}]));
    assert_eq!(result["capabilities"], json!({"tools": {}}));
}

fn resource_lists(method: &str) -> Value {
    match method {
        "resources/list" => json!({"resources": [
            {"uri": "file:///etc/passwd"}, {"uri": "file:///etc/ssl/key.pem"}, {"uri": "file:///srv/x"}]}),
        "resources/templates/list" => json!({"resourceTemplates": [
            {"uriTemplate": "file:///etc/{name}"}, {"uriTemplate": "db://{t}"},
            {"uriTemplate": "file:///srv/{name}"}]}),
        _ => json!({"prompts": [{"name": "secret_x"}, {"name": "greet"}], "nextCursor": "c"}),
    }
}

#[tokio::test]
async fn resources_templates_and_prompts_lists_are_pruned() {
    let (mut svc, _) = filter(resource_lists);
    let r = Message::request(1, "resources/list", None);
    let r = result_of(send(&mut svc, Direction::ToServer, r).await);
    assert_eq!(r, json!({"resources": [{"uri": "file:///srv/x"}]}));
    let t = Message::request(2, "resources/templates/list", None);
    let t = result_of(send(&mut svc, Direction::ToServer, t).await);
    assert_eq!(
        t,
        json!({"resourceTemplates": [{"uriTemplate": "file:///srv/{name}"}]})
    );
    let p = Message::request(3, "prompts/list", None);
    let p = result_of(send(&mut svc, Direction::ToServer, p).await);
    assert_eq!(
        p,
        json!({"prompts": [{"name": "greet"}], "nextCursor": "c"})
    );
}

#[tokio::test]
async fn denied_call_looks_like_an_unknown_tool_and_never_reaches_the_server() {
    let (mut svc, seen) = filter(empty);
    for name in ["read_secret", "write_file"] {
        let call = Message::request("c", "tools/call", Some(json!({"name": name})));
        let answer = send(&mut svc, Direction::ToServer, call).await;
        assert_eq!(answer.as_ref().and_then(Message::id), Some(&"c".into()));
        let (code, message, data) = error_of(answer);
        assert_eq!(code, -32602);
        assert_eq!(message, format!("Unknown tool: {name}"));
        assert_eq!(data, json!({"layer": "filter", "reason": "denied"}));
    }
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn every_way_to_a_hidden_resource_is_closed() {
    let (mut svc, seen) = filter(empty);
    for method in [
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let uri = "file:///etc/ssl/private/key.pem";
        let req = Message::request(7, method, Some(json!({"uri": uri})));
        let (code, message, data) = error_of(send(&mut svc, Direction::ToServer, req).await);
        assert_eq!(code, -32002, "{method}");
        assert_eq!(message, format!("Resource not found: {uri}"));
        assert_eq!(
            data,
            json!({"layer": "filter", "reason": "denied", "uri": uri})
        );
    }
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn hidden_prompts_and_templates_cannot_be_got_or_completed() {
    let (mut svc, seen) = filter(empty);
    let get = Message::request(1, "prompts/get", Some(json!({"name": "secret_plan"})));
    let (code, message, _) = error_of(send(&mut svc, Direction::ToServer, get).await);
    assert_eq!(
        (code, message.as_str()),
        (-32602, "Unknown prompt: secret_plan")
    );
    let complete = json!({"ref": {"type": "ref/prompt", "name": "secret_plan"},
        "argument": {"name": "a", "value": "x"}});
    let req = Message::request(2, "completion/complete", Some(complete));
    let (code, _, _) = error_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!(code, -32602);
    completions_are_refused(&mut svc, &["db://{table}", "file:///etc/{name}"]).await;
    assert!(seen.lock().expect("not poisoned").is_empty());
}

/// `completion/complete` for each template URI is answered -32602.
async fn completions_are_refused<S>(svc: &mut S, uris: &[&str])
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
{
    for uri in uris {
        let complete = json!({"ref": {"type": "ref/resource", "uri": uri},
            "argument": {"name": "t", "value": ""}});
        let req = Message::request(3, "completion/complete", Some(complete));
        let (code, _, _) = error_of(send(svc, Direction::ToServer, req).await);
        assert_eq!(code, -32602, "{uri}");
    }
}

#[tokio::test]
async fn allowed_requests_reach_the_server_in_call_unchanged() {
    let (mut svc, seen) = filter(empty);
    let call = Message::request(
        1,
        "tools/call",
        Some(json!({"name": "read_file", "arguments": {"p": 1}, "_meta": {"progressToken": 3}})),
    );
    svc.ready().await.expect("ready");
    // Forwarded inside `call`, before the future is polled: order holds.
    let fut = svc.call(Envelope::new(Direction::ToServer, call.clone()));
    assert_eq!(*seen.lock().expect("not poisoned"), vec![call]);
    assert_eq!(result_of(fut.await.expect("answered")), json!({}));
}

#[tokio::test]
async fn denied_method_is_method_not_found_and_notification_is_dropped() {
    let (mut svc, seen) = filter(empty);
    let req = Message::request(9, "sampling/createMessage", Some(json!({})));
    let (code, message, data) = error_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!(code, -32601);
    assert_eq!(message, "Method not found: sampling/createMessage");
    assert_eq!(data["layer"], "filter");
    let note = Message::notification("notifications/message", Some(json!({"level": "info"})));
    assert_eq!(send(&mut svc, Direction::ToServer, note).await, None);
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn denied_server_request_is_answered_to_the_server_and_never_reaches_the_client() {
    let (mut svc, client_saw) = filter(empty);
    let sampling = Message::request(
        "s1",
        "sampling/createMessage",
        Some(json!({"messages": [], "maxTokens": 10})),
    );
    let answer = send(&mut svc, Direction::ToClient, sampling).await;
    assert_eq!(answer.as_ref().and_then(Message::id), Some(&"s1".into()));
    assert_eq!(error_of(answer).0, -32601);
    let log = Message::notification("notifications/message", Some(json!({"data": "x"})));
    assert_eq!(send(&mut svc, Direction::ToClient, log).await, None);
    let updated = Message::notification(
        "notifications/resources/updated",
        Some(json!({"uri": "file:///etc/passwd"})),
    );
    assert_eq!(send(&mut svc, Direction::ToClient, updated).await, None);
    assert!(client_saw.lock().expect("not poisoned").is_empty());
    let roots = Message::request("s2", "roots/list", None);
    assert_eq!(
        result_of(send(&mut svc, Direction::ToClient, roots).await),
        json!({})
    );
    let fine = Message::notification(
        "notifications/resources/updated",
        Some(json!({"uri": "file:///srv/a"})),
    );
    assert_eq!(
        send(&mut svc, Direction::ToClient, fine.clone()).await,
        None
    );
    assert_eq!(client_saw.lock().expect("not poisoned").len(), 2);
}

#[tokio::test]
async fn error_answers_from_the_server_pass_through() {
    let peer = tower::service_fn(|env: Envelope| async move {
        let id = env.message.id().cloned();
        let err = crate::ErrorObject::new(crate::ErrorCode(-32000), "boom");
        Ok::<_, BoxError>(Some(Message::error(id, err)))
    });
    let mut svc = config().validate().expect("valid").layer(peer);
    let req = Message::request(1, "tools/list", None);
    let (code, message, _) = error_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!((code, message.as_str()), (-32000, "boom"));
}

#[tokio::test]
async fn an_empty_config_changes_nothing() {
    let layer = FilterConfig::default().validate().expect("valid");
    let mut svc = layer.layer(tower::service_fn(|env: Envelope| async move {
        let id = env.message.id().cloned().expect("a request");
        Ok::<_, BoxError>(Some(Message::response(id, discover(""))))
    }));
    for method in ["tools/list", "server/discover", "sampling/createMessage"] {
        let req = Message::request(1, method, None);
        let answer = result_of(send(&mut svc, Direction::ToServer, req).await);
        assert_eq!(answer, discover(""), "{method}");
    }
}

#[test]
fn bad_patterns_are_errors_naming_their_key() {
    let mut cfg = config();
    cfg.tools = list(Some(&["ok", "[oops"]), &[]);
    let err = cfg.validate().expect_err("bad glob");
    assert_eq!(err.at, keys!["tools", "allow", 1], "{err}");
    let mut cfg = config();
    cfg.resources = list(None, &["re:("]);
    let err = cfg.validate().expect_err("bad regex");
    assert_eq!(err.at, keys!["resources", "deny", 0], "{err}");
}

// === fail closed ===

/// A request the filter must judge but cannot read is refused with
/// -32602 naming the layer; the server never sees it.
#[tokio::test]
async fn a_request_whose_item_cannot_be_read_is_refused_not_passed() {
    let (mut svc, seen) = filter(empty);
    let cases = [
        ("tools/call", Some(json!({"name": 5}))),
        ("tools/call", Some(json!({"name": null}))),
        (
            "tools/call",
            Some(json!({"arguments": {"path": "/etc/passwd"}})),
        ),
        ("tools/call", Some(json!(["read_file"]))),
        ("tools/call", None),
        (
            "resources/read",
            Some(json!({"uri": ["file:///etc/passwd"]})),
        ),
        ("prompts/get", Some(json!({}))),
        ("completion/complete", Some(json!({"ref": "secret_x"}))),
        (
            "completion/complete",
            Some(json!({"ref": {"type": "ref/prompt"}})),
        ),
    ];
    for (method, params) in cases {
        let answer = send(
            &mut svc,
            Direction::ToServer,
            Message::request(1, method, params),
        )
        .await;
        let (code, message, data) = error_of(answer);
        assert_eq!(code, -32602, "{method}: {message}");
        assert!(message.starts_with("mcp-chain filter:"), "{message}");
        assert_eq!(data["layer"], "filter");
        assert_eq!(data["reason"], "unreadable");
    }
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn the_last_of_duplicate_names_is_the_one_judged() {
    let (mut svc, seen) = filter(empty);
    let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","na\u006de":"read_secret"}}"#;
    let Ok(crate::message::Incoming::Single(Ok(msg))) = crate::message::Incoming::parse(line)
    else {
        panic!("a request");
    };
    let (code, message, _) = error_of(send(&mut svc, Direction::ToServer, msg).await);
    assert_eq!(
        (code, message.as_str()),
        (-32602, "Unknown tool: read_secret")
    );
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn a_resource_update_whose_uri_cannot_be_read_is_dropped() {
    let (mut svc, seen) = filter(empty);
    let note = Message::notification("notifications/resources/updated", Some(json!({"uri": 7})));
    assert!(send(&mut svc, Direction::ToClient, note).await.is_none());
    assert!(seen.lock().expect("not poisoned").is_empty());
}

fn odd_tools(_: &str) -> Value {
    json!({"tools": [
        {"name": "read_a"}, {"name": 5}, {"title": "no name"}, "read_b", ["read_c"],
        {"name": "list_d"},
    ]})
}

#[tokio::test]
async fn listed_items_that_cannot_be_judged_are_dropped_under_an_allow_list() {
    let (mut svc, _) = filter(odd_tools);
    let list = Message::request(1, "tools/list", None);
    let result = result_of(send(&mut svc, Direction::ToServer, list).await);
    assert_eq!(
        result,
        json!({"tools": [{"name": "read_a"}, {"name": "list_d"}]})
    );
}

fn not_a_list(_: &str) -> Value {
    json!({"tools": {"name": "read_secret"}})
}

fn not_an_object(_: &str) -> Value {
    json!([{"name": "read_secret"}])
}

/// A list result the filter cannot read never reaches the client as it is.
#[tokio::test]
async fn a_list_result_that_cannot_be_read_becomes_an_error() {
    for result in [not_a_list as fn(&str) -> Value, not_an_object] {
        let (mut svc, _) = filter(result);
        let list = Message::request(1, "tools/list", None);
        let (code, message, data) = error_of(send(&mut svc, Direction::ToServer, list).await);
        assert_eq!(code, -32603, "{message}");
        assert_eq!(data["reason"], "unreadable");
        assert!(message.starts_with("mcp-chain filter:"), "{message}");
    }
}

mod inputs;
mod uris;
