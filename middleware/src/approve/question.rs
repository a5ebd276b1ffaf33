//! What the user is asked, and how their answer is read: an
//! `elicitation/create` form with one choice, and the proof a 2026-07-28
//! retry carries that the question was this call's.

use crate::pin::fingerprint::digest;
use hmac::{KeyInit, Mac};
use serde_json::{json, Map, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The key of mcp-chain's question in `inputRequests` / `inputResponses`.
pub(super) const INPUT_KEY: &str = "mcp-chain-approve";

/// The prefix of the `requestState` mcp-chain hands a 2026-07-28 client.
const STATE_PREFIX: &str = "mcp-chain-approve.1.";

/// How many arguments the question shows, and how much of each.
const SHOWN_ARGUMENTS: usize = 10;
const SHOWN_CHARS: usize = 120;

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    AllowOnce,
    AllowSession,
    /// Allowed from now on (`remember = "always"`): a lasting grant.
    AllowAlways,
    /// Refused, with the reason in `data.reason`.
    Refused(&'static str),
}

/// The `elicitation/create` params asking whether `tool` may run with
/// `arguments`. `session`: offer "Allow for this session". `titled`: the
/// client speaks 2025-11-25 or later (`oneOf` with titles; earlier ones
/// read `enum` with `enumNames`).
pub(super) fn elicitation(
    tool: &str,
    server: Option<&str>,
    arguments: &Value,
    session: bool,
    always: bool,
    titled: bool,
) -> Value {
    let mut choices = vec![("allow_once", "Allow once")];
    if session {
        choices.push(("allow_session", "Allow for this session"));
    }
    if always {
        choices.push(("allow_always", "Always"));
    }
    choices.push(("deny", "Deny"));
    let mut decision = json!({"type": "string", "title": "Decision"});
    if titled {
        decision["oneOf"] = choices
            .iter()
            .map(|(value, title)| json!({"const": value, "title": title}))
            .collect();
    } else {
        decision["enum"] = choices.iter().map(|(value, _)| json!(value)).collect();
        decision["enumNames"] = choices.iter().map(|(_, title)| json!(title)).collect();
    }
    json!({
        "mode": "form",
        "message": format!(
            "Allow the tool {}{} to run?\n{}",
            shown_json(&Value::String(tool.to_owned())),
            server.map(|s| format!(" of the server {}", shown_json(&Value::String(s.to_owned())))).unwrap_or_default(),
            summary(arguments)
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {"decision": decision},
            "required": ["decision"],
        },
    })
}

/// The arguments as a person reads them: one line each, keys and values
/// as JSON (a key cannot hold a newline or pass for the dialog's own
/// text), invisible characters escaped, both cut.
fn summary(arguments: &Value) -> String {
    let Value::Object(map) = arguments else {
        return "No arguments.".to_owned();
    };
    if map.is_empty() {
        return "No arguments.".to_owned();
    }
    let mut out = String::from("Arguments:");
    for (key, value) in map.iter().take(SHOWN_ARGUMENTS) {
        let key = shown_json(&Value::String(key.clone()));
        out += &format!("\n  {key} = {}", shown_json(value));
    }
    if map.len() > SHOWN_ARGUMENTS {
        out += &format!("\n  … and {} more", map.len() - SHOWN_ARGUMENTS);
    }
    out
}

/// `value` as JSON, defanged and cut to [`SHOWN_CHARS`].
fn shown_json(value: &Value) -> String {
    let text = crate::shown::defanged(&value.to_string()).into_owned();
    if text.chars().count() <= SHOWN_CHARS {
        return text;
    }
    let cut: String = text.chars().take(SHOWN_CHARS).collect();
    format!("{cut}… ({} characters)", text.chars().count())
}

/// Reads an `ElicitResult`. Anything but an accepted allow is a refusal.
pub(super) fn answer_of(result: &Value, session: bool, always: bool) -> Answer {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => {}
        Some("decline") => return Answer::Refused("declined"),
        Some("cancel") => return Answer::Refused("cancelled"),
        _ => return Answer::Refused("unreadable"),
    }
    match result.pointer("/content/decision").and_then(Value::as_str) {
        Some("allow_once") => Answer::AllowOnce,
        Some("allow_session") if session => Answer::AllowSession,
        Some("allow_always") if always => Answer::AllowAlways,
        Some("deny") => Answer::Refused("denied"),
        _ => Answer::Refused("unreadable"),
    }
}

/// Whether the client can be asked: an `elicitation` capability that
/// offers form mode (`{}` means form, as the specification says).
pub(super) fn can_ask(elicitation: Option<&Value>) -> bool {
    match elicitation {
        Some(Value::Object(modes)) => modes.is_empty() || modes.contains_key("form"),
        _ => false,
    }
}

/// What a 2026-07-28 `requestState` of mcp-chain's says, once its MAC
/// checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct State {
    /// The user allowed the call; the retry goes to the server.
    pub(super) approved: bool,
    /// The server's own `requestState`, handed back to it.
    pub(super) server: Option<String>,
}

/// Signs and checks the states: a key drawn when the layer is built, so a
/// state cannot be made outside this process, nor moved to another call.
pub(super) struct Seal {
    key: [u8; KEY_BYTES],
    /// How long a question may stay open.
    ttl: Duration,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal")
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The HMAC-SHA256 key's size: the hash's block size.
const KEY_BYTES: usize = 64;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

impl Seal {
    /// HMAC-SHA256 of `bytes` under the key, ready to finish or verify.
    fn mac(&self, bytes: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes a key of any size");
        mac.update(bytes);
        mac
    }

    pub(super) fn new(ttl: Duration) -> Self {
        let mut key = [0u8; KEY_BYTES];
        getrandom::fill(&mut key).expect("the OS has randomness");
        Self { key, ttl }
    }

    /// A state for this call (`tool` with `arguments`).
    pub(super) fn state(&self, tool: &str, arguments: &Value, state: &State) -> String {
        let expiry = now_secs() + self.ttl.as_secs().max(1);
        let server = state.server.as_deref().unwrap_or("");
        let signed = signed(tool, arguments, state.approved, expiry, server);
        let mac = self.mac(signed.as_bytes()).finalize().into_bytes();
        let mut out = format!("{STATE_PREFIX}{}.{expiry}.", u8::from(state.approved));
        for byte in mac.iter() {
            out += &format!("{byte:02x}");
        }
        if let Some(server) = &state.server {
            out.push('.');
            out += server;
        }
        out
    }

    /// Reads a state: `None` when it is not mcp-chain's; `Err` when it is
    /// but was altered, made for another call, or has expired.
    pub(super) fn open(
        &self,
        text: &str,
        tool: &str,
        arguments: &Value,
    ) -> Option<Result<State, &'static str>> {
        let rest = text.strip_prefix(STATE_PREFIX)?;
        let mut parts = rest.splitn(4, '.');
        let (Some(approved), Some(expiry), Some(mac)) = (parts.next(), parts.next(), parts.next())
        else {
            return Some(Err("altered"));
        };
        let server = parts.next();
        let (Ok(expiry), Some(mac), approved) = (expiry.parse::<u64>(), hex(mac), approved == "1")
        else {
            return Some(Err("altered"));
        };
        let signed = signed(tool, arguments, approved, expiry, server.unwrap_or(""));
        // Compared in constant time.
        if self.mac(signed.as_bytes()).verify_slice(&mac).is_err() {
            return Some(Err("altered"));
        }
        if expiry < now_secs() {
            return Some(Err("expired"));
        }
        Some(Ok(State {
            approved,
            server: server.map(str::to_owned),
        }))
    }
}

/// What a state's MAC covers: the call (tool, arguments), the decision,
/// the expiry, the server's own state.
fn signed(tool: &str, arguments: &Value, approved: bool, expiry: u64, server: &str) -> String {
    // The tool's length first: no name can run into the fields after it.
    format!(
        "{}:{tool}\0{}\0{}\0{expiry}\0{server}",
        tool.len(),
        digest(arguments),
        u8::from(approved)
    )
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The `_meta` member of request params, when it is an object.
pub(super) fn meta(params: &Map<String, Value>) -> Option<&Map<String, Value>> {
    params.get("_meta").and_then(Value::as_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(tool: &str, arguments: Value) -> String {
        let question = elicitation(tool, None, &arguments, true, false, true);
        question["message"].as_str().expect("a message").to_owned()
    }

    #[test]
    fn always_is_offered_and_read_only_where_the_rule_says() {
        let offered = elicitation("t", Some("files"), &json!({}), true, true, true);
        let message = offered["message"].as_str().unwrap();
        assert!(
            message.starts_with("Allow the tool \"t\" of the server \"files\" to run?"),
            "{message}"
        );
        let titles: Vec<&str> = offered
            .pointer("/requestedSchema/properties/decision/oneOf")
            .and_then(Value::as_array)
            .expect("choices")
            .iter()
            .filter_map(|c| c["title"].as_str())
            .collect();
        assert_eq!(
            titles,
            ["Allow once", "Allow for this session", "Always", "Deny"]
        );
        let always = json!({"action": "accept", "content": {"decision": "allow_always"}});
        assert_eq!(answer_of(&always, true, true), Answer::AllowAlways);
        assert_eq!(
            answer_of(&always, true, false),
            Answer::Refused("unreadable"),
            "a choice that was not offered allows nothing"
        );
    }

    #[test]
    fn what_the_call_chose_cannot_forge_the_question() {
        // A key that ends the dialog early and pushes the real arguments
        // out of view reads as one quoted line.
        let forged = format!("x\n\nNo arguments.{}", "\n".repeat(200));
        let text = message(
            "rm\u{1b}[2K",
            json!({forged.clone(): 1, "path": "/etc/passwd"}),
        );
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(
            text.starts_with("Allow the tool \"rm\\u001b[2K\" to run?"),
            "{text}"
        );
        assert!(text.contains("\"path\" = \"/etc/passwd\""), "{text}");
        assert!(
            !text.contains("\u{1b}") && !text.contains("\nNo arguments."),
            "{text}"
        );
        // Bidi overrides and a very long key: escaped, and cut.
        let long = format!("a\u{202E}{}", "k".repeat(5000));
        let text = message("t", json!({long: "v\u{2066}"}));
        let raw = text
            .chars()
            .filter(|c| *c != '\n')
            .any(crate::shown::is_unsafe);
        assert!(!raw && text.lines().count() == 3, "{text}");
        assert!(
            text.contains("\\u{202e}") && text.contains("\\u{2066}"),
            "{text}"
        );
        assert!(
            text.contains("(5011 characters)") && text.len() < 400,
            "{text}"
        );
    }
}
