//! `params` and `result`, parsed only when someone looks.
//!
//! Most messages cross mcp-chain without any layer reading their payload
//! (every message, with an empty chain). A [`Payload`] keeps the sender's
//! bytes and parses them on first access; a payload nobody read is written
//! back out as those same bytes, so a 10 MB result costs a copy, not a
//! parse and a re-encode. Once read, it is written from the parsed value:
//! what the peer receives is exactly what the layers checked (a duplicate
//! key cannot show a layer one thing and the server another).

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

/// A JSON value that may still be unparsed.
pub struct Payload {
    /// The sender's bytes, until the value is changed.
    raw: Option<Box<RawValue>>,
    /// The parsed value, once someone looked.
    value: OnceLock<Value>,
}

impl Payload {
    /// A payload as received. The bytes must parse: `Incoming::parse`
    /// checks the line ([`raw_safe`]) and its syntax before making one.
    pub(crate) fn raw(raw: Box<RawValue>) -> Self {
        Self {
            raw: Some(raw),
            value: OnceLock::new(),
        }
    }

    /// Takes the value out.
    pub fn into_value(mut self) -> Value {
        self.force();
        self.value.take().unwrap_or(Value::Null)
    }

    fn force(&self) -> &Value {
        self.value.get_or_init(|| match &self.raw {
            // Checked at parse time (syntax by RawValue, the rest by
            // `raw_safe`), so this cannot fail; Null is a safe floor.
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            None => Value::Null,
        })
    }

    /// Whether it is an object or an array, without parsing it.
    pub fn is_structured(&self) -> bool {
        match (self.value.get(), &self.raw) {
            (Some(v), _) => v.is_object() || v.is_array(),
            (None, Some(raw)) => matches!(raw.get().as_bytes().first(), Some(b'{' | b'[')),
            (None, None) => false,
        }
    }

    /// One member of an object, read without parsing the others, so a layer
    /// that needs only `isError` leaves a 10 MB result as the sender's
    /// bytes. `None` when this is not an object or has no such member; of
    /// duplicate keys the last counts, as when the whole is parsed.
    pub fn member(&self, name: &str) -> Option<Cow<'_, Value>> {
        match (self.value.get(), &self.raw) {
            (Some(value), _) => value.get(name).map(Cow::Borrowed),
            (None, Some(raw)) => {
                let mut de = serde_json::Deserializer::from_str(raw.get());
                Member(name)
                    .deserialize(&mut de)
                    .ok()
                    .flatten()
                    .map(Cow::Owned)
            }
            (None, None) => None,
        }
    }

    /// Whether the payload is still the sender's bytes, unread.
    pub fn is_untouched(&self) -> bool {
        self.value.get().is_none()
    }
}

/// Reads the member named `.0` of an object, skipping the others.
struct Member<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for Member<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Member<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Option<Value>, A::Error> {
        let mut found = None;
        while let Some(wanted) = access.next_key_seed(KeyIs(self.0))? {
            if wanted {
                found = Some(access.next_value()?);
            } else {
                access.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Whether a key is `.0`, compared without allocating.
struct KeyIs<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self {
            raw: None,
            value: OnceLock::from(value),
        }
    }
}

impl Deref for Payload {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.force()
    }
}

impl DerefMut for Payload {
    fn deref_mut(&mut self) -> &mut Value {
        self.force();
        // Changed (or about to be): the bytes no longer say what it holds.
        self.raw = None;
        self.value.get_mut().expect("forced just above")
    }
}

impl Clone for Payload {
    fn clone(&self) -> Self {
        Self {
            raw: self.raw.clone(),
            value: self.value.clone(),
        }
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Value> for Payload {
    fn eq(&self, other: &Value) -> bool {
        **self == *other
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.value.get(), &self.raw) {
            (Some(v), _) => v.fmt(f),
            (None, Some(raw)) => write!(f, "{}", raw.get()),
            (None, None) => f.write_str("null"),
        }
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.value.get(), &self.raw) {
            // Read by someone: write what they saw.
            (Some(v), _) => v.serialize(s),
            (None, Some(raw)) => raw.serialize(s),
            (None, None) => s.serialize_unit(),
        }
    }
}

/// Whether a line can take the raw path and come out as the parsed path
/// would have it: valid UTF-8, nested less deep than serde_json allows (128
/// levels; skipped raw bytes are not counted by it), and no `\uD800`-range
/// escape (serde_json rejects a lone surrogate only when it decodes). A line
/// that fails is parsed whole, so a bad one gets the same -32700 as before.
/// The line as text when it can.
///
/// Quick, conservative checks first (each a vectorized pass): fewer than 128
/// brackets in all cannot nest 128 deep, and no `\u` followed by `d` means
/// no such escape. Only a line that fails one is walked string by string.
pub(crate) fn raw_safe(line: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(line).ok()?;
    let maybe_deep = memchr::memchr2_iter(b'{', b'[', line)
        .nth(DEPTH_LIMIT - 1)
        .is_some();
    let maybe_surrogate = memchr::memchr_iter(b'\\', line).any(|at| surrogate_escape_at(line, at));
    if (maybe_deep || maybe_surrogate) && !walk_safe(line) {
        return None;
    }
    Some(text)
}

/// serde_json's nesting limit.
const DEPTH_LIMIT: usize = 128;

/// The exact check: nesting and escapes, string by string. Iterative: no
/// input can exhaust the stack.
fn walk_safe(line: &[u8]) -> bool {
    let (mut depth, mut i) = (0usize, 0);
    while i < line.len() {
        match line[i] {
            b'"' => {
                // Jump from quote or backslash to the next: long strings
                // (a 10 MB result) are scanned at memchr speed.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &line[i.min(line.len())..]) {
                        None => return true,
                        Some(at) if line[i + at] == b'"' => {
                            i += at;
                            break;
                        }
                        Some(at) => {
                            let escape = i + at;
                            if surrogate_escape_at(line, escape) {
                                return false;
                            }
                            i = escape + 2;
                        }
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth >= DEPTH_LIMIT {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    true
}

/// Whether the backslash at `at` starts a `\uD...` escape (the range that
/// holds the surrogates; the rest of it is rare enough to check whole).
fn surrogate_escape_at(line: &[u8], at: usize) -> bool {
    matches!(line.get(at + 1..at + 3), Some([b'u', b'd' | b'D']))
}
