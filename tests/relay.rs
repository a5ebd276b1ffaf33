//! The relay end to end: framing, errors, fidelity, every revision.

mod support;

use serde_json::{json, Value};
use support::{call, req, Proxy};

#[tokio::test]
async fn handshake_and_tool_call_pass_through() {
    let mut proxy = Proxy::fake(&[], &[]);
    let init = proxy.initialize("2025-11-25").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let answer = proxy
        .call_tool(json!(1), "echo", json!({"text": "hi"}))
        .await;
    assert_eq!(
        answer["result"]["structuredContent"]["received"]["arguments"],
        json!({"text": "hi"})
    );
    let (status, rest) = proxy.finish().await;
    assert!(status.success(), "{}", proxy.stderr());
    assert!(rest.is_empty(), "{rest:?}");
}

#[tokio::test]
async fn an_unchanged_message_arrives_with_every_field() {
    let mut proxy = Proxy::fake(&[], &[]);
    let params = json!({
        "name": "echo",
        "arguments": {"nested": {"list": [1, 2.5, "three", null, true], "ünï": "cødé"}},
        "_meta": {"progressToken": "tok-1", "io.example/trace": {"span": 7}},
        "fieldFromTheFuture": {"x": [{}]}
    });
    let sent = json!({"jsonrpc":"2.0","id":41,"method":"tools/call","params":params,"topLevelExtra":"kept"});
    proxy.send(sent.clone()).await;
    let (answer, _) = proxy.recv_answer(&json!(41)).await;
    // The fake echoes the params exactly as it parsed them.
    assert_eq!(answer["result"]["structuredContent"]["received"], params);
    let received = proxy.server_received().await;
    let seen = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("server got the call");
    let mut expected = sent.clone();
    expected["id"] = seen["id"].clone(); // the only thing the relay rewrites
    assert_eq!(seen, &expected);
}

#[tokio::test]
async fn ids_are_echoed_exactly() {
    let mut proxy = Proxy::fake(&[], &[]);
    for id in [
        json!(9007199254740991u64),
        json!(0),
        json!(-5),
        json!("ünïcødé 🦀 id"),
        json!(""),
        json!("1"),
    ] {
        let answer = proxy.request(id.clone(), "ping", json!({})).await;
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"], json!({}));
    }
}

#[tokio::test]
async fn client_ids_may_collide_with_the_proxys_own() {
    let mut proxy = Proxy::fake(&[], &[]);
    // Numbers the upstream connector also uses, string twins, reuse.
    for round in 0..3 {
        for id in [json!(1), json!("1"), json!(2)] {
            let answer = proxy.request(id.clone(), "ping", json!({})).await;
            assert_eq!(answer["id"], id, "round {round}");
        }
    }
}

#[tokio::test]
async fn invalid_json_gets_parse_error_and_the_session_goes_on() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy.send_raw(b"{this is not json\n").await;
    let err = proxy.recv().await;
    assert_eq!(err["error"]["code"], -32700);
    assert_eq!(err["id"], Value::Null);
    proxy.send_raw(b"\xff\xfe not utf-8\n").await;
    assert_eq!(proxy.recv().await["error"]["code"], -32700);
    let answer = proxy.request(json!(2), "ping", json!({})).await;
    assert_eq!(answer["result"], json!({}));
}

#[tokio::test]
async fn json_that_is_not_a_message_gets_invalid_request() {
    let mut proxy = Proxy::fake(&[], &[]);
    for (line, id) in [
        (json!(42), Value::Null),
        (json!({"id": 3, "method": "ping"}), json!(3)),
        (
            json!({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": "x"}),
            json!(4),
        ),
        (json!({"jsonrpc": "2.0", "id": 5}), json!(5)),
        (json!([]), Value::Null),
    ] {
        proxy.send(line.clone()).await;
        let err = proxy.recv().await;
        assert_eq!(err["error"]["code"], -32600, "{line}");
        assert_eq!(err["id"], id, "{line}");
    }
    assert_eq!(
        proxy.request(json!(6), "ping", json!({})).await["result"],
        json!({})
    );
}

#[tokio::test]
async fn crlf_and_blank_lines_are_tolerated() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy
        .send_raw(b"\r\n\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n")
        .await;
    let answer = proxy.recv().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"], json!({}));
}

#[tokio::test]
async fn a_line_over_the_cap_is_answered_and_skipped() {
    let mut proxy = Proxy::fake(&["--max-message-bytes", "65536"], &[]);
    let big = call(json!(1), "echo", json!({"blob": "x".repeat(200_000)}));
    proxy.send(big).await;
    let err = proxy.recv().await;
    assert_eq!(err["error"]["code"], -32600);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("65536"),
        "{err}"
    );
    assert_eq!(
        proxy.request(json!(2), "ping", json!({})).await["result"],
        json!({})
    );
    let received = proxy.server_received().await;
    assert!(
        received.iter().all(|m| m["method"] != "tools/call"),
        "the huge line reached the server"
    );
}

#[tokio::test]
async fn large_messages_pass_whole_both_ways() {
    let mut proxy = Proxy::fake(&[], &[]);
    let blob = "y".repeat(5 * 1024 * 1024);
    let answer = proxy
        .call_tool(json!(1), "echo", json!({"blob": blob}))
        .await;
    assert_eq!(
        answer["result"]["structuredContent"]["received"]["arguments"]["blob"]
            .as_str()
            .map(str::len),
        Some(blob.len())
    );
    let answer = proxy
        .call_tool(json!(2), "big", json!({"bytes": 12_000_000}))
        .await;
    assert_eq!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .map(str::len),
        Some(12_000_000)
    );
}

#[tokio::test]
async fn unknown_methods_are_relayed() {
    let mut proxy = Proxy::fake(&[], &[]);
    let answer = proxy
        .request(json!(1), "vendor/somethingNew", json!({"a": 1}))
        .await;
    assert_eq!(answer["error"]["code"], -32601);
    proxy
        .send(json!({"jsonrpc":"2.0","method":"notifications/vendor/hello","params":{"x":1}}))
        .await;
    let received = proxy.server_received().await;
    assert!(received
        .iter()
        .any(|m| m["method"] == "vendor/somethingNew"));
    assert!(received
        .iter()
        .any(|m| m["method"] == "notifications/vendor/hello" && m["params"] == json!({"x":1})));
}

#[tokio::test]
async fn every_revision_handshakes_through_the_relay() {
    for version in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ] {
        let mut proxy = Proxy::fake(&[], &[]);
        let init = proxy.initialize(version).await;
        assert_eq!(init["result"]["protocolVersion"], version);
        let list = proxy.request(json!(1), "tools/list", json!({})).await;
        assert!(
            list["result"]["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty()),
            "{version}: {list}"
        );
    }
}

#[tokio::test]
async fn stateless_requests_need_no_initialize() {
    let mut proxy = Proxy::fake(&[], &[]);
    let discover = proxy
        .request(
            json!(1),
            "server/discover",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        )
        .await;
    assert!(discover["result"]["tools"].is_array(), "{discover}");
    let answer = proxy
        .call_tool(json!(2), "echo", json!({"stateless": true}))
        .await;
    assert_eq!(
        answer["result"]["structuredContent"]["received"]["arguments"]["stateless"],
        true
    );
}

#[tokio::test]
async fn batches_are_answered_as_batches() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy
        .send(json!([
            req(json!(1), "ping", json!({})),
            {"jsonrpc":"2.0","method":"notifications/initialized"},
            call(json!(2), "echo", json!({"a": 1})),
            7
        ]))
        .await;
    let answer = proxy.recv().await;
    let items = answer.as_array().expect("a batch answer is an array");
    assert_eq!(items.len(), 3, "{answer}");
    let by_id = |id: Value| items.iter().find(|m| m["id"] == id).cloned();
    assert_eq!(by_id(json!(1)).expect("ping answered")["result"], json!({}));
    assert!(by_id(json!(2)).expect("call answered")["result"].is_object());
    assert_eq!(
        by_id(Value::Null).expect("invalid element answered")["error"]["code"],
        -32600
    );
    // A batch of notifications only gets no answer.
    proxy
        .send(json!([{"jsonrpc":"2.0","method":"notifications/a"}]))
        .await;
    assert_eq!(proxy.request(json!(3), "ping", json!({})).await["id"], 3);
}

#[tokio::test]
async fn an_answer_over_the_cap_still_answers_its_request() {
    let mut proxy = Proxy::fake(&["--max-message-bytes", "65536"], &[]);
    let answer = proxy
        .call_tool(json!("huge"), "big", json!({"bytes": 200_000}))
        .await;
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("65536"),
        "{answer}"
    );
    assert_eq!(
        proxy.request(json!(2), "ping", json!({})).await["result"],
        json!({})
    );
}
