use super::meta::SUBSCRIPTION_ID;
use super::*;
use crate::transport::queue::Taken;
use mcp_chain_middleware::Direction;
use serde_json::json;
use tower::ServiceExt;

fn connector() -> (Connector, Queue) {
    let queue = Queue::default();
    (Connector::new(queue.clone(), "server"), queue)
}

/// The one message queued since the last look.
fn sent(queue: &mut Queue) -> Message {
    let mut taken = Taken::default();
    let take = tokio::time::timeout(std::time::Duration::from_millis(10), queue.take(&mut taken));
    assert!(futures_now(take), "expected a queued message");
    let text = String::from_utf8(taken.joined()).expect("utf-8");
    assert_eq!(text.lines().count(), 1, "expected one message: {text}");
    Message::from_value(serde_json::from_str(&text).expect("json")).expect("a message")
}

/// Nothing is queued.
fn nothing_sent(queue: &mut Queue) {
    let mut taken = Taken::default();
    let take = tokio::time::timeout(std::time::Duration::from_millis(10), queue.take(&mut taken));
    assert!(
        !futures_now(take),
        "unexpected: {}",
        String::from_utf8_lossy(&taken.joined())
    );
}

/// Polls a timeout-wrapped take once: data already queued is ready at once.
fn futures_now(
    fut: impl std::future::Future<Output = Result<bool, tokio::time::error::Elapsed>>,
) -> bool {
    let mut fut = std::pin::pin!(fut);
    matches!(
        fut.as_mut()
            .poll(&mut std::task::Context::from_waker(std::task::Waker::noop())),
        Poll::Ready(Ok(true))
    )
}

fn env(message: Message) -> Envelope {
    Envelope::new(Direction::ToServer, message)
}

#[tokio::test]
async fn requests_get_own_ids_and_answers_get_the_senders_back() {
    let (mut conn, mut rx) = connector();
    let origin = RequestId::from("client-7");
    let fut = conn
        .ready()
        .await
        .expect("ready")
        .call(env(Message::request(origin.clone(), "ping", None)));
    let on_wire = sent(&mut rx);
    let local = on_wire.id().cloned().expect("has an id");
    assert_ne!(local, origin);
    assert!(conn.resolve(Message::response(local, json!({}))).is_none());
    let answer = fut.await.expect("answered").expect("some");
    assert_eq!(answer, Message::response(origin, json!({})));
    assert_eq!(conn.in_flight(), 0);
}

#[tokio::test]
async fn cancel_is_translated_and_settles_the_request_with_no_answer() {
    let (mut conn, mut rx) = connector();
    let fut = conn
        .ready()
        .await
        .expect("ready")
        .call(env(Message::request(5, "tools/call", None)));
    let local = sent(&mut rx).id().cloned().expect("id");
    let cancel = Message::notification(
        method::NOTIFICATION_CANCELLED,
        Some(json!({"requestId": 5, "reason": "user"})),
    );
    let none = conn.ready().await.expect("ready").call(env(cancel)).await;
    assert!(matches!(none, Ok(None)));
    let forwarded = sent(&mut rx);
    assert_eq!(
        forwarded.to_value()["params"]["requestId"],
        local.to_value()
    );
    assert_eq!(forwarded.to_value()["params"]["reason"], "user");
    assert!(matches!(fut.await, Ok(None)));
    // A late answer goes nowhere.
    assert!(conn.resolve(Message::response(local, json!({}))).is_none());
}

#[tokio::test]
async fn cancel_for_nothing_in_flight_is_dropped() {
    let (mut conn, mut rx) = connector();
    let cancel = Message::notification(
        method::NOTIFICATION_CANCELLED,
        Some(json!({"requestId": 1})),
    );
    let _ = conn.ready().await.expect("ready").call(env(cancel)).await;
    nothing_sent(&mut rx);
}

#[tokio::test]
async fn close_answers_everything_in_flight_and_later() {
    let (mut conn, mut rx) = connector();
    let first = conn
        .ready()
        .await
        .expect("ready")
        .call(env(Message::request(1, "a", None)));
    let _ = sent(&mut rx);
    conn.close("the server exited");
    let answer = first.await.expect("answered").expect("some");
    let Message::Error(e) = answer else {
        panic!("expected an error")
    };
    assert_eq!(e.id, Some(1.into()));
    assert_eq!(e.error.code, ErrorCode::CONNECTION_CLOSED);
    assert!(e.error.message.contains("the server exited"));
    let later = conn
        .ready()
        .await
        .expect("ready")
        .call(env(Message::request("x", "b", None)))
        .await
        .expect("answered")
        .expect("some");
    assert_eq!(later.id(), Some(&RequestId::from("x")));
    assert!(matches!(later, Message::Error(_)));
}

#[tokio::test]
async fn a_full_queue_makes_the_caller_wait() {
    let (mut conn, mut queue) = connector();
    let pad = "p".repeat(crate::transport::queue::MAX_QUEUED_BYTES);
    let big = env(Message::notification("n", Some(json!({ "pad": pad }))));
    drop(conn.ready().await.expect("ready").call(big));
    let blocked = tokio::time::timeout(std::time::Duration::from_millis(50), conn.ready()).await;
    assert!(blocked.is_err(), "a full queue must not be ready");
    let _ = sent(&mut queue);
    assert!(conn.ready().await.is_ok());
}

#[tokio::test]
async fn a_listen_streams_notifications_name_the_clients_request() {
    let (mut conn, mut rx) = connector();
    let listen = Message::request("sub-1", method::SUBSCRIPTIONS_LISTEN, Some(json!({})));
    let answer = conn.ready().await.expect("ready").call(env(listen));
    let local = sent(&mut rx).id().cloned().expect("an id").to_value();
    let stamped = |method: &str, params: serde_json::Value| {
        let Message::Notification(note) = Message::notification(method, Some(params)) else {
            unreachable!("a notification");
        };
        Message::Notification(conn.translate_from_peer(note)).to_value()
    };
    let change = stamped(
        "notifications/tools/list_changed",
        json!({"_meta": {SUBSCRIPTION_ID: local, "other": 1}}),
    );
    assert_eq!(
        change["params"]["_meta"],
        json!({SUBSCRIPTION_ID: "sub-1", "other": 1})
    );
    // A server's cancellation of a request of its own is not ours to rename,
    // even when its id is a number we use too.
    let own = stamped(method::NOTIFICATION_CANCELLED, json!({"requestId": 99}));
    assert_eq!(own["params"]["requestId"], 99);
    // The one that ends the listen stream names the client's request, which
    // then gets no answer.
    let ended = stamped(method::NOTIFICATION_CANCELLED, json!({"requestId": local}));
    assert_eq!(ended["params"]["requestId"], "sub-1");
    assert_eq!(answer.await.expect("settled"), None);
}

#[tokio::test]
async fn other_requests_ids_in_meta_are_left_alone() {
    let (mut conn, mut rx) = connector();
    let call = Message::request("c-1", method::TOOLS_CALL, Some(json!({"name": "x"})));
    let _answer = conn.ready().await.expect("ready").call(env(call));
    let local = sent(&mut rx).id().cloned().expect("an id").to_value();
    let Message::Notification(note) = Message::notification(
        "notifications/message",
        Some(json!({"_meta": {SUBSCRIPTION_ID: local}})),
    ) else {
        unreachable!("a notification");
    };
    let note = Message::Notification(conn.translate_from_peer(note)).to_value();
    assert_eq!(note["params"]["_meta"][SUBSCRIPTION_ID], local);
}

/// What a multiplexer writing past the connector (the shared pool) learns
/// of it: each failure is told once even when nobody waits yet, and the
/// errors it answers with are the connector's own.
#[tokio::test]
async fn failures_are_told_and_refusals_said() {
    let (conn, _rx) = connector();
    let failures = conn.failures();
    assert!(conn.refusal().is_none() && conn.failure().is_none());
    conn.suspend("the server exited (exit status: 3)");
    // Told before anyone waited: the permit is kept.
    tokio::time::timeout(std::time::Duration::from_secs(5), failures.notified())
        .await
        .expect("told of the restart");
    let refusal = conn.refusal().expect("refused while restarting");
    assert_eq!(refusal.code, ErrorCode::UPSTREAM_UNAVAILABLE);
    assert_eq!(
        refusal.data.as_ref().and_then(|d| d.get("reason")),
        Some(&json!("restarting"))
    );
    let failure = conn.failure().expect("what was in flight got");
    assert_eq!(failure.code, ErrorCode::CONNECTION_CLOSED);
    assert!(failure.message.contains("exit status: 3"));
    conn.resume();
    assert!(conn.refusal().is_none());
    // Nothing more to tell until the next failure.
    let pending = futures_ready(failures.notified());
    assert!(!pending, "no second notice for one failure");
    conn.close("gone");
    tokio::time::timeout(std::time::Duration::from_secs(5), failures.notified())
        .await
        .expect("told of the end");
    assert_eq!(
        conn.refusal().map(|e| e.code),
        Some(ErrorCode::CONNECTION_CLOSED)
    );
}

/// Whether `fut` is ready on its first poll.
fn futures_ready(fut: impl std::future::Future<Output = ()>) -> bool {
    let mut fut = std::pin::pin!(fut);
    fut.as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
        .is_ready()
}

/// The handshake a multiplexer writes itself is kept for a restart's
/// replay, as one that passed through would be.
#[test]
fn a_handshake_written_past_the_connector_is_recorded() {
    let (conn, _rx) = connector();
    conn.record(|h| h.initialized = true);
    assert!(
        conn.handshake().is_none(),
        "only a recording connector keeps one"
    );
    let conn = conn.recording();
    conn.record(|h| {
        h.initialize = Some(json!({"protocolVersion": "2025-11-25"}).into());
        h.initialized = true;
    });
    let kept = conn.handshake().expect("kept");
    assert!(kept.initialize.is_some() && kept.initialized && kept.result.is_none());
}
