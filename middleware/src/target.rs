//! What a request is about: the tool, resource, resource template or prompt
//! it names. Filter, rewrite, audit, rate limit and timeout all ask this, so
//! the answer lives in one place and every layer reads the same field (the
//! one the proxy forwards: the last of duplicate keys, see `message`).

use crate::message::{method, Message, Payload};
use serde_json::Value;
use std::fmt;

/// `completion/complete`'s `ref.type` for a prompt's argument.
pub const REF_PROMPT: &str = "ref/prompt";
/// `completion/complete`'s `ref.type` for a resource template's variable.
pub const REF_RESOURCE: &str = "ref/resource";

/// The item a request acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// `tools/call`: `params.name`.
    Tool(&'a str),
    /// `resources/read`, `resources/subscribe`, `resources/unsubscribe`:
    /// `params.uri`; also `notifications/resources/updated` from the server.
    Resource(&'a str),
    /// `prompts/get`: `params.name`; `completion/complete` with a `ref/prompt`.
    Prompt(&'a str),
    /// `completion/complete` with a `ref/resource`: `params.ref.uri`, a URI
    /// template (or a plain URI).
    ResourceTemplate(&'a str),
}

// === impl Target ===

impl<'a> Target<'a> {
    /// The target of a request or notification with this method and params.
    /// `None` when the method names no item, or the field is missing or not
    /// a string (the server will answer that with its own error).
    ///
    /// The field is read from the sender's bytes when they hold it plainly
    /// ([`Payload::str_member`]): a `tools/call` judged by its name keeps
    /// its arguments unparsed.
    pub fn of(method: &str, params: Option<&'a Payload>) -> Option<Self> {
        let params = params?;
        let field = |key: &str| params.str_member(key);
        match method {
            method::TOOLS_CALL => field("name").map(Self::Tool),
            method::RESOURCES_READ
            | method::RESOURCES_SUBSCRIBE
            | method::RESOURCES_UNSUBSCRIBE
            | method::NOTIFICATION_RESOURCES_UPDATED => field("uri").map(Self::Resource),
            method::PROMPTS_GET => field("name").map(Self::Prompt),
            method::COMPLETION_COMPLETE => completion_ref(params),
            _ => None,
        }
    }

    /// The target of a message (requests and notifications only).
    pub fn of_message(msg: &'a Message) -> Option<Self> {
        Self::of(msg.method()?, msg.payload())
    }

    /// The tool name, URI or prompt name.
    pub fn name(&self) -> &'a str {
        match *self {
            Self::Tool(s) | Self::Resource(s) | Self::Prompt(s) | Self::ResourceTemplate(s) => s,
        }
    }

    /// A word for logs and audit lines: `tool`, `resource`, `prompt`,
    /// `resource_template`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Tool(_) => "tool",
            Self::Resource(_) => "resource",
            Self::Prompt(_) => "prompt",
            Self::ResourceTemplate(_) => "resource_template",
        }
    }
}

impl fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind(), self.name())
    }
}

/// `params.ref` of `completion/complete`: `{"type":"ref/prompt","name":..}`
/// or `{"type":"ref/resource","uri":..}`.
fn completion_ref(params: &Value) -> Option<Target<'_>> {
    let r = params.get("ref")?;
    let field = |key: &str| r.get(key).and_then(Value::as_str);
    match field("type")? {
        REF_PROMPT => field("name").map(Target::Prompt),
        REF_RESOURCE => field("uri").map(Target::ResourceTemplate),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Incoming;
    use serde_json::json;

    /// Asserts what a request with these params is about, read both from
    /// the line as received and from params built as a value.
    fn check(method: &str, params: Value, expected: Option<Target<'_>>) {
        let line = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}).to_string();
        let Ok(Incoming::Single(Ok(received))) = Incoming::parse(line.as_bytes()) else {
            panic!("{line} parses");
        };
        let built = Message::request(1, method, Some(params));
        for msg in [&received, &built] {
            assert_eq!(Target::of_message(msg), expected, "{line}");
        }
    }

    #[test]
    fn names_the_item_of_each_method() {
        let call = json!({"name":"read","arguments":{}});
        check("tools/call", call, Some(Target::Tool("read")));
        for m in [
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe",
        ] {
            check(
                m,
                json!({"uri":"file:///a"}),
                Some(Target::Resource("file:///a")),
            );
        }
        check(
            "prompts/get",
            json!({"name":"g"}),
            Some(Target::Prompt("g")),
        );
    }

    #[test]
    fn completion_refs_name_a_prompt_or_a_template() {
        let p = json!({"ref":{"type":"ref/prompt","name":"g"},"argument":{"name":"n","value":"a"}});
        check("completion/complete", p, Some(Target::Prompt("g")));
        let r = json!({"ref":{"type":"ref/resource","uri":"file:///{path}"}});
        let expected = Some(Target::ResourceTemplate("file:///{path}"));
        check("completion/complete", r, expected);
        check("completion/complete", json!({"ref":{"type":"ref/x"}}), None);
    }

    #[test]
    fn missing_or_odd_fields_name_nothing() {
        check("tools/call", json!({"name":5}), None);
        check("tools/list", json!({}), None);
        check("prompts/get", json!([1]), None);
        assert_eq!(Target::of("tools/call", None), None);
    }

    #[test]
    fn kind_and_display() {
        assert_eq!(Target::Tool("x").to_string(), "tool x");
        let msg = Message::request(1, "prompts/get", Some(json!({"name":"g"})));
        assert_eq!(Target::of_message(&msg).map(|t| t.kind()), Some("prompt"));
    }
}
