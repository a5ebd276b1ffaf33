//! What a 2026-07-28 server puts inside results is rewritten like the
//! rest: a task's inlined result is redacted like the call's, the client's
//! answers to embedded requests like arguments, and an edited cacheable
//! result is private to its caller.

use super::*;

#[tokio::test]
async fn a_tasks_result_is_redacted_like_the_calls_own() {
    let (mut svc, _) = rewrite(config());
    let r = result(&mut svc, "tasks/get", json!({"taskId": "t"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "key [REDACTED]");
    let note = Message::notification(
        "notifications/tasks",
        Some(json!({"taskId": "t", "status": "completed",
            "result": {"content": [{"type": "text", "text": KEY}], "structuredContent": {"k": KEY}}})),
    );
    let (mut svc, client_saw) = rewrite(config());
    assert_eq!(send(&mut svc, Direction::ToClient, note).await, None);
    let params = last_params(&client_saw);
    assert_eq!(params["result"]["content"][0]["text"], "[REDACTED]");
    assert_eq!(params["result"]["structuredContent"]["k"], "[REDACTED]");
}

#[tokio::test]
async fn embedded_sampling_text_going_to_the_client_is_redacted() {
    let note = Message::notification(
        "notifications/tasks",
        Some(
            json!({"taskId": "t", "status": "input_required", "inputRequests": {"llm": {
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": KEY}}]}}}}),
        ),
    );
    let (mut svc, client_saw) = rewrite(config());
    send(&mut svc, Direction::ToClient, note).await;
    let params = last_params(&client_saw);
    let text = &params["inputRequests"]["llm"]["params"]["messages"][0]["content"]["text"];
    assert_eq!(text, "[REDACTED]");
}

#[tokio::test]
async fn answers_to_embedded_requests_are_redacted_like_arguments() {
    let responses = json!({"ask": {"action": "accept", "content": {"token": KEY}}});
    for method in ["tools/call", "tasks/update"] {
        let params = json!({"name": "fs_list_dir", "taskId": "t", "inputResponses": responses});
        let (mut svc, seen) = rewrite(config());
        result(&mut svc, method, params.clone()).await;
        assert_eq!(
            last_params(&seen)["inputResponses"],
            responses,
            "{method}: not configured"
        );
        let mut cfg = config();
        cfg.redact_arguments = true;
        let (mut svc, seen) = rewrite(cfg);
        result(&mut svc, method, params).await;
        assert_eq!(
            last_params(&seen)["inputResponses"]["ask"]["content"]["token"],
            "[REDACTED]",
            "{method}"
        );
    }
}

#[tokio::test]
async fn edited_cacheable_results_are_private_to_their_caller() {
    let (mut svc, _) = rewrite(config());
    let r = result(&mut svc, "tools/list", json!({})).await;
    assert_eq!(
        (&r["ttlMs"], &r["cacheScope"]),
        (&json!(5000), &json!("private"))
    );
    let r = result(&mut svc, "resources/read", json!({"uri": "f://a"})).await;
    assert_eq!(r["cacheScope"], "private");
    // Nothing renamed, nothing redacted: the server's hints stand.
    let cfg = RewriteConfig {
        redact: vec![RedactConfig {
            pattern: "nothing-matches-this".into(),
            ..RedactConfig::default()
        }],
        ..RewriteConfig::default()
    };
    let (mut svc, _) = rewrite(cfg);
    let r = result(&mut svc, "resources/read", json!({"uri": "f://a"})).await;
    assert_eq!(r["cacheScope"], "public");
}
