use super::*;
use crate::{BoxError, Direction, Envelope, Message};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tower::{service_fn, Layer, Service, ServiceExt};

/// A server listing `tools` (two to a page) and answering every call with
/// `result`; what reached it is kept.
#[derive(Clone)]
struct Server {
    tools: Value,
    result: Value,
    seen: Arc<Mutex<Vec<Message>>>,
}

impl Server {
    fn new(tools: Value, result: Value) -> Self {
        Self {
            tools,
            result,
            seen: Arc::default(),
        }
    }

    fn service(
        &self,
    ) -> impl Service<Envelope, Response = Option<Message>, Error = BoxError, Future = impl Send>
           + Clone
           + Send
           + 'static {
        let server = self.clone();
        service_fn(move |env: Envelope| {
            let server = server.clone();
            async move {
                server.seen.lock().expect("lock").push(env.message.clone());
                let Message::Request(req) = env.message else {
                    return Ok::<_, BoxError>(None);
                };
                let result = match req.method.as_str() {
                    "tools/list" => {
                        let all = server.tools.as_array().cloned().unwrap_or_default();
                        let from: usize = req
                            .params
                            .as_ref()
                            .and_then(|p| p.str_member("cursor").ok().flatten())
                            .map_or(0, |c| c.parse().expect("cursor"));
                        let page: Vec<Value> = all.iter().skip(from).take(2).cloned().collect();
                        let mut listing = json!({"tools": page});
                        if from + 2 < all.len() {
                            listing["nextCursor"] = json!((from + 2).to_string());
                        }
                        listing
                    }
                    _ => server.result.clone(),
                };
                Ok(Some(Message::response(req.id, result)))
            }
        })
    }

    fn calls(&self) -> usize {
        let seen = self.seen.lock().expect("lock");
        seen.iter()
            .filter(|m| m.method() == Some("tools/call"))
            .count()
    }
}

fn layer(output: bool) -> ValidateLayer {
    let config = ValidateConfig {
        output,
        ..ValidateConfig::default()
    };
    config.validate().expect("valid")
}

fn tools() -> Value {
    json!([
        {"name": "a", "inputSchema": {"type": "object"}},
        {"name": "b", "inputSchema": {"type": "object"}},
        {"name": "weather", "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
            "required": ["city"]
        }, "outputSchema": {"type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]}},
        {"name": "broken", "inputSchema": {"$ref": "https://example.com/schema.json"}}
    ])
}

async fn call(
    layer: &ValidateLayer,
    server: &Server,
    id: u64,
    name: &str,
    arguments: Value,
) -> Value {
    let request = Message::request(
        id,
        "tools/call",
        Some(json!({"name": name, "arguments": arguments})),
    );
    let svc = layer.layer(server.service());
    let out = svc
        .oneshot(Envelope::new(Direction::ToServer, request))
        .await
        .expect("answered");
    out.expect("an answer").to_value()
}

#[tokio::test]
async fn arguments_that_fit_pass_and_others_never_reach_the_server() {
    let server = Server::new(
        tools(),
        json!({"content": [], "structuredContent": {"temp": 21.5}}),
    );
    let layer = layer(false);
    let ok = call(
        &layer,
        &server,
        1,
        "weather",
        json!({"city": "Oslo", "days": 2}),
    )
    .await;
    assert!(ok.get("result").is_some(), "{ok}");
    let before = server.calls();
    let bad = call(&layer, &server, 2, "weather", json!({"city": 7, "days": 0})).await;
    assert_eq!(server.calls(), before, "the server saw an invalid call");
    let error = &bad["error"];
    assert_eq!(error["code"], -32602);
    assert_eq!(error["data"]["layer"], "validate");
    assert_eq!(error["data"]["reason"], "invalid_arguments");
    let pointers: Vec<&str> = error["data"]["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["pointer"].as_str().expect("pointer"))
        .collect();
    assert!(
        pointers.contains(&"/city") && pointers.contains(&"/days"),
        "{error}"
    );
    let missing = call(&layer, &server, 3, "weather", json!({})).await;
    assert_eq!(
        missing["error"]["data"]["reason"], "invalid_arguments",
        "{missing}"
    );
}

#[tokio::test]
async fn a_call_before_any_listing_fetches_every_page_once() {
    let server = Server::new(tools(), json!({"content": []}));
    let layer = layer(false);
    // `weather` is on the second page.
    let ok = call(&layer, &server, 1, "weather", json!({"city": "Oslo"})).await;
    assert!(ok.get("result").is_some(), "{ok}");
    let listings = |s: &Server| {
        s.seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|m| m.method() == Some("tools/list"))
            .count()
    };
    assert_eq!(listings(&server), 2, "two pages");
    call(&layer, &server, 2, "weather", json!({"city": "Bergen"})).await;
    assert_eq!(listings(&server), 2, "learned once");
}

#[tokio::test]
async fn what_cannot_be_judged_is_refused() {
    let server = Server::new(tools(), json!({"content": []}));
    let layer = layer(false);
    let unknown = call(&layer, &server, 1, "nope", json!({})).await;
    assert_eq!(
        unknown["error"]["data"]["reason"], "unknown_tool",
        "{unknown}"
    );
    let broken = call(&layer, &server, 2, "broken", json!({})).await;
    assert_eq!(
        broken["error"]["data"]["reason"], "invalid_arguments",
        "{broken}"
    );
    assert!(broken["error"]["message"]
        .as_str()
        .expect("message")
        .contains("cannot be used"));
    let svc = layer.layer(server.service());
    let unnamed = Message::request(3, "tools/call", Some(json!({"name": 7})));
    let out = svc
        .oneshot(Envelope::new(Direction::ToServer, unnamed))
        .await
        .expect("answered");
    assert_eq!(
        out.expect("answer").to_value()["error"]["data"]["reason"],
        "unreadable"
    );
    assert_eq!(server.calls(), 0, "nothing unchecked reached the server");
}

#[tokio::test]
async fn output_is_checked_when_asked() {
    let server = Server::new(
        tools(),
        json!({"content": [], "structuredContent": {"temp": "warm"}}),
    );
    let unchecked = call(
        &layer(false),
        &server,
        1,
        "weather",
        json!({"city": "Oslo"}),
    )
    .await;
    assert!(unchecked.get("result").is_some());
    let checked = call(&layer(true), &server, 2, "weather", json!({"city": "Oslo"})).await;
    assert_eq!(checked["error"]["code"], -32603, "{checked}");
    assert_eq!(checked["error"]["data"]["reason"], "invalid_output");
    let failed = Server::new(
        tools(),
        json!({"content": [], "isError": true, "structuredContent": {}}),
    );
    let passed = call(&layer(true), &failed, 3, "weather", json!({"city": "Oslo"})).await;
    assert!(
        passed.get("result").is_some(),
        "an isError result passes: {passed}"
    );
}

#[tokio::test]
async fn a_later_listing_replaces_a_changed_schema() {
    let strict = json!([{"name": "t", "inputSchema": {"type": "object", "required": ["a"]}}]);
    let loose = json!([{"name": "t", "inputSchema": {"type": "object"}}]);
    let layer = layer(false);
    let list = |server: &Server| {
        let svc = layer.layer(server.service());
        let listing = Message::request(9, "tools/list", None);
        svc.oneshot(Envelope::new(Direction::ToServer, listing))
    };
    let first = Server::new(strict.clone(), json!({"content": []}));
    list(&first).await.expect("listed");
    let refused = call(&layer, &first, 1, "t", json!({})).await;
    assert_eq!(refused["error"]["data"]["reason"], "invalid_arguments");
    let again = Server::new(strict, json!({"content": []}));
    list(&again).await.expect("listed");
    assert!(call(&layer, &again, 2, "t", json!({}))
        .await
        .get("error")
        .is_some());
    let second = Server::new(loose, json!({"content": []}));
    list(&second).await.expect("listed");
    assert!(call(&layer, &second, 3, "t", json!({}))
        .await
        .get("result")
        .is_some());
}

#[tokio::test]
async fn a_schema_asking_for_unbounded_work_refuses_the_call_within_its_budget() {
    let hostile = super::budget::tests::exponential(40);
    let tools = json!([
        {"name": "trap", "inputSchema": hostile.clone(), "outputSchema": hostile},
        {"name": "fine", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
    ]);
    let server = Server::new(tools, json!({"content": [], "structuredContent": 7}));
    let guard = layer(true);
    let refused = call(&guard, &server, 1, "trap", json!(1)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["reason"], "over_budget");
    assert_eq!(server.calls(), 0, "an unjudged call reached the server");
    // The same budget for what comes back.
    let schema = super::budget::tests::exponential(40);
    let tools = json!([{"name": "t", "inputSchema": {}, "outputSchema": schema}]);
    let server = Server::new(tools, json!({"content": [], "structuredContent": 7}));
    let refused = call(&layer(true), &server, 2, "t", json!({})).await;
    assert_eq!(
        refused["error"]["data"]["reason"], "over_budget",
        "{refused}"
    );
    assert_eq!(refused["error"]["code"], -32603);
    // A schema that judges a part twice reports its first error.
    let tools = json!([{"name": "t", "inputSchema": {
        "type": "object",
        "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "b": {"type": "integer"}},
    }}]);
    let server = Server::new(tools, json!({"content": []}));
    let refused = call(&layer(false), &server, 3, "t", json!({"a": 1, "b": "x"})).await;
    assert_eq!(refused["error"]["data"]["reason"], "invalid_arguments");
    assert_eq!(
        refused["error"]["data"]["errors"].as_array().map(Vec::len),
        Some(1),
        "{refused}"
    );
}

#[test]
fn a_check_with_no_steps_is_refused_as_configuration() {
    let config = ValidateConfig {
        output: false,
        max_check_steps: 0,
    };
    assert!(config.validate().is_err());
}
