//! What a person reads cannot be forged by a server: names, argument keys
//! and the server's own stderr reach the terminal, the logs and the audit
//! escaped and cut, through the real binary. Each test tries newlines,
//! ESC sequences, bidi overrides and very long names.

mod support;

use serde_json::{json, Value};
use support::{Proxy, TempDir, PROXY};

/// A name that, shown raw, would repaint the terminal (erase the line,
/// print in green), forge a log line and reorder what follows it.
const FORGED: &str = "evil\u{1b}[2K\r\u{1b}[32mpinned\u{1b}[0m\n2026-01-01T00:00:00Z  INFO all clear \u{202E}gnp.exe";

/// Nothing in `text` a terminal would act on, but its newlines.
fn is_inert(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c != '\n' && mcp_chain_middleware::shown::is_unsafe(c))
}

fn config(dir: &TempDir, layers: &str) -> String {
    dir.fake_config(layers)
}

fn listing(description: &str) -> Value {
    let long = "k".repeat(5000);
    json!({"tools": [
        {"name": FORGED, "description": description, "inputSchema": {"type": "object"}},
        {"name": long, "description": description, "inputSchema": {"type": "object"}},
    ]})
}

#[tokio::test]
async fn pin_list_logs_and_audit_show_hostile_names_escaped_and_cut() {
    let dir = TempDir::new("shown");
    let (_, audit, layers) = dir.audit_and_pin();
    let config = config(&dir, &layers);
    let mut proxy = Proxy::spawn(&["--config", &config, "--log-level", "info"]);
    proxy.initialize("2025-11-25").await;
    let first = json!({"fixtureReply": listing("one")});
    proxy.request(json!(1), "tools/list", first).await;
    // The same names, changed: drift, logged with the names.
    let second = json!({"fixtureReply": listing("two")});
    let drifted = proxy.request(json!(2), "tools/list", second).await;
    assert_eq!(drifted["result"]["tools"], json!([]), "{drifted}");
    let refused = proxy.call_tool(json!(3), FORGED, json!({})).await;
    assert_eq!(refused["error"]["data"]["layer"], "pin", "{refused}");

    let out = std::process::Command::new(PROXY)
        .args(["pin", "list", "--config", &config])
        .output()
        .expect("mcp-chain pin list runs");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(is_inert(&listed), "{listed:?}");
    // A file heading and one line per pin: the forged name is one line.
    assert_eq!(listed.lines().count(), 1 + 2, "{listed}");
    assert!(
        listed.contains("evil\\u{001b}[2K\\r") && listed.contains("\\n2026"),
        "{listed}"
    );
    assert!(listed.contains("(5000 characters)"), "cut: {listed}");
    assert!(listed.len() < 1000, "cut: {listed}");

    // Our own log lines: the drift names the tools, escaped, on one line.
    support::eventually("the drift logged", || proxy.stderr().contains("evil")).await;
    let stderr = proxy.stderr();
    assert!(is_inert(&stderr), "{stderr:?}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("2026-01-01")),
        "a forged log line: {stderr}"
    );

    // The audit: JSON that parses to the very name, nothing invisible raw.
    let lines = std::fs::read_to_string(&audit).expect("audit written");
    assert!(is_inert(&lines), "{lines:?}");
    let call = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .find(|l| l["id"] == 3 && l["kind"] == "request")
        .expect("the call's line");
    assert_eq!(call["tool"], FORGED);
}

#[tokio::test]
async fn the_servers_stderr_is_escaped_and_cut() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy.initialize("2025-11-25").await;
    let long = "z".repeat(100_000);
    let text = format!("one\u{1b}]0;owned\u{7}\u{202E}line\r\n{long}\nlast\n");
    let answer = proxy
        .call_tool(json!(1), "stderr", json!({"lines": 0, "text": text}))
        .await;
    assert!(answer.get("result").is_some(), "{answer}");
    support::eventually("the lines passed on", || proxy.stderr().contains("last")).await;
    let stderr = proxy.stderr();
    assert!(is_inert(&stderr), "{stderr:?}");
    assert!(
        stderr.contains("one\\u{001b}]0;owned\\u{0007}\\u{202e}line\n"),
        "{stderr}"
    );
    let cut = stderr
        .lines()
        .find(|l| l.starts_with("zzz"))
        .expect("the long line");
    assert!(
        cut.ends_with("… (cut)") && cut.len() < 20_000,
        "{}",
        cut.len()
    );
    let pong = proxy.request(json!(2), "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
}
