//! Requests a 2026-07-28 server embeds in results and task notifications
//! are judged as the same requests sent on their own; edited listings are
//! marked private to their caller.

use super::*;

fn mrtr(_: &str) -> Value {
    json!({"resultType": "input_required", "requestState": "s", "inputRequests": {
        "llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 9}},
        "ask": {"method": "elicitation/create", "params": {"message": "name?"}},
        "odd": {"params": {}}}})
}

fn only_denied(_: &str) -> Value {
    json!({"resultType": "input_required", "requestState": "s", "inputRequests": {
        "llm": {"method": "sampling/createMessage", "params": {}}}})
}

fn task(_: &str) -> Value {
    json!({"resultType": "complete", "taskId": "t1", "status": "input_required", "inputRequests": {
        "llm": {"method": "sampling/createMessage", "params": {}},
        "ask": {"method": "elicitation/create", "params": {}}}})
}

fn unreadable_inputs(_: &str) -> Value {
    json!({"resultType": "input_required", "inputRequests": [{"method": "sampling/createMessage"}]})
}

#[tokio::test]
async fn denied_embedded_requests_never_reach_the_client() {
    let (mut svc, _) = filter(mrtr);
    for method in ["tools/call", "prompts/get", "resources/read"] {
        let params = json!({"name": "read_x", "uri": "file:///srv/x"});
        let req = Message::request(1, method, Some(params));
        let r = result_of(send(&mut svc, Direction::ToServer, req).await);
        // The denied method and the one that names none are gone; the
        // allowed one and the rest of the result stay.
        assert_eq!(
            r,
            json!({"resultType": "input_required", "requestState": "s", "inputRequests": {
                "ask": {"method": "elicitation/create", "params": {"message": "name?"}}}}),
            "{method}"
        );
    }
}

#[tokio::test]
async fn a_result_left_with_nothing_the_client_may_answer_is_an_error() {
    let (mut svc, seen) = filter(only_denied);
    let req = Message::request(1, "tools/call", Some(json!({"name": "read_x"})));
    let (code, message, data) = error_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!(code, 403);
    assert!(message.contains("sampling/createMessage"), "{message}");
    assert_eq!(
        data,
        json!({"layer": "filter", "reason": "denied", "methods": ["sampling/createMessage"]})
    );
    // The call itself was allowed and went to the server.
    assert_eq!(seen.lock().expect("not poisoned").len(), 1);
}

#[tokio::test]
async fn input_requests_that_cannot_be_read_are_refused() {
    let (mut svc, _) = filter(unreadable_inputs);
    let req = Message::request(1, "tools/call", Some(json!({"name": "read_x"})));
    let (code, _, data) = error_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!((code, &data["reason"]), (-32603, &json!("unreadable")));
}

#[tokio::test]
async fn a_task_waiting_on_input_shows_only_what_the_client_may_answer() {
    let (mut svc, _) = filter(task);
    let req = Message::request(1, "tasks/get", Some(json!({"taskId": "t1"})));
    let r = result_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!(
        r["inputRequests"],
        json!({"ask": {"method": "elicitation/create", "params": {}}})
    );
    let (mut svc, seen) = filter(empty);
    let note = Message::notification("notifications/tasks", Some(task("")));
    assert!(send(&mut svc, Direction::ToClient, note).await.is_none());
    let bad = Message::notification("notifications/tasks", Some(unreadable_inputs("")));
    assert!(send(&mut svc, Direction::ToClient, bad).await.is_none());
    // The first went on without the denied request; the second not at all.
    let seen = seen.lock().expect("not poisoned");
    let [Message::Notification(note)] = seen.as_slice() else {
        panic!("one notification went on: {seen:?}");
    };
    let params = note
        .params
        .as_ref()
        .expect("params")
        .to_value()
        .expect("readable");
    assert_eq!(
        params["inputRequests"],
        json!({"ask": {"method": "elicitation/create", "params": {}}})
    );
}

fn cached_lists(method: &str) -> Value {
    match method {
        "tools/list" => json!({"tools": [{"name": "read_a"}, {"name": "read_secret"}],
            "ttlMs": 60000, "cacheScope": "public"}),
        _ => json!({"prompts": [{"name": "greet"}], "ttlMs": 60000, "cacheScope": "public"}),
    }
}

#[tokio::test]
async fn an_edited_listing_is_private_to_its_caller_and_an_unedited_one_keeps_its_hints() {
    let (mut svc, _) = filter(cached_lists);
    let req = Message::request(1, "tools/list", None);
    let r = result_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!(
        r,
        json!({"tools": [{"name": "read_a"}], "ttlMs": 60000, "cacheScope": "private"})
    );
    let req = Message::request(2, "prompts/list", None);
    let r = result_of(send(&mut svc, Direction::ToServer, req).await);
    assert_eq!(r["cacheScope"], "public");
}
