use super::*;
use crate::config_error::keys;
use crate::message::method;
use crate::{BoxError, Direction, Envelope, ErrorCode, Message};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};

type Seen = Arc<Mutex<Vec<Message>>>;

/// A server that records what reaches it and answers a `tools/call` after
/// `arguments.ms` milliseconds (never, without it); everything else at once.
type Inner = BoxCloneService<Envelope, Option<Message>, BoxError>;

fn server(seen: Seen) -> Inner {
    BoxCloneService::new(tower::service_fn(move |env: Envelope| {
        seen.lock().expect("lock").push(env.message.clone());
        async move {
            let Message::Request(req) = env.message else {
                return Ok::<_, BoxError>(None);
            };
            if req.method == method::TOOLS_CALL {
                let ms = req
                    .params
                    .as_ref()
                    .and_then(|p| p.to_value().ok()?["arguments"]["ms"].as_u64());
                match ms {
                    Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                    None => std::future::pending().await,
                }
            }
            Ok(Some(Message::response(req.id, json!({"done": true}))))
        }
    }))
}

fn layer(toml: Value) -> TimeoutLayer {
    let config: TimeoutConfig = serde_json::from_value(toml).expect("config parses");
    config.validate().expect("config is valid")
}

fn call(id: u64, tool: &str, ms: Option<u64>) -> Envelope {
    let mut params = json!({"name": tool, "arguments": {}});
    if let Some(ms) = ms {
        params["arguments"]["ms"] = ms.into();
    }
    Envelope::new(
        Direction::ToServer,
        Message::request(id, method::TOOLS_CALL, Some(params)),
    )
}

fn error_code(answer: &Option<Message>) -> Option<i64> {
    match answer {
        Some(Message::Error(e)) => Some(e.error.code.0),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn answer_in_time_passes_unchanged() {
    let seen = Seen::default();
    let svc = layer(json!({"default": "2s"})).layer(server(seen.clone()));
    let answer = svc
        .oneshot(call(1, "quick", Some(500)))
        .await
        .expect("answered");
    assert_eq!(
        answer,
        Some(Message::response(1.into(), json!({"done": true})))
    );
    assert_eq!(seen.lock().expect("lock").len(), 1, "no cancellation sent");
}

#[tokio::test(start_paused = true)]
async fn expiry_answers_32001_and_cancels_on_the_server() {
    let seen = Seen::default();
    let svc = layer(json!({"default": "2s"})).layer(server(seen.clone()));
    let start = Instant::now();
    let answer = svc.oneshot(call(9, "stuck", None)).await.expect("answered");
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    let Some(Message::Error(e)) = answer else {
        panic!("expected an error, got {answer:?}")
    };
    assert_eq!(e.id, Some(9.into()));
    assert_eq!(e.error.code, ErrorCode::REQUEST_TIMEOUT);
    assert!(
        e.error.message.contains("mcp-chain timeout"),
        "{}",
        e.error.message
    );
    let data = e.error.data.expect("data");
    assert_eq!(data["layer"], "timeout");
    assert_eq!(data["reason"], "timed_out");
    assert_eq!(data["timeoutMs"], 2000);

    let seen = seen.lock().expect("lock");
    assert_eq!(seen.len(), 2, "the request, then its cancellation");
    assert_eq!(seen[1].method(), Some(method::NOTIFICATION_CANCELLED));
    let params = seen[1].to_value()["params"].clone();
    assert_eq!(params["requestId"], 9);
    assert!(params["reason"]
        .as_str()
        .expect("reason")
        .contains("mcp-chain timeout"));
}

#[tokio::test(start_paused = true)]
async fn late_response_is_dropped() {
    let seen = Seen::default();
    let svc = layer(json!({"default": "1s"})).layer(server(seen.clone()));
    // The server would answer at 3s; the client has its -32001 at 1s and
    // nothing else ever comes out of the layer for this request.
    let answer = svc
        .oneshot(call(3, "slow", Some(3000)))
        .await
        .expect("answered");
    assert_eq!(error_code(&answer), Some(-32001));
    tokio::time::sleep(Duration::from_secs(5)).await;
}

#[tokio::test(start_paused = true)]
async fn per_tool_deadline_first_match_then_methods_then_default() {
    let l = layer(json!({
        "default": "1s",
        "tools": {"slow_big": "10s", "slow_*": "5s", "free_*": "none"},
        "methods": {"tools/*": "3s", "resources/read": "7s"},
    }));
    let seen = Seen::default();
    let svc = l.layer(server(seen.clone()));
    // slow_big: 10s (first match), so 8s is in time.
    let a = svc
        .clone()
        .oneshot(call(1, "slow_big", Some(8000)))
        .await
        .expect("ok");
    assert_eq!(error_code(&a), None);
    // slow_x: 5s, so 6s is too late.
    let a = svc
        .clone()
        .oneshot(call(2, "slow_x", Some(6000)))
        .await
        .expect("ok");
    assert_eq!(error_code(&a), Some(-32001));
    // other tools fall to methods "tools/*": 3s.
    let start = Instant::now();
    let a = svc
        .clone()
        .oneshot(call(3, "other", None))
        .await
        .expect("ok");
    assert_eq!(
        (error_code(&a), start.elapsed()),
        (Some(-32001), Duration::from_secs(3))
    );
    // free_*: no deadline at all.
    let a = svc
        .clone()
        .oneshot(call(4, "free_run", Some(3_600_000)))
        .await
        .expect("ok");
    assert_eq!(error_code(&a), None);
}

#[tokio::test(start_paused = true)]
async fn default_applies_to_other_methods_and_notifications_pass() {
    let seen = Seen::default();
    let svc = layer(json!({"default": "1s"})).layer(server(seen.clone()));
    let ping = Envelope::new(Direction::ToServer, Message::request(5, method::PING, None));
    let a = svc.clone().oneshot(ping).await.expect("ok");
    assert_eq!(a, Some(Message::response(5.into(), json!({"done": true}))));
    let note = Message::notification(method::NOTIFICATION_INITIALIZED, None);
    let a = svc
        .oneshot(Envelope::new(Direction::ToServer, note))
        .await
        .expect("ok");
    assert_eq!(a, None);
}

#[tokio::test(start_paused = true)]
async fn server_requests_are_not_timed() {
    let l = layer(json!({"default": "1s"}));
    let slow_client = tower::service_fn(|env: Envelope| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        let id = env.message.id().cloned().expect("a request");
        Ok::<_, BoxError>(Some(Message::response(id, json!({}))))
    });
    let sampling = Message::request(1, method::SAMPLING_CREATE_MESSAGE, Some(json!({})));
    let a = l
        .layer(slow_client)
        .oneshot(Envelope::new(Direction::ToClient, sampling))
        .await
        .expect("ok");
    assert_eq!(error_code(&a), None);
}

#[tokio::test(start_paused = true)]
async fn cancelled_request_yields_none() {
    let l = layer(json!({"default": "5s"}));
    let cancelled = tower::service_fn(|_env: Envelope| async { Ok::<_, BoxError>(None) });
    let a = l
        .layer(cancelled)
        .oneshot(call(1, "x", None))
        .await
        .expect("ok");
    assert_eq!(a, None);
}

/// Sends a progress notification for `token` down the server-to-client path.
async fn progress<S>(svc: &mut S, token: Value)
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
{
    let note = Message::notification(
        method::NOTIFICATION_PROGRESS,
        Some(json!({"progressToken": token, "progress": 1})),
    );
    let out = svc
        .ready()
        .await
        .expect("ready")
        .call(Envelope::new(Direction::ToClient, note))
        .await
        .expect("passes");
    assert_eq!(out, None);
}

fn call_with_token(id: u64, ms: u64, token: Value) -> Envelope {
    let params = json!({"name": "job", "arguments": {"ms": ms}, "_meta": {"progressToken": token}});
    Envelope::new(
        Direction::ToServer,
        Message::request(id, method::TOOLS_CALL, Some(params)),
    )
}

fn to_client() -> Inner {
    BoxCloneService::new(tower::service_fn(|_env: Envelope| async {
        Ok::<_, BoxError>(None)
    }))
}

#[tokio::test(start_paused = true)]
async fn progress_extends_the_deadline_when_configured() {
    let l = layer(json!({"default": "2s", "reset_on_progress": true}));
    let svc = l.layer(server(Seen::default()));
    let mut back = l.layer(to_client());
    let req = tokio::spawn(svc.oneshot(call_with_token(1, 3000, json!("tok-1"))));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    progress(&mut back, json!("other-token")).await;
    progress(&mut back, json!("tok-1")).await;
    // Deadline is now 3.5s; the server answers at 3s.
    let a = req.await.expect("joined").expect("ok");
    assert_eq!(a, Some(Message::response(1.into(), json!({"done": true}))));
}

#[tokio::test(start_paused = true)]
async fn progress_is_ignored_unless_configured() {
    let l = layer(json!({"default": "2s"}));
    let svc = l.layer(server(Seen::default()));
    let mut back = l.layer(to_client());
    let req = tokio::spawn(svc.oneshot(call_with_token(1, 3000, json!(42))));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    progress(&mut back, json!(42)).await;
    let a = req.await.expect("joined").expect("ok");
    assert_eq!(error_code(&a), Some(-32001));
}

#[tokio::test(start_paused = true)]
async fn max_total_caps_a_request_that_keeps_reporting_progress() {
    let l = layer(json!({"default": "2s", "reset_on_progress": true, "max_total": "5s"}));
    let svc = l.layer(server(Seen::default()));
    let mut back = l.layer(to_client());
    let start = Instant::now();
    let req = tokio::spawn(svc.oneshot(call_with_token(1, 60_000, json!(7))));
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        progress(&mut back, json!(7)).await;
    }
    let a = req.await.expect("joined").expect("ok");
    let Some(Message::Error(e)) = a else {
        panic!("expected a timeout")
    };
    assert_eq!(e.error.data.expect("data")["timeoutMs"], 5000);
    assert!(start.elapsed() >= Duration::from_secs(5));
}

#[test]
fn config_errors_name_the_key() {
    let err = |v: Value| {
        serde_json::from_value::<TimeoutConfig>(v)
            .expect("parses")
            .validate()
            .expect_err("invalid")
    };
    assert_eq!(err(json!({"default": "soon"})).at, keys!["default"]);
    assert!(err(json!({"default": "0s"})).message.contains("positive"));
    let tools = err(json!({"tools": {"slow_*": "5 parsecs"}}));
    assert_eq!(tools.at, keys!["tools", "slow_*"]);
    assert!(
        tools.to_string().starts_with("tools.\"slow_*\": "),
        "{tools}"
    );
    assert_eq!(
        err(json!({"methods": {"re:(": "5s"}})).at,
        keys!["methods", "re:("]
    );
    let nothing = err(json!({}));
    assert!(nothing.at.is_empty() && nothing.message.contains("nothing to time out"));
    assert_eq!(
        err(json!({"default": "1s", "max_total": "5s"})).at,
        keys!["max_total"]
    );
    assert!(serde_json::from_value::<TimeoutConfig>(json!({"deadline": "1s"})).is_err());
}
