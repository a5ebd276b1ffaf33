//! What a request is about: the tool, resource, resource template or prompt
//! it names. Filter, rewrite, audit, rate limit and timeout all ask this, so
//! the answer lives in one place and every layer reads the same field, from
//! the same parse that is forwarded (the last of duplicate keys).
//!
//! A method that names an item but whose item cannot be read (no params,
//! params not an object, the name missing or not a string) is an
//! [`Unreadable`] error, not "no target": a layer that judges items refuses
//! it rather than letting it pass unjudged.

use crate::message::{method, Message};
use crate::payload::{Payload, Unreadable};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// `completion/complete`'s `ref.type` for a prompt's argument.
pub const REF_PROMPT: &str = "ref/prompt";
/// `completion/complete`'s `ref.type` for a resource template's variable.
pub const REF_RESOURCE: &str = "ref/resource";

/// The item a request acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target<'a> {
    /// `tools/call`: `params.name`.
    Tool(Cow<'a, str>),
    /// `resources/read`, `resources/subscribe`, `resources/unsubscribe`:
    /// `params.uri`; also `notifications/resources/updated` from the server.
    Resource(Cow<'a, str>),
    /// `prompts/get`: `params.name`; `completion/complete` with a `ref/prompt`.
    Prompt(Cow<'a, str>),
    /// `completion/complete` with a `ref/resource`: `params.ref.uri`, a URI
    /// template (or a plain URI).
    ResourceTemplate(Cow<'a, str>),
}

/// Which kind of item a method names, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Resource,
    Prompt,
    /// `completion/complete`: a prompt or a resource template, as its
    /// `ref` says.
    Completion,
}

impl Kind {
    pub fn of(method: &str) -> Option<Self> {
        Some(match method {
            method::TOOLS_CALL => Self::Tool,
            method::RESOURCES_READ
            | method::RESOURCES_SUBSCRIBE
            | method::RESOURCES_UNSUBSCRIBE
            | method::NOTIFICATION_RESOURCES_UPDATED => Self::Resource,
            method::PROMPTS_GET => Self::Prompt,
            method::COMPLETION_COMPLETE => Self::Completion,
            _ => return None,
        })
    }
}

// === impl Target ===

impl<'a> Target<'a> {
    /// The target of a request or notification with this method and params.
    /// `Ok(None)` when the method names no item (or a `completion/complete`
    /// ref of a type this code does not know). `Err` when it names one that
    /// cannot be read.
    pub fn of(method: &str, params: Option<&'a Payload>) -> Result<Option<Self>, Unreadable> {
        let Some(kind) = Kind::of(method) else {
            return Ok(None);
        };
        let params = params.ok_or_else(|| Unreadable::new("params missing"))?;
        let field = |key: &str| -> Result<Cow<'a, str>, Unreadable> {
            let read = params.str_member(key).map_err(in_params)?;
            read.ok_or_else(|| Unreadable::new(format!("params.{key} missing")))
        };
        Ok(Some(match kind {
            Kind::Tool => Self::Tool(field("name")?),
            Kind::Resource => Self::Resource(field("uri")?),
            Kind::Prompt => Self::Prompt(field("name")?),
            Kind::Completion => return completion_ref(params),
        }))
    }

    /// The target of a message (requests and notifications only).
    pub fn of_message(msg: &'a Message) -> Result<Option<Self>, Unreadable> {
        match msg.method() {
            Some(method) => Self::of(method, msg.params()),
            None => Ok(None),
        }
    }

    /// The tool name, URI or prompt name.
    pub fn name(&self) -> &str {
        match self {
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

fn in_params(e: Unreadable) -> Unreadable {
    Unreadable::new(format!("params: {e}"))
}

/// `params.ref` of `completion/complete`: `{"type":"ref/prompt","name":..}`
/// or `{"type":"ref/resource","uri":..}`.
fn completion_ref(params: &Payload) -> Result<Option<Target<'static>>, Unreadable> {
    let r = params.member("ref").map_err(in_params)?;
    let r = r.ok_or_else(|| Unreadable::new("params.ref missing"))?;
    let field = |key: &str| match r.get(key) {
        Some(Value::String(s)) => Ok(Cow::<str>::Owned(s.clone())),
        _ => Err(Unreadable::new(format!("params.ref.{key} is not a string"))),
    };
    Ok(match field("type")?.as_ref() {
        REF_PROMPT => Some(Target::Prompt(field("name")?)),
        REF_RESOURCE => Some(Target::ResourceTemplate(field("uri")?)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Incoming;
    use serde_json::json;

    /// Asserts what a request with these params is about, read both from
    /// the line as received and from params built as a value.
    fn check(method: &str, params: Value, expected: Result<Option<Target<'_>>, ()>) {
        let line = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}).to_string();
        let Ok(Incoming::Single(Ok(received))) = Incoming::parse(line.as_bytes()) else {
            panic!("{line} parses");
        };
        let built = Message::request(1, method, Some(params));
        for msg in [&received, &built] {
            assert_eq!(Target::of_message(msg).map_err(|_| ()), expected, "{line}");
        }
    }

    fn tool(name: &str) -> Target<'_> {
        Target::Tool(Cow::Borrowed(name))
    }

    #[test]
    fn names_the_item_of_each_method() {
        let call = json!({"name":"read","arguments":{}});
        check("tools/call", call, Ok(Some(tool("read"))));
        for m in [
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe",
        ] {
            let expected = Target::Resource("file:///a".into());
            check(m, json!({"uri":"file:///a"}), Ok(Some(expected)));
        }
        let expected = Target::Prompt("g".into());
        check("prompts/get", json!({"name":"g"}), Ok(Some(expected)));
    }

    #[test]
    fn the_last_of_duplicate_names_counts_and_escapes_are_decoded() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","na\u006de":"evil"}}"#;
        let Ok(Incoming::Single(Ok(msg))) = Incoming::parse(line) else {
            panic!("parses");
        };
        assert_eq!(Target::of_message(&msg), Ok(Some(tool("evil"))));
    }

    #[test]
    fn completion_refs_name_a_prompt_or_a_template() {
        let p = json!({"ref":{"type":"ref/prompt","name":"g"},"argument":{"name":"n","value":"a"}});
        check(
            "completion/complete",
            p,
            Ok(Some(Target::Prompt("g".into()))),
        );
        let r = json!({"ref":{"type":"ref/resource","uri":"file:///{path}"}});
        let expected = Target::ResourceTemplate("file:///{path}".into());
        check("completion/complete", r, Ok(Some(expected)));
        check(
            "completion/complete",
            json!({"ref":{"type":"ref/x"}}),
            Ok(None),
        );
    }

    #[test]
    fn an_item_that_cannot_be_read_is_an_error_not_nothing() {
        check("tools/call", json!({"name":5}), Err(()));
        check("tools/call", json!({"arguments":{}}), Err(()));
        check("prompts/get", json!([1]), Err(()));
        check("resources/read", json!({"uri":null}), Err(()));
        check("completion/complete", json!({"ref":"x"}), Err(()));
        check("completion/complete", json!({}), Err(()));
        check("tools/list", json!({}), Ok(None));
        assert!(Target::of("tools/call", None).is_err());
        assert_eq!(Target::of("ping", None), Ok(None));
    }

    #[test]
    fn kind_and_display() {
        assert_eq!(tool("x").to_string(), "tool x");
        let msg = Message::request(1, "prompts/get", Some(json!({"name":"g"})));
        let target = Target::of_message(&msg).ok().flatten();
        assert_eq!(target.map(|t| t.kind()), Some("prompt"));
    }
}
