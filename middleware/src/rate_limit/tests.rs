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
type Inner = BoxCloneService<Envelope, Option<Message>, BoxError>;

/// Records what reaches it; answers every request at once.
fn server(seen: Seen) -> Inner {
    BoxCloneService::new(tower::service_fn(move |env: Envelope| {
        seen.lock().expect("lock").push(env.message.clone());
        let answer = match env.message {
            Message::Request(req) => Some(Message::response(req.id, json!({}))),
            _ => None,
        };
        async move { Ok::<_, BoxError>(answer) }
    }))
}

fn layer(config: Value) -> RateLimitLayer {
    let config: RateLimitConfig = serde_json::from_value(config).expect("config parses");
    config.validate().expect("config is valid")
}

fn tool_call(id: u64, tool: &str) -> Envelope {
    let params = json!({"name": tool, "arguments": {}});
    Envelope::new(
        Direction::ToServer,
        Message::request(id, method::TOOLS_CALL, Some(params)),
    )
}

fn ping(id: u64) -> Envelope {
    Envelope::new(
        Direction::ToServer,
        Message::request(id, method::PING, None),
    )
}

async fn send(svc: &mut RateLimit<Inner>, env: Envelope) -> Option<Message> {
    svc.ready()
        .await
        .expect("ready")
        .call(env)
        .await
        .expect("answered")
}

fn is_ok(answer: &Option<Message>) -> bool {
    matches!(answer, Some(Message::Response(_)))
}

fn refusal_data(answer: Option<Message>) -> Value {
    let Some(Message::Error(e)) = answer else {
        panic!("expected a refusal, got {answer:?}")
    };
    assert_eq!(e.error.code, ErrorCode::RATE_LIMITED);
    assert!(
        e.error.message.starts_with("mcp-chain rate_limit: "),
        "{}",
        e.error.message
    );
    let data = e.error.data.expect("data");
    assert_eq!(
        (&data["layer"], &data["reason"]),
        (&json!("rate_limit"), &json!("rate_limited"))
    );
    data
}

fn count(seen: &Seen, m: &str) -> usize {
    seen.lock()
        .expect("lock")
        .iter()
        .filter(|x| x.method() == Some(m))
        .count()
}

#[tokio::test(start_paused = true)]
async fn over_the_limit_is_refused_at_once_with_a_retry_hint() {
    let seen = Seen::default();
    let mut svc = layer(json!({"rules": [{"tool": "search*", "rate": "5/s", "burst": 5}]}))
        .layer(server(seen.clone()));
    for id in 0..5 {
        assert!(is_ok(&send(&mut svc, tool_call(id, "search_docs")).await));
    }
    let answer = send(&mut svc, tool_call(5, "search_docs")).await;
    assert_eq!(answer.as_ref().and_then(Message::id), Some(&5.into()));
    let data = refusal_data(answer);
    assert_eq!(data["retryAfterMs"], 200);
    assert_eq!(data["rule"], 0);
    assert_eq!(
        count(&seen, method::TOOLS_CALL),
        5,
        "the refused call never left"
    );

    tokio::time::advance(Duration::from_millis(200)).await;
    assert!(is_ok(&send(&mut svc, tool_call(6, "search_docs")).await));
}

#[tokio::test(start_paused = true)]
async fn pings_flow_while_search_is_throttled() {
    let seen = Seen::default();
    let mut svc = layer(json!({
        "rules": [{"tool": "search", "rate": "1/s", "burst": 1}, {"method": "*", "rate": "1000/s"}],
    }))
    .layer(server(seen.clone()));
    assert!(is_ok(&send(&mut svc, tool_call(1, "search")).await));
    refusal_data(send(&mut svc, tool_call(2, "search")).await);
    for id in 10..20 {
        assert!(is_ok(&send(&mut svc, ping(id)).await), "ping {id}");
        // First match wins: another tool is limited by the method rule only.
        assert!(is_ok(&send(&mut svc, tool_call(id + 100, "read")).await));
    }
}

#[tokio::test(start_paused = true)]
async fn wait_mode_holds_only_the_limited_request() {
    let seen = Seen::default();
    let l = layer(json!({
        "on_limit": "wait", "max_wait": "2s",
        "rules": [{"tool": "search", "rate": "2/s", "burst": 1}],
    }));
    let mut svc = l.layer(server(seen.clone()));
    let start = Instant::now();
    assert!(is_ok(&send(&mut svc, tool_call(1, "search")).await));
    let held = tokio::spawn(svc.clone().oneshot(tool_call(2, "search")));
    // The ping is answered at once, while the search waits for its token.
    assert!(is_ok(&send(&mut svc, ping(3)).await));
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(count(&seen, method::TOOLS_CALL), 1);
    let answer = held.await.expect("joined").expect("answered");
    assert!(is_ok(&answer));
    assert_eq!(start.elapsed(), Duration::from_millis(500));
    assert_eq!(count(&seen, method::TOOLS_CALL), 2);
}

#[tokio::test(start_paused = true)]
async fn wait_mode_refuses_at_once_past_max_wait() {
    let seen = Seen::default();
    let l = layer(json!({
        "on_limit": "wait", "max_wait": "1s",
        "rules": [{"method": "tools/call", "rate": "1/s", "burst": 1}],
    }));
    let mut svc = l.layer(server(seen.clone()));
    assert!(is_ok(&send(&mut svc, tool_call(1, "a")).await));
    let _held = tokio::spawn(svc.clone().oneshot(tool_call(2, "a"))); // waits 1s
    tokio::task::yield_now().await;
    let start = Instant::now();
    let data = refusal_data(send(&mut svc, tool_call(3, "a")).await); // would wait 2s
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(data["retryAfterMs"], 2000);
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_held_request_releases_it_and_its_token() {
    let seen = Seen::default();
    let l = layer(json!({
        "on_limit": "wait", "max_wait": "5s",
        "rules": [{"tool": "search", "rate": "1/s", "burst": 1}],
    }));
    let mut svc = l.layer(server(seen.clone()));
    assert!(is_ok(&send(&mut svc, tool_call(1, "search")).await));
    let held = tokio::spawn(svc.clone().oneshot(tool_call(2, "search")));
    tokio::task::yield_now().await;
    let cancel = Message::notification(
        method::NOTIFICATION_CANCELLED,
        Some(json!({"requestId": 2, "reason": "user gave up"})),
    );
    assert_eq!(
        send(&mut svc, Envelope::new(Direction::ToServer, cancel)).await,
        None
    );
    assert_eq!(held.await.expect("joined").expect("ok"), None, "no answer");
    // Neither the request nor its cancellation reached the server, and the
    // refunded token means the next call waits 1s, not 2s.
    assert_eq!(count(&seen, method::TOOLS_CALL), 1);
    assert_eq!(count(&seen, method::NOTIFICATION_CANCELLED), 0);
    let start = Instant::now();
    assert!(is_ok(
        &svc.clone()
            .oneshot(tool_call(4, "search"))
            .await
            .expect("ok")
    ));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    // A cancellation for a request not held here goes on to the server.
    let other = Message::notification(
        method::NOTIFICATION_CANCELLED,
        Some(json!({"requestId": 1})),
    );
    send(&mut svc, Envelope::new(Direction::ToServer, other)).await;
    assert_eq!(count(&seen, method::NOTIFICATION_CANCELLED), 1);
}

#[tokio::test(start_paused = true)]
async fn rules_apply_to_their_direction() {
    let seen = Seen::default();
    let l = layer(json!({"rules": [
        {"method": "sampling/*", "rate": "1/min", "direction": "server_to_client"},
        {"method": "ping", "rate": "1/min"},
    ]}));
    let mut to_client = l.layer(server(seen.clone()));
    let sampling = || {
        Envelope::new(
            Direction::ToClient,
            Message::request(1, method::SAMPLING_CREATE_MESSAGE, None),
        )
    };
    assert!(is_ok(&send(&mut to_client, sampling()).await));
    refusal_data(send(&mut to_client, sampling()).await);
    // The ping rule is for the client's pings; the server's pass.
    for id in 0..3 {
        let server_ping = Envelope::new(
            Direction::ToClient,
            Message::request(id, method::PING, None),
        );
        assert!(is_ok(&send(&mut to_client, server_ping).await));
    }
}

#[tokio::test(start_paused = true)]
async fn notifications_are_never_limited() {
    let seen = Seen::default();
    let mut svc =
        layer(json!({"rules": [{"rate": "1/min", "burst": 1}]})).layer(server(seen.clone()));
    for _ in 0..10 {
        let note = Message::notification(method::NOTIFICATION_PROGRESS, Some(json!({})));
        assert_eq!(
            send(&mut svc, Envelope::new(Direction::ToServer, note)).await,
            None
        );
    }
    assert_eq!(count(&seen, method::NOTIFICATION_PROGRESS), 10);
}

#[test]
fn config_errors_name_the_key() {
    let err = |v: Value| {
        serde_json::from_value::<RateLimitConfig>(v)
            .expect("parses")
            .validate()
            .expect_err("invalid")
    };
    let ok_rule = json!({"method": "*", "rate": "1/s"});
    let at = |v: Value| err(v).at;
    assert_eq!(
        at(json!({"rules": [ok_rule, {"rate": "fast"}]})),
        keys!["rules", 1, "rate"]
    );
    let both = json!({"rules": [{"tool": "a", "method": "b", "rate": "1/s"}]});
    assert_eq!(at(both), keys!["rules", 0, "tool"]);
    let bad_tool = json!({"rules": [{"tool": "re:(", "rate": "1/s"}]});
    assert_eq!(at(bad_tool), keys!["rules", 0, "tool"]);
    let no_burst = json!({"rules": [{"rate": "1/s", "burst": 0}]});
    assert_eq!(at(no_burst), keys!["rules", 0, "burst"]);
    assert_eq!(
        at(json!({"max_wait": "later", "rules": [ok_rule]})),
        keys!["max_wait"]
    );
    assert_eq!(at(json!({"rules": []})), keys!["rules"]);
    assert_eq!(
        err(json!({"rules": [ok_rule, {"rate": "fast"}]})).to_string(),
        format!(
            "rules[1].rate: {}",
            err(json!({"rules": [{"rate": "fast"}]})).message
        )
    );
    let parse = |v: Value| serde_json::from_value::<RateLimitConfig>(v);
    assert!(parse(json!({"on_limit": "queue", "rules": []})).is_err());
    assert!(parse(json!({"rules": [{"rate": "1/s", "per": "tool"}]})).is_err());
    assert!(parse(json!({"rules": [{"rate": "1/s", "direction": "sideways"}]})).is_err());
}

/// A call whose tool cannot be read cannot slip past a tool's limit: it
/// counts against every tool rule.
#[tokio::test(start_paused = true)]
async fn a_call_whose_tool_cannot_be_read_counts_against_tool_rules() {
    let seen = Seen::default();
    let mut svc = layer(json!({"rules": [{"tool": "search*", "rate": "1/s", "burst": 1}]}))
        .layer(server(seen.clone()));
    let unnamed = |id: u64| {
        let params = json!({"name": ["search_docs"], "arguments": {}});
        Envelope::new(
            Direction::ToServer,
            Message::request(id, method::TOOLS_CALL, Some(params)),
        )
    };
    assert!(is_ok(&send(&mut svc, unnamed(1)).await));
    refusal_data(send(&mut svc, unnamed(2)).await);
    refusal_data(send(&mut svc, tool_call(3, "search_docs")).await);
    assert!(is_ok(&send(&mut svc, ping(4)).await));
    assert_eq!(count(&seen, method::TOOLS_CALL), 1);
}

/// `scope = "server"` in a gateway's shared chain: each server (by the
/// prefix of the tool) has its own buckets, shared by every session; in a
/// server's own chain, one set.
#[tokio::test(start_paused = true)]
async fn each_gateway_server_has_its_own_buckets() {
    let servers = [
        ("gw-one".into(), "gw1".into()),
        ("gw-two".into(), "gw2".into()),
    ];
    crate::servers::install(Arc::new(crate::servers::ServerNames::new("__", &servers)));
    let seen = Seen::default();
    let config = json!({"scope": "server", "rules": [{"tool": "*", "rate": "1/min", "burst": 1}]});
    let shared_chain = layer(config);
    let mut first = shared_chain.for_session(None).layer(server(seen.clone()));
    let mut second = shared_chain.for_session(None).layer(server(seen.clone()));
    assert!(is_ok(&send(&mut first, tool_call(1, "gw1__read")).await));
    refusal_data(send(&mut second, tool_call(2, "gw1__write")).await);
    assert!(
        is_ok(&send(&mut second, tool_call(3, "gw2__read")).await),
        "gw2's own bucket"
    );
    refusal_data(send(&mut first, tool_call(4, "gw2__now")).await);
    // A server's own chain sees its own names: one set of buckets.
    let own =
        layer(json!({"scope": "server", "rules": [{"tool": "*", "rate": "1/min", "burst": 1}]}));
    let mut own = own
        .for_session(None)
        .for_server("files")
        .layer(server(seen.clone()));
    assert!(is_ok(&send(&mut own, tool_call(5, "gw1__read")).await));
    refusal_data(send(&mut own, tool_call(6, "gw2__read")).await);
}
