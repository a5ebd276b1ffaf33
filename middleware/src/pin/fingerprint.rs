//! What is pinned of a listed definition: one SHA-256 per field that can
//! change what a model is told or allowed (the description, the schemas,
//! the annotations), of the field's JSON with object keys sorted, so a
//! server that writes the same definition in another key order or spacing
//! has not changed it.

use crate::message::method;
use crate::payload::{Item, Unreadable};
use serde_json::Value;
use std::collections::BTreeMap;

/// Field name → `"sha256:…"`. A field the definition leaves out has no
/// entry, so a field added or removed is a change.
pub(crate) type Fields = BTreeMap<String, String>;

/// Field name → its JSON text (keys sorted), cut at [`TEXT_AT_MOST`]: what
/// the pin file keeps beside the fingerprints so a person can compare the
/// pinned and the new definition (the fingerprints alone decide).
pub(crate) type Texts = BTreeMap<String, String>;

/// The most of one field's text kept for a person to read.
const TEXT_AT_MOST: usize = 16 * 1024;

/// One listed definition as the pins judge it: its key, fingerprints and
/// texts.
pub(crate) type Seen = (String, Fields, Texts);

/// The kinds of listed definitions pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Template,
}

impl Kind {
    pub(crate) const ALL: [Kind; 3] = [Kind::Tool, Kind::Prompt, Kind::Template];

    /// The kind a listing method lists.
    pub(crate) fn listed_by(list_method: &str) -> Option<Self> {
        Some(match list_method {
            method::TOOLS_LIST => Self::Tool,
            method::PROMPTS_LIST => Self::Prompt,
            method::RESOURCES_TEMPLATES_LIST => Self::Template,
            _ => return None,
        })
    }

    /// The kind a server's list-changed notification is about (resources'
    /// covers the templates).
    pub(crate) fn changed_by(notification: &str) -> Option<Self> {
        Kind::ALL
            .into_iter()
            .find(|kind| kind.list_changed() == notification)
    }

    /// The listing's member holding the items, and the section of the pin
    /// file.
    pub(crate) fn section(self) -> &'static str {
        match self {
            Self::Tool => "tools",
            Self::Prompt => "prompts",
            Self::Template => "resourceTemplates",
        }
    }

    /// The member an item is known by.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::Tool | Self::Prompt => "name",
            Self::Template => "uriTemplate",
        }
    }

    /// The fields fingerprinted.
    fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Tool => &[
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations",
            ],
            Self::Prompt => &["title", "description", "arguments"],
            Self::Template => &["name", "title", "description", "mimeType"],
        }
    }

    /// In words, for messages.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Template => "resource template",
        }
    }

    /// The notification that tells a client its view of this kind changed.
    pub(crate) fn list_changed(self) -> &'static str {
        match self {
            Self::Tool => "notifications/tools/list_changed",
            Self::Prompt => "notifications/prompts/list_changed",
            Self::Template => "notifications/resources/list_changed",
        }
    }
}

/// The key and the fingerprinted fields of one listed item. `Err` when it
/// cannot be read (not an object, no key, a field unreadable): a guard
/// cannot vouch for what it cannot read.
pub(crate) fn of_item(kind: Kind, item: &Item<'_>) -> Result<Seen, Unreadable> {
    let key = match item.try_member(kind.key())? {
        Some(Value::String(key)) => key,
        _ => {
            return Err(Unreadable::new(format!(
                "a {} without a string \"{}\"",
                kind.word(),
                kind.key()
            )))
        }
    };
    let mut fields = Fields::new();
    let mut texts = Texts::new();
    for &field in kind.fields() {
        if let Some(value) = item.try_member(field)? {
            let mut text = Vec::new();
            canonical(&value, &mut text);
            let sum = <sha2::Sha256 as sha2::Digest>::digest(&text);
            fields.insert(field.to_owned(), hex_digest(&sum));
            texts.insert(
                field.to_owned(),
                cut(String::from_utf8_lossy(&text).into_owned()),
            );
        }
    }
    Ok((key, fields, texts))
}

/// `text`, cut at [`TEXT_AT_MOST`] bytes (on a character) with a mark.
fn cut(mut text: String) -> String {
    if text.len() > TEXT_AT_MOST {
        let mut at = TEXT_AT_MOST;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let length = text.len();
        text.truncate(at);
        text.push_str(&format!("… ({length} bytes in all)"));
    }
    text
}

fn hex_digest(sum: &[u8]) -> String {
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in sum {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// `sha256:` and the hex digest of `value` written with sorted keys.
pub(crate) fn digest(value: &Value) -> String {
    let mut text = Vec::new();
    canonical(value, &mut text);
    hex_digest(&<sha2::Sha256 as sha2::Digest>::digest(&text))
}

/// `value` as JSON with every object's keys in sorted order.
fn canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut members: Vec<_> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (n, (key, value)) in members.into_iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_json(&Value::String(key.clone()), out);
                out.push(b':');
                canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_json(scalar, out),
    }
}

fn write_json(value: &Value, out: &mut Vec<u8>) {
    // A scalar into a Vec: cannot fail.
    serde_json::to_writer(out, value).expect("a JSON scalar serializes");
}

/// The fields whose fingerprints differ between `pinned` and `seen`
/// (present in one only, or different), in order.
pub(crate) fn changed(pinned: &Fields, seen: &Fields) -> Vec<String> {
    let mut names: Vec<&String> = pinned.keys().chain(seen.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| pinned.get(*name) != seen.get(*name))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_spacing_do_not_change_a_digest() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"q": 2, "p": 1}], "x": null}}"#)
                .expect("json");
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[1,{"p":1,"q":2}]},"b":1}"#).expect("json");
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(
            digest(&a),
            digest(&json!({"a": {"x": null, "y": [1]}, "b": 1}))
        );
        assert_ne!(digest(&json!("x")), digest(&json!("x ")));
        assert_eq!(digest(&json!("x")).len(), 7 + 64);
    }

    #[test]
    fn changed_names_fields_added_removed_and_different() {
        let pinned: Fields = [("a", "1"), ("b", "2"), ("c", "3")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into();
        let seen: Fields = [("b", "2"), ("c", "x"), ("d", "4")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into();
        assert_eq!(changed(&pinned, &seen), ["a", "c", "d"]);
        assert!(changed(&pinned, &pinned).is_empty());
    }
}
