use super::*;
use mcp_chain_middleware::Direction;
use serde_json::json;
use tower::ServiceExt;

fn connector() -> (Connector, mpsc::Receiver<Outgoing>) {
    let (tx, rx) = mpsc::channel(16);
    (Connector::new(tx, "server"), rx)
}

fn sent(rx: &mut mpsc::Receiver<Outgoing>) -> Message {
    match rx.try_recv() {
        Ok(Outgoing::One(m)) => m,
        other => panic!("expected one message, got {other:?}"),
    }
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
        forwarded.params().expect("params")["requestId"],
        local.to_value()
    );
    assert_eq!(forwarded.params().expect("params")["reason"], "user");
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
    assert!(rx.try_recv().is_err());
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
    let (tx, mut rx) = mpsc::channel(1);
    let mut conn = Connector::new(tx, "client");
    let note = || env(Message::notification("n", None));
    drop(conn.ready().await.expect("ready").call(note()));
    let blocked = tokio::time::timeout(std::time::Duration::from_millis(50), conn.ready()).await;
    assert!(blocked.is_err(), "a full queue must not be ready");
    let _ = sent(&mut rx);
    assert!(conn.ready().await.is_ok());
}
