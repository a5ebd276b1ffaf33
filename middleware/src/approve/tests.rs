use super::*;
use crate::message::method;
use crate::testing::send;
use crate::{BoxError, Direction, Envelope, Message};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tower::{service_fn, Layer, Service, ServiceExt};

fn layer(config: Value) -> ApproveLayer {
    serde_json::from_value::<ApproveConfig>(config)
        .expect("parses")
        .validate()
        .expect("valid")
}

/// A server that records what it was sent and answers each call with
/// `answer(params)`.
#[derive(Clone, Default)]
struct Server(Arc<Mutex<Vec<Value>>>);

impl Server {
    fn service(
        &self,
        answer: fn(&Value) -> Value,
    ) -> impl Service<Envelope, Response = Option<Message>, Error = BoxError, Future = impl Send>
           + Clone
           + Send
           + 'static {
        let seen = self.0.clone();
        service_fn(move |env: Envelope| {
            let seen = seen.clone();
            async move {
                let Message::Request(req) = env.message else {
                    return Ok::<_, BoxError>(None);
                };
                let params = req
                    .params
                    .map(|p| p.to_value().expect("JSON"))
                    .unwrap_or_default();
                let result = answer(&params);
                if req.method == method::TOOLS_CALL {
                    seen.lock().expect("lock").push(params);
                }
                Ok(Some(Message::response(req.id, result)))
            }
        })
    }

    fn calls(&self) -> Vec<Value> {
        self.0.lock().expect("lock").clone()
    }
}

fn done(_: &Value) -> Value {
    json!({"content": [{"type": "text", "text": "done"}]})
}

/// A client that answers each question with `answer`, and records them.
fn client(
    answer: Option<Value>,
) -> (
    impl Service<Envelope, Response = Option<Message>, Error = BoxError, Future = impl Send>
        + Clone
        + Send
        + 'static,
    Arc<Mutex<Vec<Value>>>,
) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let service = service_fn(move |env: Envelope| {
        let seen = seen.clone();
        let answer = answer.clone();
        async move {
            seen.lock().expect("lock").push(env.message.to_value());
            let Message::Request(req) = env.message else {
                return Ok::<_, BoxError>(None);
            };
            match answer {
                Some(result) => Ok(Some(Message::response(req.id, result))),
                // Never answers: the user walked away.
                None => std::future::pending().await,
            }
        }
    });
    (service, asked)
}

fn initialize(elicitation: Option<Value>) -> Message {
    let mut capabilities = json!({});
    if let Some(e) = elicitation {
        capabilities["elicitation"] = e;
    }
    Message::request(
        0,
        method::INITIALIZE,
        Some(json!({"protocolVersion": "2025-11-25", "capabilities": capabilities})),
    )
}

fn tool_call(id: u64, name: &str) -> Message {
    let params =
        json!({"name": name, "arguments": {"path": "/etc/hosts", "text": "x".repeat(300)}});
    Message::request(id, method::TOOLS_CALL, Some(params))
}

fn accept(decision: &str) -> Value {
    json!({"action": "accept", "content": {"decision": decision}})
}

#[tokio::test]
async fn the_user_allows_once_and_the_call_goes_on() {
    let layer = layer(json!({"tools": ["write_*"]}));
    let (to_client, asked) = client(Some(accept("allow_once")));
    let _ = layer.toward_client(to_client);
    let server = Server::default();
    let mut svc = layer.layer(server.service(done));
    send(&mut svc, initialize(Some(json!({})))).await;
    let out = send(&mut svc, tool_call(1, "write_file")).await;
    assert_eq!(out["result"]["content"][0]["text"], "done");
    assert_eq!(server.calls().len(), 1);
    let asked = asked.lock().expect("lock").clone();
    assert_eq!(asked.len(), 1);
    let question = &asked[0];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["mode"], "form");
    let message = question["params"]["message"].as_str().expect("message");
    assert!(
        message.contains("\"write_file\"") && message.contains("\"path\" = \"/etc/hosts\""),
        "{message}"
    );
    assert!(
        message.contains("(302 characters)"),
        "a long value is cut: {message}"
    );
    let choices = &question["params"]["requestedSchema"]["properties"]["decision"]["oneOf"];
    assert_eq!(
        choices.as_array().map(Vec::len),
        Some(2),
        "once or deny: {choices}"
    );
    // A tool no pattern names is not asked about.
    send(&mut svc, tool_call(2, "read_file")).await;
    assert_eq!(server.calls().len(), 2);
}

#[tokio::test]
async fn decline_cancel_and_deny_refuse_and_the_server_sees_nothing() {
    for (answer, reason) in [
        (json!({"action": "decline"}), "declined"),
        (json!({"action": "cancel"}), "cancelled"),
        (accept("deny"), "denied"),
        (accept("allow_session"), "unreadable"), // not offered under "once"
        (json!({"action": "accept"}), "unreadable"),
    ] {
        let layer = layer(json!({"tools": ["*"]}));
        let (to_client, _) = client(Some(answer));
        let _ = layer.toward_client(to_client);
        let server = Server::default();
        let mut svc = layer.layer(server.service(done));
        send(&mut svc, initialize(Some(json!({"form": {}})))).await;
        let out = send(&mut svc, tool_call(1, "write_file")).await;
        assert_eq!(out["error"]["code"], 403, "{out}");
        assert_eq!(out["error"]["data"]["layer"], "approve");
        assert_eq!(out["error"]["data"]["reason"], reason);
        assert!(server.calls().is_empty(), "{reason}");
    }
}

#[tokio::test]
async fn allowed_for_the_session_is_not_asked_again() {
    let layer = layer(json!({"tools": ["write_*"], "remember": "session"}));
    let (to_client, asked) = client(Some(accept("allow_session")));
    let _ = layer.toward_client(to_client);
    let server = Server::default();
    let mut svc = layer.layer(server.service(done));
    send(
        &mut svc,
        Message::request(
            0,
            method::INITIALIZE,
            Some(json!({
        "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}}})),
        ),
    )
    .await;
    send(&mut svc, tool_call(1, "write_file")).await;
    send(&mut svc, tool_call(2, "write_file")).await;
    assert_eq!(server.calls().len(), 2);
    let asked = asked.lock().expect("lock").clone();
    assert_eq!(asked.len(), 1, "asked once");
    let decision = &asked[0]["params"]["requestedSchema"]["properties"]["decision"];
    assert_eq!(
        decision["enum"],
        json!(["allow_once", "allow_session", "deny"]),
        "2025-06-18 reads enum"
    );
    assert_eq!(decision["enumNames"][1], "Allow for this session");
    // Another session of the HTTP front asks again.
    let other = layer.for_session(None);
    let (to_client, asked_again) = client(Some(accept("allow_once")));
    let _ = other.toward_client(to_client);
    let mut svc = other.layer(server.service(done));
    send(&mut svc, initialize(Some(json!({})))).await;
    send(&mut svc, tool_call(3, "write_file")).await;
    assert_eq!(asked_again.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn a_client_that_cannot_ask_is_refused_unless_fallback_allows() {
    for (fallback, elicitation, passes) in [
        ("refuse", None, false),
        ("refuse", Some(json!({"url": {}})), false), // URL mode only
        ("allow", None, true),
    ] {
        let layer = layer(json!({"tools": ["*"], "fallback": fallback}));
        let (to_client, asked) = client(Some(accept("allow_once")));
        let _ = layer.toward_client(to_client);
        let server = Server::default();
        let mut svc = layer.layer(server.service(done));
        send(&mut svc, initialize(elicitation)).await;
        let out = send(&mut svc, tool_call(1, "write_file")).await;
        assert_eq!(out.get("result").is_some(), passes, "{fallback}: {out}");
        if !passes {
            assert_eq!(out["error"]["data"]["reason"], "no_elicitation");
            let message = out["error"]["message"].as_str().expect("message");
            assert!(message.contains("elicitation"), "{message}");
        }
        assert!(asked.lock().expect("lock").is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn no_answer_in_time_is_a_refusal_and_the_question_is_cancelled() {
    let layer = layer(json!({"tools": ["*"], "timeout": "30s"}));
    let (to_client, asked) = client(None);
    let _ = layer.toward_client(to_client);
    let server = Server::default();
    let mut svc = layer.layer(server.service(done));
    send(&mut svc, initialize(Some(json!({})))).await;
    let out = send(&mut svc, tool_call(1, "write_file")).await;
    assert_eq!(out["error"]["data"]["reason"], "timeout", "{out}");
    tokio::task::yield_now().await;
    let asked = asked.lock().expect("lock").clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[1]["method"], "notifications/cancelled");
    assert_eq!(asked[1]["params"]["requestId"], asked[0]["id"]);
    assert!(server.calls().is_empty());
}

fn modern_call(id: u64, extra: Value) -> Message {
    let mut params = json!({
        "name": "write_file",
        "arguments": {"path": "/tmp/x"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
    });
    if let (Some(p), Value::Object(extra)) = (params.as_object_mut(), extra) {
        p.extend(extra);
    }
    Message::request(id, method::TOOLS_CALL, Some(params))
}

/// The server asks for input of its own the first time (with its own
/// state), and answers once it has it.
fn asks_first(params: &Value) -> Value {
    if params.get("requestState").and_then(Value::as_str) == Some("server-state") {
        json!({"content": [{"type": "text", "text": "done"}]})
    } else {
        json!({"resultType": "input_required", "requestState": "server-state",
               "inputRequests": {"q": {"method": "roots/list"}}})
    }
}

#[tokio::test]
async fn a_2026_client_is_asked_with_input_required_and_its_retry_carries_the_answer() {
    let layer = layer(json!({"tools": ["write_*"]}));
    let server = Server::default();
    let mut svc = layer.layer(server.service(asks_first));
    let first = send(&mut svc, modern_call(1, json!({}))).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let question = &result["inputRequests"]["mcp-chain-approve"];
    assert_eq!(question["method"], "elicitation/create");
    let state = result["requestState"].as_str().expect("a state").to_owned();
    assert!(server.calls().is_empty());

    // Forged, altered or moved states are refused.
    let forged = send(
        &mut svc,
        modern_call(
            2,
            json!({"requestState": "mcp-chain-approve.1.1.99999999999.00"}),
        ),
    )
    .await;
    assert_eq!(forged["error"]["data"]["reason"], "altered", "{forged}");
    let flipped = state.replacen("mcp-chain-approve.1.0.", "mcp-chain-approve.1.1.", 1);
    let out = send(&mut svc, modern_call(3, json!({"requestState": flipped}))).await;
    assert_eq!(out["error"]["data"]["reason"], "altered");
    let moved = Message::request(
        4,
        method::TOOLS_CALL,
        Some(json!({
        "name": "write_file", "arguments": {"path": "/etc/shadow"}, "requestState": state,
        "inputResponses": {"mcp-chain-approve": accept("allow_once")},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})),
    );
    assert_eq!(
        send(&mut svc, moved).await["error"]["data"]["reason"],
        "altered"
    );
    // A retry without the answer is asked again; a declined one refused.
    let again = send(&mut svc, modern_call(5, json!({"requestState": state}))).await;
    assert_eq!(again["result"]["resultType"], "input_required");
    let declined = send(
        &mut svc,
        modern_call(
            6,
            json!({"requestState": state,
        "inputResponses": {"mcp-chain-approve": {"action": "decline"}}}),
        ),
    )
    .await;
    assert_eq!(declined["error"]["data"]["reason"], "declined");
    assert!(server.calls().is_empty());

    // Allowed: the server gets the call without mcp-chain's answer or state.
    let allowed = send(
        &mut svc,
        modern_call(
            7,
            json!({"requestState": state,
        "inputResponses": {"mcp-chain-approve": accept("allow_once"), "other": {"x": 1}}}),
        ),
    )
    .await;
    let calls = server.calls();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].get("requestState").is_none(), "{}", calls[0]);
    assert_eq!(calls[0]["inputResponses"], json!({"other": {"x": 1}}));
    // The server's own input_required: its state rides in a sealed one.
    let wrapped = allowed["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_owned();
    assert!(
        wrapped.starts_with("mcp-chain-approve.1.1.") && wrapped.ends_with(".server-state"),
        "{wrapped}"
    );
    let done = send(
        &mut svc,
        modern_call(
            8,
            json!({"requestState": wrapped,
        "inputResponses": {"q": {"roots": []}}}),
        ),
    )
    .await;
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    let calls = server.calls();
    assert_eq!(calls[1]["requestState"], "server-state", "handed back");
}

#[tokio::test]
async fn a_2026_client_without_elicitation_is_refused() {
    let layer = layer(json!({"tools": ["*"]}));
    let server = Server::default();
    let mut svc = layer.layer(server.service(done));
    let call = Message::request(
        1,
        method::TOOLS_CALL,
        Some(json!({"name": "t",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}})),
    );
    let out = send(&mut svc, call).await;
    assert_eq!(out["error"]["data"]["reason"], "no_elicitation");
}

#[test]
fn settings_are_checked() {
    let bad = |config: Value| {
        serde_json::from_value::<ApproveConfig>(config)
            .map_err(|e| e.to_string())
            .and_then(|c| c.validate().map(|_| ()).map_err(|e| e.to_string()))
            .expect_err("refused")
    };
    assert!(bad(json!({"tools": []})).contains("tools"));
    assert!(bad(json!({"tools": ["["]})).contains("tools[0]"));
    assert!(bad(json!({"tools": ["*"], "remember": "forever"})).contains("remember"));
    assert!(bad(json!({"tools": ["*"], "fallback": "maybe"})).contains("fallback"));
    assert!(bad(json!({"tools": ["*"], "timeout": "0s"})).contains("timeout"));
}

/// Every decision, made at once or after asking, reaches the audit's
/// notes (which are collected inside the answer's future).
#[tokio::test]
async fn each_decision_is_noted_for_the_audit() {
    async fn noted(
        svc: impl Service<Envelope, Response = Option<Message>, Error = BoxError>,
        call: Message,
    ) -> Value {
        let env = Envelope::new(Direction::ToServer, call);
        let (_, notes) = crate::note::collect(svc.oneshot(env)).await;
        notes.expect("noted")["approve"]["decision"].clone()
    }
    let fallback = layer(json!({"tools": ["*"], "fallback": "allow"}));
    let server = Server::default();
    let mut svc = fallback.layer(server.service(done));
    send(&mut svc, initialize(None)).await;
    assert_eq!(noted(svc, tool_call(1, "t")).await, "fallback_allowed");
    let refusing = layer(json!({"tools": ["*"]}));
    let mut svc = refusing.layer(server.service(done));
    send(&mut svc, initialize(None)).await;
    assert_eq!(
        noted(svc.clone(), tool_call(2, "t")).await,
        "no_elicitation"
    );
    assert_eq!(noted(svc, modern_call(3, json!({}))).await, "asked");
}

/// A call given up while its question is open (the client cancelled it,
/// a timeout outside gave up) withdraws the question.
#[tokio::test]
async fn a_call_given_up_withdraws_its_question() {
    let layer = layer(json!({"tools": ["*"]}));
    let (to_client, asked) = client(None);
    let _ = layer.toward_client(to_client);
    let server = Server::default();
    let mut svc = layer.layer(server.service(done));
    send(&mut svc, initialize(Some(json!({})))).await;
    let env = Envelope::new(Direction::ToServer, tool_call(1, "write_file"));
    let waiting = svc.ready().await.expect("ready").call(env);
    let given_up = tokio::time::timeout(std::time::Duration::from_millis(50), waiting).await;
    assert!(given_up.is_err(), "still waiting for the user");
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    let asked = asked.lock().expect("lock").clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[1]["method"], "notifications/cancelled");
    assert_eq!(asked[1]["params"]["requestId"], asked[0]["id"]);
    assert!(server.calls().is_empty());
}
