//! `restart = "on-failure"`: the client keeps its session across a crash.

mod support;

use serde_json::{json, Value};
use support::{call, Proxy, TempDir, FAKE};

fn config(dir: &TempDir, command: &str, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    dir.write(
        "c.toml",
        &format!(
            "[upstream]\ncommand = {command:?}\nargs = [{}]\nrestart = \"on-failure\"\nrestart_backoff = \"50ms\"\n{extra}\n",
            args.join(", ")
        ),
    )
}

#[tokio::test]
async fn a_crash_is_survived_and_the_handshake_replayed() {
    let dir = TempDir::new("restart");
    let mut proxy = Proxy::spawn(&["--config", &config(&dir, FAKE, &[], "")]);
    proxy.initialize("2025-06-18").await;
    proxy
        .send(call(json!("pending"), "delay", json!({"ms": 60_000})))
        .await;
    proxy.send(call(json!("boom"), "crash", json!({}))).await;

    // Both requests in flight are answered at once with -32000.
    let mut answered = Vec::new();
    let mut notes = Vec::new();
    while answered.len() < 2 || notes.len() < 3 {
        let msg = proxy.recv().await;
        if msg.get("id").is_some() {
            assert_eq!(msg["error"]["code"], -32000, "{msg}");
            answered.push(msg["id"].clone());
        } else {
            notes.push(msg["method"].as_str().unwrap_or("").to_owned());
        }
    }
    answered.sort_by_key(Value::to_string);
    assert_eq!(answered, [json!("boom"), json!("pending")]);
    // The fake declares tools, prompts and resources: all three are announced.
    notes.sort();
    assert_eq!(
        notes,
        [
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
            "notifications/tools/list_changed"
        ]
    );

    // The session goes on with the new server, which got the same handshake.
    let answer = proxy
        .call_tool(json!(3), "echo", json!({"after": "restart"}))
        .await;
    assert!(answer["result"].is_object(), "{answer}");
    let received = proxy.server_received().await;
    assert_eq!(received[0]["method"], "initialize");
    assert_eq!(received[0]["params"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        received[0]["params"]["clientInfo"]["name"],
        "mcp-chain-tests"
    );
    assert_ne!(
        received[0]["id"],
        json!("init"),
        "the client's id must not be reused"
    );
    assert_eq!(received[1]["method"], "notifications/initialized");
    assert_eq!(received[2]["method"], "tools/call");

    let (status, rest) = proxy.finish().await;
    assert!(status.success(), "{}", proxy.stderr());
    // The replayed initialize's answer never reached the client.
    assert!(rest.is_empty(), "{rest:?}");
}

#[tokio::test]
async fn requests_while_the_server_restarts_get_a_clear_503() {
    let dir = TempDir::new("restart-503");
    let path = config(&dir, FAKE, &[], "");
    let text = std::fs::read_to_string(&path)
        .expect("config")
        .replace("50ms", "2s");
    std::fs::write(&path, text).expect("write");
    let mut proxy = Proxy::spawn(&["--config", &path]);
    proxy.initialize("2025-11-25").await;
    let crash = proxy.call_tool(json!("boom"), "crash", json!({})).await;
    assert_eq!(crash["error"]["code"], -32000);
    let during = proxy.request(json!("during"), "ping", json!({})).await;
    assert_eq!(during["error"]["code"], 503, "{during}");
    assert_eq!(during["error"]["data"]["reason"], "restarting");
    assert!(during["error"]["data"]["retryAfterMs"].is_u64());
    assert!(during["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("mcp-chain"));
}

#[tokio::test]
async fn a_server_that_keeps_failing_is_given_up_on() {
    let dir = TempDir::new("restart-give-up");
    let path = config(&dir, "sh", &["-c", "exit 3"], "max_restarts = 2");
    let mut proxy = Proxy::spawn(&["--config", &path]);
    let status = proxy.wait().await;
    assert_eq!(status.code(), Some(1));
    let stderr = proxy.stderr();
    let last = stderr
        .lines()
        .rfind(|l| l.starts_with("mcp-chain:"))
        .unwrap_or_default();
    assert!(last.contains("restarted 2 times"), "{stderr}");
}

#[tokio::test]
async fn a_clean_exit_is_not_restarted() {
    let dir = TempDir::new("restart-clean");
    let path = config(&dir, FAKE, &["--exit-after-ms", "100"], "");
    let mut proxy = Proxy::spawn(&["--config", &path]);
    assert_eq!(proxy.wait().await.code(), Some(1));
    assert!(
        !proxy.stderr().contains("restarting it"),
        "{}",
        proxy.stderr()
    );
}
