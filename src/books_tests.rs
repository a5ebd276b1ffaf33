//! What the books promise, as a hostile sender or server would test it.

use super::*;
use serde_json::json;

fn call(id: impl Into<RequestId>, token: Option<Value>) -> Message {
    let mut params = json!({"name": "add", "arguments": {"a": 1}});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token, "other": 1});
    }
    Message::request(id, "tools/call", Some(params))
}

fn answer(id: &RequestId) -> Message {
    Message::response(id.clone(), json!({}))
}

fn progress(token: Value) -> Message {
    Message::notification(
        "notifications/progress",
        Some(json!({"progressToken": token, "progress": 1})),
    )
}

fn cancel(id: Value) -> Message {
    Message::notification("notifications/cancelled", Some(json!({"requestId": id})))
}

#[test]
fn two_senders_with_the_same_id_and_token_get_their_own_back() {
    let mut books: Books<&str, ()> = Books::default();
    let (mut a, mut b) = (call(1u64, Some(json!("t"))), call(1u64, Some(json!("t"))));
    let ours_a = books.send(0, "a", &mut a);
    let ours_b = books.send(0, "b", &mut b);
    assert_ne!(ours_a, ours_b);
    assert_eq!(
        a.to_value()["params"]["_meta"],
        json!({"progressToken": ours_a.to_value(), "other": 1})
    );
    assert_eq!(a.to_value()["params"]["arguments"], json!({"a": 1}));

    let mut p = progress(ours_b.to_value());
    assert_eq!(books.progress(0, &mut p).map(|s| s.what), Some("b"));
    assert_eq!(
        books.by_token(0, &ours_b.to_value()).map(|s| s.what),
        Some("b")
    );
    assert!(
        books.by_token(1, &ours_b.to_value()).is_none(),
        "another server's"
    );
    assert!(
        books.by_token(0, &json!("t")).is_none(),
        "the sender's own token"
    );
    assert_eq!(p.to_value()["params"]["progressToken"], "t");

    let mut done = answer(&ours_b);
    let sent = books.answered(0, &mut done).expect("b's answer");
    assert_eq!(
        (sent.what, done.id().cloned()),
        ("b", Some(RequestId::from(1u64)))
    );
    // Answered: b's token and id name nothing any more.
    assert!(books
        .progress(0, &mut progress(ours_b.to_value()))
        .is_none());
    assert!(books.answered(0, &mut answer(&ours_b)).is_none());
    assert!(books.in_flight().any(|(id, _)| id == ours_a));
}

#[test]
fn only_the_server_a_request_went_to_answers_it_or_reports_on_it() {
    let mut books: Books<(), ()> = Books::default();
    let mut request = call("x", Some(json!(5)));
    let ours = books.send(1, (), &mut request);
    assert!(
        books.answered(0, &mut answer(&ours)).is_none(),
        "another server answered"
    );
    assert!(books.progress(0, &mut progress(ours.to_value())).is_none());
    assert!(books
        .answered(2, &mut answer(&RequestId::String("1".into())))
        .is_none());
    let mut right = answer(&ours);
    assert!(
        books.answered(1, &mut right).is_some(),
        "kept for the server it went to"
    );
    assert_eq!(right.id(), Some(&RequestId::String("x".into())));
}

#[test]
fn a_request_without_a_token_gets_no_progress_and_our_own_have_no_sender() {
    let mut books: Books<u8, ()> = Books::default();
    let mut plain = call(3u64, None);
    let ours = books.send(0, 1, &mut plain);
    assert!(books.progress(0, &mut progress(ours.to_value())).is_none());
    let mut own = Message::request(0u64, "tools/list", None);
    let own_id = books.send_own(0, 2, &mut own);
    assert_eq!(own.id(), Some(&own_id));
    let mut reply = answer(&own_id);
    let sent = books.answered(0, &mut reply).unwrap();
    assert!(sent.theirs.is_none());
    assert_eq!(reply.id(), Some(&own_id), "our own answer keeps our id");
}

#[test]
fn a_sender_cancels_only_its_own_request() {
    let mut books: Books<&str, ()> = Books::default();
    let ours_a = books.send(0, "a", &mut call(9u64, None));
    books.send(1, "b", &mut call(10u64, None));
    let mut note = cancel(json!(10));
    assert_eq!(
        books.cancelled(|w| *w == "a", &mut note),
        None,
        "b's request, named by a"
    );
    let mut note = cancel(json!(9));
    assert_eq!(books.cancelled(|w| *w == "a", &mut note), Some(0));
    assert_eq!(note.to_value()["params"]["requestId"], ours_a.to_value());
    // Two of a sender's requests under one id: which is meant is unknown.
    books.send(0, "a", &mut call(9u64, None));
    assert_eq!(books.cancelled(|w| *w == "a", &mut cancel(json!(9))), None);
}

#[test]
fn a_servers_request_is_answered_back_to_it_by_the_client_it_went_to() {
    let mut books: Books<(), u64> = Books::default();
    let Message::Request(mut asked) = Message::request(
        "s-1",
        "sampling/createMessage",
        Some(json!({"_meta": {"progressToken": "p"}})),
    ) else {
        unreachable!()
    };
    let ours = books.ask(2, 7, &mut asked);
    assert_eq!(asked.id, ours);
    assert_eq!(books.asking(2), 1);
    let mut p = progress(ours.to_value());
    assert_eq!(
        books.replied_progress(|to| *to == 8, &mut p),
        None,
        "another client"
    );
    assert_eq!(books.replied_progress(|to| *to == 7, &mut p), Some(2));
    assert_eq!(p.to_value()["params"]["progressToken"], "p");
    let mut reply = answer(&ours);
    assert_eq!(
        books.replied(|to| *to == 8, &mut reply),
        None,
        "another client answered"
    );
    assert_eq!(books.replied(|to| *to == 7, &mut reply), Some(2));
    assert_eq!(reply.id(), Some(&RequestId::String("s-1".into())));
    assert_eq!(books.asking(2), 0);
}

#[test]
fn a_server_withdraws_only_its_own_request_and_a_gone_one_leaves_its_books() {
    let mut books: Books<(), ()> = Books::default();
    let Message::Request(mut asked) = Message::request(4u64, "roots/list", None) else {
        unreachable!()
    };
    let ours = books.ask(1, (), &mut asked);
    assert!(
        books.withdrawn(0, &mut cancel(json!(4))).is_none(),
        "another server's"
    );
    let mut note = cancel(json!(4));
    assert!(books.withdrawn(1, &mut note).is_some());
    assert_eq!(note.to_value()["params"]["requestId"], ours.to_value());

    books.send(1, (), &mut call(1u64, None));
    books.send(2, (), &mut call(2u64, None));
    let Message::Request(mut again) = Message::request(5u64, "roots/list", None) else {
        unreachable!()
    };
    books.ask(1, (), &mut again);
    let owed = books.take_sent(|s| s.server == 1);
    assert_eq!(owed.len(), 1);
    assert_eq!(owed[0].1.theirs, Some(RequestId::from(1u64)));
    assert_eq!(books.take_asked(|a| a.server == 1).len(), 1);
    assert_eq!(books.in_flight().count(), 1);
}

#[test]
fn a_related_request_is_named_back_only_for_the_server_it_went_to() {
    let mut books: Books<&str, ()> = Books::default();
    let ours = books.send(1, "a", &mut call("c-1", None));
    let related =
        |id: &RequestId| json!({"_meta": {RELATED_REQUEST_ID: id.to_value()}, "level": "info"});
    let mut params: Payload = related(&ours).into();
    assert!(
        books.related(0, Some(&mut params)).unwrap().is_none(),
        "another server's request"
    );
    assert_eq!(
        books.related(1, Some(&mut params)).unwrap().map(|s| s.what),
        Some("a")
    );
    assert_eq!(
        params.to_value().unwrap()["_meta"][RELATED_REQUEST_ID],
        "c-1"
    );
    let mut none: Payload = json!({"level": "info"}).into();
    assert!(books.related(1, Some(&mut none)).is_none());
}
