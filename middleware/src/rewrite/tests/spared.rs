//! Personal-data presets through the layer, and `except_tools`: a rule
//! spares the calls of the tools it names (their arguments, results and
//! errors), and only those.

use super::*;

fn with(pattern: &str, except: &[&str]) -> RewriteConfig {
    RewriteConfig {
        redact: vec![RedactConfig {
            pattern: pattern.into(),
            except_tools: except.iter().map(|s| s.to_string()).collect(),
            ..RedactConfig::default()
        }],
        redact_arguments: true,
        ..RewriteConfig::default()
    }
}

#[tokio::test]
async fn a_rule_spares_the_tools_it_names_and_no_other() {
    let (mut svc, seen) = with("AKIA[0-9A-Z]{16}", &["billing_*", "re:^audit$"]).pipe();
    let call = |name: &str| json!({"name": name, "arguments": {"key": KEY}});
    let spared = result(&mut svc, "tools/call", call("billing_charge")).await;
    assert_eq!(spared["content"][0]["text"], format!("key {KEY}"));
    assert_eq!(
        last_params(&seen)["arguments"]["key"],
        KEY,
        "its arguments too"
    );
    let spared = result(&mut svc, "tools/call", call("audit")).await;
    assert_eq!(spared["content"][0]["text"], format!("key {KEY}"));
    for other in ["list_dir", "audits", "my_billing_charge"] {
        let r = result(&mut svc, "tools/call", call(other)).await;
        assert_eq!(r["content"][0]["text"], "key [REDACTED]", "{other}");
        assert_eq!(
            last_params(&seen)["arguments"]["key"],
            "[REDACTED]",
            "{other}"
        );
    }
    // Not a tool call: no tool to spare.
    let r = result(&mut svc, "resources/read", json!({"uri": "f://a"})).await;
    assert_eq!(r["contents"][0]["text"], "[REDACTED]");
}

#[test]
fn a_bad_except_pattern_names_its_key() {
    let error = with("@card", &["re:("]).validate().expect_err("refused");
    assert!(
        error.to_string().starts_with("redact[0].except_tools[0]: "),
        "{error}"
    );
    let error = with("@passport", &[]).validate().expect_err("refused");
    assert!(
        error.to_string().contains("@iban"),
        "lists the presets: {error}"
    );
}

#[tokio::test]
async fn a_card_is_redacted_only_when_its_check_holds() {
    let (mut svc, seen) = with("@card", &[]).pipe();
    let args = json!({"name": "pay", "arguments": {
        "card": "4111 1111 1111 1111", "order": "4111 1111 1111 1112", "note": "ref 20261127000001"}});
    result(&mut svc, "tools/call", args).await;
    let sent = last_params(&seen)["arguments"].clone();
    assert_eq!(sent["card"], "[REDACTED]");
    assert_eq!(
        sent["order"], "4111 1111 1111 1112",
        "fails Luhn: not a card"
    );
    assert_eq!(sent["note"], "ref 20261127000001");
}

trait Pipe {
    fn pipe(self) -> (Rewrite<Peer>, Seen);
}

impl Pipe for RewriteConfig {
    fn pipe(self) -> (Rewrite<Peer>, Seen) {
        rewrite(self)
    }
}
