//! The invariants of docs/architecture.md, each with a test that fails without it: order,
//! concurrency, both directions through the chain.

mod support;

use serde_json::{json, Value};
use support::{call, req, Proxy};

#[tokio::test]
async fn pipelined_messages_reach_the_server_in_order() {
    let mut proxy = Proxy::fake(&[], &[]);
    // A pipe test sends initialize and initialized without waiting.
    let mut script = Vec::new();
    script.push(req(json!(0), "initialize", json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}})));
    script.push(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    for i in 1..=100 {
        script.push(req(json!(i), "ping", json!({})));
        script.push(json!({"jsonrpc":"2.0","method":"notifications/vendor/tick","params":{"i":i}}));
    }
    let mut bytes = Vec::new();
    for msg in &script {
        bytes.extend(serde_json::to_vec(msg).expect("json"));
        bytes.push(b'\n');
    }
    proxy.send_raw(&bytes).await;
    let received = proxy.server_received().await;
    let methods = |msgs: &[Value]| -> Vec<(String, Value)> {
        msgs.iter()
            .map(|m| {
                (
                    m["method"].as_str().unwrap_or("").to_owned(),
                    m["params"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(methods(&received), methods(&script));
}

#[tokio::test]
async fn cancelled_never_overtakes_its_request_and_gets_no_answer() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy
        .send(call(json!("slow"), "delay", json!({"ms": 60_000})))
        .await;
    proxy
        .send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}))
        .await;
    let received = proxy.server_received().await;
    let call_at = received
        .iter()
        .position(|m| m["method"] == "tools/call")
        .expect("call reached the server");
    let cancel_at = received
        .iter()
        .position(|m| m["method"] == "notifications/cancelled")
        .expect("cancel reached the server");
    assert!(call_at < cancel_at);
    // Translated to the id the server knows.
    assert_eq!(
        received[cancel_at]["params"]["requestId"],
        received[call_at]["id"]
    );
    assert_eq!(received[cancel_at]["params"]["reason"], "user");
    // No answer for the cancelled request: the next thing out is the ping's.
    let pong = proxy.request(json!("after"), "ping", json!({})).await;
    assert_eq!(pong["id"], "after");
    let (status, rest) = proxy.finish().await;
    assert!(status.success());
    assert!(rest.iter().all(|m| m["id"] != "slow"), "{rest:?}");
}

#[tokio::test]
async fn a_cancel_for_a_finished_request_is_not_forwarded() {
    let mut proxy = Proxy::fake(&[], &[]);
    assert_eq!(proxy.request(json!(1), "ping", json!({})).await["id"], 1);
    // Id 1 may now name a different request upstream; the cancel must not go.
    proxy
        .send(call(json!(2), "delay", json!({"ms": 300})))
        .await;
    proxy
        .send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}))
        .await;
    let (answer, _) = proxy.recv_answer(&json!(2)).await;
    assert!(answer["result"].is_object(), "{answer}");
    let received = proxy.server_received().await;
    assert!(received
        .iter()
        .all(|m| m["method"] != "notifications/cancelled"));
}

#[tokio::test]
async fn server_notifications_come_before_the_answer_they_precede() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy
        .send(req(
            json!(1),
            "tools/call",
            json!({"name":"notify","arguments":{"count":50},"_meta":{"progressToken":"p"}}),
        ))
        .await;
    let (answer, before) = proxy.recv_answer(&json!(1)).await;
    assert!(answer["result"].is_object());
    let progress: Vec<_> = before
        .iter()
        .map(|m| m["params"]["progress"].clone())
        .collect();
    assert_eq!(progress, (1..=50).map(|i| json!(i)).collect::<Vec<_>>());
    assert!(before.iter().all(|m| m["params"]["progressToken"] == "p"));
}

#[tokio::test]
async fn an_answer_is_not_overtaken_by_what_the_server_sends_next() {
    // `--flood` makes the fake send 200 notifications right after it reads
    // `initialized`, which it reads right after answering the ping before it.
    let mut proxy = Proxy::fake(&[], &["--flood", "200"]);
    let mut bytes = serde_json::to_vec(&req(json!("p"), "ping", json!({}))).expect("json");
    bytes.push(b'\n');
    bytes.extend(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    bytes.push(b'\n');
    proxy.send_raw(&bytes).await;
    let first = proxy.recv().await;
    assert_eq!(
        first["id"], "p",
        "the ping's answer must come first: {first}"
    );
    for i in 1..=200 {
        let note = proxy.recv().await;
        assert_eq!(note["params"]["data"], i);
    }
}

#[tokio::test]
async fn a_slow_call_does_not_delay_a_ping() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy
        .send(call(json!("slow"), "delay", json!({"ms": 5000})))
        .await;
    let pong = proxy.request(json!("ping"), "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    // The ping's answer was read while the slow call is still owed.
    let (slow, _) = proxy.recv_answer(&json!("slow")).await;
    assert!(slow["result"].is_object());
}

#[tokio::test]
async fn two_hundred_requests_in_flight_are_answered_and_matched() {
    let mut proxy = Proxy::fake(&[], &[]);
    let mut bytes = Vec::new();
    for i in 0..200u64 {
        // Later requests finish first: answers come back out of order.
        let msg = call(json!(format!("r{i}")), "delay", json!({"ms": 400 - 2 * i}));
        bytes.extend(serde_json::to_vec(&msg).expect("json"));
        bytes.push(b'\n');
    }
    proxy.send_raw(&bytes).await;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        let answer = proxy.recv().await;
        assert!(answer["result"].is_object(), "{answer}");
        let id = answer["id"].as_str().expect("string id").to_owned();
        assert!(seen.insert(id.clone()), "answered twice: {id}");
    }
}

#[tokio::test]
async fn server_requests_are_answered_by_the_client_and_routed_back() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy.initialize("2025-11-25").await;
    for (n, method) in [
        "sampling/createMessage",
        "roots/list",
        "elicitation/create",
        "ping",
    ]
    .into_iter()
    .enumerate()
    {
        let id = json!(n);
        proxy
            .send(call(
                id.clone(),
                "ask",
                json!({"method": method, "params": {"k": n}}),
            ))
            .await;
        let server_req = proxy.recv().await;
        assert_eq!(server_req["method"], method);
        assert_eq!(server_req["params"], json!({"k": n}));
        let result = json!({"answeredBy": "client", "n": n});
        proxy
            .send(json!({"jsonrpc":"2.0","id":server_req["id"],"result":result}))
            .await;
        let (answer, _) = proxy.recv_answer(&id).await;
        let response = &answer["result"]["structuredContent"]["response"];
        assert_eq!(response["result"], result, "{method}");
        // The server sees its own id on the answer.
        assert!(
            response["id"]
                .as_str()
                .is_some_and(|s| s.starts_with("srv-")),
            "{response}"
        );
    }
}

#[tokio::test]
async fn client_errors_to_server_requests_are_routed_back() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy
        .send(call(
            json!(1),
            "ask",
            json!({"method": "sampling/createMessage"}),
        ))
        .await;
    let server_req = proxy.recv().await;
    proxy
        .send(json!({"jsonrpc":"2.0","id":server_req["id"],"error":{"code":-1,"message":"User rejected sampling"}}))
        .await;
    let (answer, _) = proxy.recv_answer(&json!(1)).await;
    assert_eq!(
        answer["result"]["structuredContent"]["response"]["error"]["message"],
        "User rejected sampling"
    );
}

#[tokio::test]
async fn server_notifications_of_every_kind_reach_the_client() {
    let mut proxy = Proxy::fake(&[], &[]);
    for method in [
        "notifications/message",
        "notifications/tools/list_changed",
        "notifications/resources/updated",
        "notifications/cancelled",
        "notifications/vendor/new",
    ] {
        proxy
            .send(call(
                json!(method),
                "notify",
                json!({"count": 1, "method": method}),
            ))
            .await;
        let (_, before) = proxy.recv_answer(&json!(method)).await;
        assert_eq!(before.len(), 1, "{method}: {before:?}");
        assert_eq!(before[0]["method"], method);
    }
}

#[tokio::test]
async fn an_answer_for_no_request_is_dropped() {
    let mut proxy = Proxy::fake(&[], &[]);
    let answer = proxy.call_tool(json!(1), "unknown_id", json!({})).await;
    assert!(answer["result"].is_object());
    // Nothing else (no stray answer with id 987654) reaches the client.
    let pong = proxy.request(json!(2), "ping", json!({})).await;
    assert_eq!(pong["id"], 2);
    assert!(
        proxy.stderr().contains("no request in flight"),
        "{}",
        proxy.stderr()
    );
}

/// One parse in, one write out: over stdio to a child, every message (the
/// client's four, the server's three answers) is parsed once where it
/// enters and written once where it leaves (`MCP_CHAIN_COUNT_LINES`).
#[test]
fn stdio_to_a_child_parses_and_writes_each_message_once() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(support::PROXY)
        .args(["--", support::DEMO])
        .env("MCP_CHAIN_COUNT_LINES", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp-chain starts");
    let script = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        req(json!(2), "tools/list", json!({})),
        call(json!(3), "add", json!({"a": 1, "b": 2})),
    ];
    let mut stdin = child.stdin.take().expect("stdin");
    for line in &script {
        writeln!(stdin, "{line}").expect("written");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("mcp-chain ends");
    assert!(out.status.success());
    let answers = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(answers, 3);
    let messages = script.len() + answers;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("lines parsed {messages}, written {messages}")),
        "{stderr}"
    );
}
