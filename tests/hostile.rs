//! Hostile input (issue 5, item 4): every trick a client or a server may
//! play ends in a clear error or a documented pass-through, and the session
//! survives it: each test ends with a ping that still gets its answer.
//!
//! Tests that need the filter layer write a config with `type = "filter"`;
//! they fail (the proxy refuses the config) until that layer is wired into
//! the chain, and pass once it is.

mod support;

use serde_json::{json, Value};
use support::{call, req, Proxy, TempDir, FAKE};

/// The session still works: a ping gets its answer.
async fn still_alive(proxy: &mut Proxy, id: Value) {
    let answer = proxy.request(id.clone(), "ping", json!({})).await;
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["result"], json!({}), "{answer}");
}

/// The proxy in front of the fake with a filter layer denying `deny` tools
/// (or allowing only `allow` ones).
fn with_filter(dir: &TempDir, tools: &str) -> Proxy {
    let config = dir.write(
        "filter.toml",
        &format!("[[middleware]]\ntype = \"filter\"\ntools = {tools}\n"),
    );
    Proxy::fake(&["--config", &config], &[])
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error answer, got {answer}"))
}

/// The calls of a tool the server received.
fn calls_of<'a>(received: &'a [Value], tool: &str) -> Vec<&'a Value> {
    received
        .iter()
        .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == tool)
        .collect()
}

// --- duplicate keys ---------------------------------------------------------

#[tokio::test]
async fn duplicate_keys_reach_the_server_as_the_single_value_the_proxy_read() {
    // A `tee` in front of the fake captures the exact bytes the server got.
    // The filter reads the name (denying `crash`): whatever it read is what
    // the server must get. (With no layer reading it, a payload is passed
    // on as the client's bytes: nobody checked anything.)
    let dir = TempDir::new("dupkeys");
    let raw = dir.path("raw.jsonl");
    let config = dir.write(
        "filter.toml",
        "[[middleware]]\ntype = \"filter\"\ntools = { deny = [\"crash\"] }\n",
    );
    let script = format!("tee -a '{}' | '{FAKE}'", raw.display());
    let mut proxy = Proxy::spawn(&["--config", &config, "--", "sh", "-c", &script]);
    proxy
        .send_raw(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crash","name":"echo","arguments":{"a":1,"a":2}}}
"#,
        )
        .await;
    let (answer, _) = proxy.recv_answer(&json!(1)).await;
    assert_eq!(
        answer["result"]["structuredContent"]["received"]["arguments"],
        json!({"a": 2}),
        "{answer}"
    );
    // Top-level duplicates: the last id and method are the message.
    proxy
        .send_raw(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","method":"ping","id":3}
"#,
        )
        .await;
    let (answer, _) = proxy.recv_answer(&json!(3)).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    still_alive(&mut proxy, json!(4)).await;
    let text = std::fs::read_to_string(&raw).expect("tee wrote the server's input");
    let line = text
        .lines()
        .find(|l| l.contains("tools/call"))
        .expect("the call reached the server");
    assert_eq!(line.matches("\"name\"").count(), 1, "{line}");
    assert!(
        !line.contains("crash"),
        "the shadowed name was forwarded: {line}"
    );
    assert_eq!(line.matches("\"a\"").count(), 1, "{line}");
    assert!(
        !text
            .lines()
            .any(|l| l.contains("\"method\":\"tools/call\",\"method\"")),
        "{text}"
    );
}

#[tokio::test]
async fn a_duplicate_name_cannot_show_the_filter_one_tool_and_the_server_another() {
    let dir = TempDir::new("dupfilter");
    let mut proxy = with_filter(&dir, r#"{ deny = ["crash"] }"#);
    // The filter reads the last "name" (crash) and refuses it.
    proxy
        .send_raw(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"crash"}}
"#,
        )
        .await;
    let (answer, _) = proxy.recv_answer(&json!(1)).await;
    assert_eq!(error_code(&answer), -32602, "{answer}");
    // The other order: the filter allows echo, and the server sees echo only.
    proxy
        .send_raw(
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"crash","name":"echo"}}
"#,
        )
        .await;
    let (answer, _) = proxy.recv_answer(&json!(2)).await;
    assert!(answer["result"].is_object(), "{answer}");
    still_alive(&mut proxy, json!(3)).await;
    let received = proxy.server_received().await;
    assert!(calls_of(&received, "crash").is_empty(), "{received:?}");
}

#[tokio::test]
async fn unknown_members_keep_their_order() {
    // Cargo.toml enables preserve_order so a relayed message keeps the key
    // order its sender wrote; taking the envelope members out must not
    // shuffle the rest.
    let dir = TempDir::new("keyorder");
    let raw = dir.path("raw.jsonl");
    let script = format!("tee -a '{}' | '{FAKE}'", raw.display());
    let mut proxy = Proxy::spawn(&["--", "sh", "-c", &script]);
    proxy
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"b\":1,\"id\":1,\"method\":\"ping\",\"c\":2,\"d\":3}\n")
        .await;
    let (answer, _) = proxy.recv_answer(&json!(1)).await;
    assert_eq!(answer["result"], json!({}));
    still_alive(&mut proxy, json!(2)).await;
    let text = std::fs::read_to_string(&raw).expect("tee wrote the server's input");
    let line = text.lines().next().expect("the ping reached the server");
    let (b, c, d) = (line.find("\"b\""), line.find("\"c\""), line.find("\"d\""));
    assert!(b < c && c < d, "members reordered: {line}");
}

// --- batches ------------------------------------------------------------------

#[tokio::test]
async fn a_batch_mixing_allowed_and_denied_calls_is_answered_element_by_element() {
    let dir = TempDir::new("batchfilter");
    let mut proxy = with_filter(&dir, r#"{ deny = ["crash", "grandchild"] }"#);
    proxy
        .send(json!([
            call(json!(1), "echo", json!({"n": 1})),
            call(json!(2), "crash", json!({})),
            req(json!(3), "ping", json!({})),
            call(json!(4), "grandchild", json!({})),
            {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "crash"}},
            call(json!(5), "echo", json!({"n": 5})),
        ]))
        .await;
    let answer = proxy.recv().await;
    let items = answer.as_array().expect("a batch answer is an array");
    assert_eq!(items.len(), 5, "{answer}");
    let by_id = |id: i64| {
        items
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer for {id} in {answer}"))
    };
    assert!(by_id(1)["result"].is_object());
    assert_eq!(error_code(by_id(2)), -32602);
    assert_eq!(by_id(3)["result"], json!({}));
    assert_eq!(error_code(by_id(4)), -32602);
    assert!(by_id(5)["result"].is_object());
    still_alive(&mut proxy, json!(6)).await;
    let received = proxy.server_received().await;
    assert!(calls_of(&received, "crash").is_empty(), "{received:?}");
    assert!(calls_of(&received, "grandchild").is_empty(), "{received:?}");
    assert_eq!(calls_of(&received, "echo").len(), 2, "{received:?}");
}

// --- look-alike names ---------------------------------------------------------

/// Case, Unicode confusables, invisible and trailing characters.
const LOOK_ALIKES: [&str; 8] = [
    "Echo",
    "ECHO",
    "echo ",
    " echo",
    "echo\t",
    "echo\u{200b}",                     // zero-width space
    "\u{0435}cho",                      // Cyrillic е
    "\u{ff45}\u{ff43}\u{ff48}\u{ff4f}", // fullwidth ｅｃｈｏ
];

#[tokio::test]
async fn an_allow_list_admits_only_the_exact_name() {
    let dir = TempDir::new("lookalike-allow");
    let mut proxy = with_filter(&dir, r#"{ allow = ["echo"] }"#);
    for (i, name) in LOOK_ALIKES.iter().enumerate() {
        let answer = proxy.call_tool(json!(i), name, json!({})).await;
        assert_eq!(error_code(&answer), -32602, "{name:?}: {answer}");
    }
    let answer = proxy.call_tool(json!("exact"), "echo", json!({})).await;
    assert!(answer["result"].is_object(), "{answer}");
    still_alive(&mut proxy, json!("ping")).await;
    let received = proxy.server_received().await;
    let names: Vec<_> = received
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["name"].clone())
        .collect();
    assert_eq!(
        names,
        vec![json!("echo")],
        "only the exact name got through"
    );
}

#[tokio::test]
async fn a_deny_list_matches_exactly_and_look_alikes_reach_the_server_unchanged() {
    // Documented pass-through: names are compared byte for byte, as the
    // server compares them; a look-alike of a denied tool is another name,
    // and the server answers it (here: unknown tool). `allow` is the list
    // to use when look-alikes matter.
    let dir = TempDir::new("lookalike-deny");
    let mut proxy = with_filter(&dir, r#"{ deny = ["crash"] }"#);
    let look_alikes = ["Crash", "CRASH", "crash ", "crash\u{200b}", "\u{0441}rash"];
    for (i, name) in look_alikes.iter().enumerate() {
        let answer = proxy.call_tool(json!(i), name, json!({})).await;
        assert_eq!(error_code(&answer), -32602, "{name:?}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(name), "{name:?}: {answer}");
    }
    let answer = proxy.call_tool(json!("real"), "crash", json!({})).await;
    assert_eq!(error_code(&answer), -32602, "{answer}");
    still_alive(&mut proxy, json!("ping")).await;
    let received = proxy.server_received().await;
    for name in look_alikes {
        assert_eq!(
            calls_of(&received, name).len(),
            1,
            "{name:?} reached the server as sent"
        );
    }
}

// --- envelope shape -------------------------------------------------------------

#[tokio::test]
async fn params_as_an_array_pass_through_to_the_server() {
    // JSON-RPC allows by-position params; MCP never uses them. The relay
    // passes them on untouched, and the server answers.
    let mut proxy = Proxy::fake(&[], &[]);
    let answer = proxy
        .request(json!(1), "tools/call", json!(["crash", {"code": 9}]))
        .await;
    assert_eq!(error_code(&answer), -32602, "{answer}");
    let answer = proxy
        .request(json!(2), "unknown/method", json!([1, 2]))
        .await;
    assert_eq!(error_code(&answer), -32601, "{answer}");
    still_alive(&mut proxy, json!(3)).await;
    let received = proxy.server_received().await;
    let call = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("forwarded");
    assert_eq!(call["params"], json!(["crash", {"code": 9}]));
}

#[tokio::test]
async fn params_as_an_array_do_not_get_past_a_filter() {
    let dir = TempDir::new("arrayfilter");
    let mut proxy = with_filter(&dir, r#"{ deny = ["crash"] }"#);
    let answer = proxy
        .request(json!(1), "tools/call", json!(["crash"]))
        .await;
    assert!(answer["error"].is_object(), "{answer}");
    still_alive(&mut proxy, json!(2)).await;
}

#[tokio::test]
async fn a_request_without_jsonrpc_is_invalid_and_never_forwarded() {
    let mut proxy = Proxy::fake(&[], &[]);
    for (id, line) in [
        (
            json!(1),
            json!({"id": 1, "method": "tools/call", "params": {"name": "crash"}}),
        ),
        (
            json!(2),
            json!({"jsonrpc": "1.0", "id": 2, "method": "tools/call", "params": {"name": "crash"}}),
        ),
        (
            json!(3),
            json!({"jsonrpc": 2.0, "id": 3, "method": "tools/call", "params": {"name": "crash"}}),
        ),
        (
            json!(4),
            json!({"jsonrpc": null, "id": 4, "method": "tools/call", "params": {"name": "crash"}}),
        ),
    ] {
        proxy.send(line.clone()).await;
        let answer = proxy.recv().await;
        assert_eq!(answer["id"], id, "{line}: {answer}");
        assert_eq!(error_code(&answer), -32600, "{line}: {answer}");
    }
    // Without an id it is not even a notification: still -32600, id null.
    proxy
        .send(json!({"method": "tools/call", "params": {"name": "crash"}}))
        .await;
    let answer = proxy.recv().await;
    assert_eq!(error_code(&answer), -32600, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    still_alive(&mut proxy, json!(5)).await;
    assert!(calls_of(&proxy.server_received().await, "crash").is_empty());
}

#[tokio::test]
async fn client_ids_colliding_with_the_proxys_own_are_kept_apart() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy.initialize("2025-06-18").await;
    // A slow call in flight under id 1 while the server asks the client.
    proxy
        .send(call(json!(1), "delay", json!({"ms": 300})))
        .await;
    proxy
        .send(call(json!(2), "ask", json!({"method": "roots/list"})))
        .await;
    let ask = proxy.recv().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let server_id = ask["id"].clone();
    // The client now uses the very id the proxy gave the server's request
    // (and the ids the upstream connector numbers its own requests with).
    for id in [server_id.clone(), json!(0), json!(1_u64 << 53), json!("1")] {
        let answer = proxy.request(id.clone(), "ping", json!({})).await;
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"], json!({}));
    }
    proxy
        .send(json!({"jsonrpc": "2.0", "id": server_id, "result": {"roots": []}}))
        .await;
    let (answer, _) = proxy.recv_answer(&json!(2)).await;
    assert_eq!(
        answer["result"]["structuredContent"]["response"]["result"],
        json!({"roots": []}),
        "{answer}"
    );
    let (answer, _) = proxy.recv_answer(&json!(1)).await;
    assert!(answer["result"].is_object(), "{answer}");
    still_alive(&mut proxy, json!(3)).await;
}

#[tokio::test]
async fn a_notification_carrying_tools_call_gets_no_answer_and_runs_nothing() {
    // Documented pass-through: a notification is relayed as one (the server
    // must not answer it, and the fake treats unknown notifications as
    // no-ops); the client never gets an answer for it.
    let mut proxy = Proxy::fake(&[], &[]);
    proxy
        .send(json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "crash"}}))
        .await;
    proxy
        .send(json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo"}}))
        .await;
    // The very next thing the client reads is the ping's answer.
    proxy.send(req(json!(1), "ping", json!({}))).await;
    let next = proxy.recv().await;
    assert_eq!(next["id"], 1, "{next}");
    still_alive(&mut proxy, json!(2)).await;
    let received = proxy.server_received().await;
    let notes: Vec<_> = received
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert!(notes.iter().all(|m| m.get("id").is_none()), "{notes:?}");
}

#[tokio::test]
async fn a_notification_carrying_a_denied_tools_call_is_dropped_by_the_filter() {
    let dir = TempDir::new("notefilter");
    let mut proxy = with_filter(&dir, r#"{ deny = ["crash"] }"#);
    proxy
        .send(json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "crash"}}))
        .await;
    proxy.send(req(json!(1), "ping", json!({}))).await;
    assert_eq!(proxy.recv().await["id"], 1);
    still_alive(&mut proxy, json!(2)).await;
    assert!(calls_of(&proxy.server_received().await, "crash").is_empty());
}

// --- size, depth, encoding ----------------------------------------------------------

/// Peak resident memory of a process (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmHWM in /proc/PID/status")
}

/// Writes a `size`-byte tools/call line without holding it in memory.
async fn send_huge_line(proxy: &mut Proxy, id: u64, size: usize) {
    let head = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"blob":""#
    );
    let tail = "\"}}}\n";
    proxy.send_raw(head.as_bytes()).await;
    let chunk = vec![b'x'; 1 << 20];
    let mut left = size - head.len() - tail.len();
    while left > 0 {
        let n = left.min(chunk.len());
        proxy.send_raw(&chunk[..n]).await;
        left -= n;
    }
    proxy.send_raw(tail.as_bytes()).await;
}

const MIB: usize = 1 << 20;

#[tokio::test]
async fn a_100_mb_line_is_refused_with_bounded_memory() {
    // Default cap: 64 MiB. The line is bigger, so it is answered with
    // -32600 and skipped; the proxy must not hold all of it.
    let mut proxy = Proxy::fake(&[], &[]);
    still_alive(&mut proxy, json!(0)).await;
    let before = peak_rss(proxy.pid());
    send_huge_line(&mut proxy, 1, 100 * MIB).await;
    let answer = proxy.recv().await;
    assert_eq!(error_code(&answer), -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&(64 * MIB).to_string()), "{answer}");
    still_alive(&mut proxy, json!(2)).await;
    let peak = peak_rss(proxy.pid());
    assert!(
        peak < before + 100 * MIB as u64,
        "peak RSS grew from {before} to {peak} bytes for a 100 MB line"
    );
    assert!(calls_of(&proxy.server_received().await, "echo").is_empty());
}

#[tokio::test]
async fn a_100_mb_line_over_a_small_cap_costs_about_the_cap() {
    let mut proxy = Proxy::fake(&["--max-message-bytes", "1048576"], &[]);
    still_alive(&mut proxy, json!(0)).await;
    let before = peak_rss(proxy.pid());
    send_huge_line(&mut proxy, 1, 100 * MIB).await;
    let answer = proxy.recv().await;
    assert_eq!(error_code(&answer), -32600, "{answer}");
    still_alive(&mut proxy, json!(2)).await;
    let peak = peak_rss(proxy.pid());
    assert!(
        peak < before + 16 * MIB as u64,
        "peak RSS grew from {before} to {peak} bytes with a 1 MiB cap"
    );
}

#[tokio::test]
async fn deeply_nested_json_is_a_parse_error_not_a_stack_overflow() {
    let mut proxy = Proxy::fake(&[], &[]);
    for depth in [200, 100_000] {
        let arrays = format!("{}{}\n", "[".repeat(depth), "]".repeat(depth));
        proxy.send_raw(arrays.as_bytes()).await;
        assert_eq!(error_code(&proxy.recv().await), -32700, "depth {depth}");
        let objects = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{}1{}}}\n",
            "{\"a\":".repeat(depth),
            "}".repeat(depth)
        );
        proxy.send_raw(objects.as_bytes()).await;
        let answer = proxy.recv().await;
        assert_eq!(error_code(&answer), -32700, "depth {depth}");
        // Unclosed, too: the parser gives up at its depth limit.
        proxy
            .send_raw(format!("{}\n", "[{\"a\":".repeat(depth)).as_bytes())
            .await;
        assert_eq!(error_code(&proxy.recv().await), -32700, "depth {depth}");
    }
    still_alive(&mut proxy, json!(2)).await;
}

/// `{"a":` nested `n` deep around `1`.
fn nested(n: usize) -> Value {
    (0..n).fold(json!(1), |inner, _| json!({ "a": inner }))
}

#[tokio::test]
async fn an_answer_nested_too_deep_for_the_proxy_still_answers_the_request() {
    // Arguments deep enough that the request parses (the proxy and the
    // server accept it) but the server's echo, a few levels deeper, does
    // not parse in the proxy. The client must still get one answer.
    let parses = |v: &Value| serde_json::from_str::<Value>(&v.to_string()).is_ok();
    let n = (1..200)
        .find(|&n| {
            let request = call(json!(1), "echo", nested(n));
            let answer = json!({"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"received":{"name":"echo","arguments":nested(n)}}}});
            parses(&request) && !parses(&answer)
        })
        .expect("a depth between the two");
    let mut proxy = Proxy::fake(&[], &[]);
    proxy.send(call(json!(1), "echo", nested(n))).await;
    let answer = proxy.try_recv(std::time::Duration::from_secs(10)).await;
    let answer = answer.unwrap_or_else(|| {
        panic!(
            "no answer for a request whose response was too deep to parse\n{}",
            proxy.stderr()
        )
    });
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["error"].is_object(), "{answer}");
    still_alive(&mut proxy, json!(2)).await;
}

#[tokio::test]
async fn invalid_utf8_anywhere_is_a_parse_error() {
    let mut proxy = Proxy::fake(&[], &[]);
    let lines: [&[u8]; 5] = [
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xc0\xafng\"}\n", // overlong '/'
        b"{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"method\":\"ping\"}\n", // UTF-8 surrogate
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\\ud800\"}}\n", // lone escape
        b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n", // BOM
    ];
    for line in lines {
        proxy.send_raw(line).await;
        let answer = proxy.recv().await;
        assert_eq!(
            error_code(&answer),
            -32700,
            "{:?}: {answer}",
            String::from_utf8_lossy(line)
        );
        assert_eq!(answer["id"], Value::Null);
    }
    still_alive(&mut proxy, json!(2)).await;
}

#[tokio::test]
async fn numbers_reach_the_server_unchanged() {
    // Found by the `message` fuzz target: serde_json without its
    // `float_roundtrip` feature reads some decimals to the neighbouring
    // f64, so the relay writes a different number than it was sent.
    let mut proxy = Proxy::fake(&[], &[]);
    let numbers = "[1,-0,1e5,-9227330326854775808,18446744073709551615,0.1,2.2250738585072014e-308,1.7976931348623157e308,9007199254740993,-9223372036854775808]";
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"n\":{numbers}}}}}}}\n"
    );
    proxy.send_raw(line.as_bytes()).await;
    let (answer, _) = proxy.recv_answer(&json!(1)).await;
    let expected: Value = serde_json::from_str(numbers).expect("numbers parse");
    // Compare as written, so a float one unit off is seen.
    let got = answer["result"]["structuredContent"]["received"]["arguments"]["n"].to_string();
    assert_eq!(got, expected.to_string(), "{answer}");
    still_alive(&mut proxy, json!(2)).await;
}

// --- answers nobody asked for, floods -------------------------------------------------

#[tokio::test]
async fn answers_for_unknown_ids_are_dropped_both_ways() {
    let mut proxy = Proxy::fake(&[], &[]);
    // From the server: `unknown_id` first answers id 987654, never asked.
    let (answer, before) = proxy
        .recv_answer_after(call(json!(1), "unknown_id", json!({})))
        .await;
    assert!(answer["result"].is_object(), "{answer}");
    assert!(
        before.is_empty(),
        "the stray answer reached the client: {before:?}"
    );
    // From the client: answers to server requests that never were.
    for stray in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"roots": []}}),
        json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -1, "message": "no"}}),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}}),
    ] {
        proxy.send(stray).await;
    }
    proxy.send(req(json!(2), "ping", json!({}))).await;
    let next = proxy.recv().await;
    assert_eq!(next["id"], 2, "a stray answer was answered: {next}");
    still_alive(&mut proxy, json!(3)).await;
    let received = proxy.server_received().await;
    assert!(
        received
            .iter()
            .all(|m| m.get("result").is_none() && m.get("error").is_none()),
        "a stray answer reached the server: {received:?}"
    );
}

#[tokio::test]
async fn a_server_flooding_notifications_is_relayed_in_order_and_the_session_survives() {
    const FLOOD: u64 = 100_000;
    let mut proxy = Proxy::fake(&[], &["--flood", &FLOOD.to_string()]);
    proxy.initialize("2025-06-18").await;
    proxy.send(req(json!(1), "ping", json!({}))).await;
    let (answer, before) = proxy.recv_answer(&json!(1)).await;
    assert_eq!(answer["result"], json!({}));
    assert_eq!(before.len() as u64, FLOOD);
    for (i, note) in before.iter().enumerate() {
        assert_eq!(note["method"], "notifications/message");
        assert_eq!(note["params"]["data"], i as u64 + 1, "out of order");
    }
    still_alive(&mut proxy, json!(2)).await;
}

// === helpers on Proxy used only here ===

trait RecvAfter {
    async fn recv_answer_after(&mut self, msg: Value) -> (Value, Vec<Value>);
}

impl RecvAfter for Proxy {
    /// Sends `msg` and reads until its answer.
    async fn recv_answer_after(&mut self, msg: Value) -> (Value, Vec<Value>) {
        let id = msg["id"].clone();
        self.send(msg).await;
        self.recv_answer(&id).await
    }
}
