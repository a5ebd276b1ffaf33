//! The adversarial suite: bypass attempts against `filter` and `rewrite`,
//! through the real binary in front of the recording fixture server, as an
//! attacker would try them (docs/reliability.md keeps the table of
//! classes). After every attempt, two things must hold, judged by a
//! lenient oracle (`oracle.rs`) rather than by mcp-chain's own code:
//! nothing denied reached the server, and nothing hidden reached the
//! client.

#[path = "../support/mod.rs"]
mod support;

mod attempts;
mod oracle;

use attempts::{Answer, Attempt};
use serde_json::{json, Value};
use support::{Proxy, TempDir, FAKE};

const CONFIG: &str = r#"
[[middleware]]
type = "filter"
tools = { deny = ["crash", "garbage", "env*"] }
resources = { deny = ["file:///etc/**", "mem://secret/**", "file:///logs/**"] }
prompts = { deny = ["secret_prompt"] }
methods = { deny = ["sampling/createMessage", "roots/list", "logging/setLevel"] }

[[middleware]]
type = "rewrite"
[[middleware.redact]]
pattern = "AKIA[0-9A-Z]{16}"
"#;

/// Sends one attempt and reads until its answer; every message read is
/// kept in `seen`. Returns the answer.
async fn attempt(proxy: &mut Proxy, a: &Attempt, seen: &mut Vec<Value>) -> Value {
    proxy.send_raw(format!("{}\n", a.line).as_bytes()).await;
    loop {
        let msg = proxy.recv().await;
        seen.push(msg.clone());
        let done = match &a.answer {
            Answer::Id(id) => {
                msg.get("id") == Some(id)
                    && (msg.get("result").is_some() || msg.get("error").is_some())
            }
            Answer::Batch => msg.is_array(),
        };
        if done {
            return msg;
        }
    }
}

#[tokio::test]
async fn nothing_denied_reaches_the_server_and_nothing_hidden_reaches_the_client() {
    let dir = TempDir::new("adversarial");
    let path = dir.write(
        "c.toml",
        &format!("[upstream]\ncommand = {FAKE:?}\n{CONFIG}"),
    );
    let mut proxy = Proxy::spawn(&["--config", &path]);
    proxy.initialize("2025-11-25").await;
    let attempts = attempts::all();
    let mut seen = Vec::new();
    let mut answers = std::collections::HashMap::new();
    for a in &attempts {
        let answer = attempt(&mut proxy, a, &mut seen).await;
        if let Answer::Id(id) = &a.answer {
            answers.insert(id.as_str().unwrap_or_default().to_owned(), answer);
        }
    }
    let received = proxy.server_received().await;
    let mut failures = Vec::new();
    for msg in &received {
        if let Some(why) = oracle::server_must_not_get(msg) {
            failures.push(format!("the server got {why}: {msg}"));
        }
    }
    for msg in &seen {
        if let Some(why) = oracle::client_must_not_see(msg) {
            failures.push(format!("the client saw {why}: {msg}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} bypasses:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // The suite is as large as promised, in every class.
    let mut classes = std::collections::BTreeMap::new();
    for a in &attempts {
        *classes.entry(a.class).or_insert(0) += 1;
    }
    assert!(
        attempts.len() >= 60,
        "{} attempts: {classes:?}",
        attempts.len()
    );
    assert_eq!(classes.len(), 9, "{classes:?}");

    // And the allowed controls did get through: the checks above are not
    // passing because nothing reached anyone.
    let called = |name: &str| {
        received
            .iter()
            .any(|m| m["method"] == "tools/call" && m["params"]["name"] == name)
    };
    assert!(called("echo") && called("ask") && called("send"));
    assert_eq!(
        answers["t26"]["result"]["structuredContent"]["received"]["arguments"]["name"],
        "crash"
    );
    // A result left asking only for denied input is refused; a pruned
    // listing is private to this caller; the hidden spellings were refused.
    assert_eq!(answers["e3"]["error"]["code"], 403, "{}", answers["e3"]);
    assert_eq!(answers["e4"]["error"]["data"]["reason"], "unreadable");
    assert_eq!(answers["l0"]["result"]["cacheScope"], "private");
    assert_eq!(answers["l0"]["result"]["tools"], json!([{"name": "echo"}]));
    for i in 0..attempts::HIDDEN_URIS.len() {
        let answer = &answers[&format!("u{i}")];
        assert_eq!(answer["error"]["code"], -32002, "u{i}: {answer}");
    }
}
