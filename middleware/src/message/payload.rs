//! `params` and `result`, parsed only when someone looks.
//!
//! Most messages cross mcp-chain without any layer reading their payload
//! (every message, with an empty chain). A [`Payload`] keeps the sender's
//! bytes and parses them on first access; a payload nobody read is written
//! back out as those same bytes, so a 10 MB result costs a copy, not a
//! parse and a re-encode. Once read, it is written from the parsed value:
//! what the peer receives is exactly what the layers checked (a duplicate
//! key cannot show a layer one thing and the server another).

use super::items::{self, Edited, Item, ListIndex, NoList};
use super::scan;
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
    /// Where the items of a list are in `raw`, when a layer edited them:
    /// the next layer to edit the same list need not find them again.
    index: Option<Box<ListIndex>>,
}

impl Payload {
    /// A payload as received. The bytes must parse: `Incoming::parse`
    /// checks the line ([`raw_safe`]) and its syntax before making one.
    pub(crate) fn raw(raw: Box<RawValue>) -> Self {
        Self {
            raw: Some(raw),
            value: OnceLock::new(),
            index: None,
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
                let text = raw.get();
                let mut members = Vec::new();
                scan::object(text.as_bytes(), 0, &mut members)?;
                let (_, value) = members
                    .iter()
                    .rev()
                    .find(|(key, _)| scan::unquote(&text[key.clone()]).as_deref() == Some(name))?;
                serde_json::from_str(&text[value.clone()])
                    .ok()
                    .map(Cow::Owned)
            }
            (None, None) => None,
        }
    }

    /// Edits the items of the array member `key` (`tools`, `prompts`, …) of
    /// an object payload, one by one; an item is kept when `edit` returns
    /// true. Items are read member by member and the rest of the payload
    /// stays the sender's bytes (see [`Item`]), so a layer renaming 1,000
    /// tools does not parse their schemas. Nothing happens when there is no
    /// such array.
    pub fn edit_items(&mut self, key: &str, mut edit: impl FnMut(&mut Item<'_>) -> bool) {
        if let (None, Some(raw)) = (self.value.get(), &self.raw) {
            let scanned;
            let index = match &self.index {
                Some(index) if index.is_for(key) => index,
                _ => match ListIndex::scan(raw.get(), key) {
                    Ok(index) => {
                        scanned = index;
                        &scanned
                    }
                    Err(NoList::Absent) => return,
                    Err(NoList::Ambiguous) => return self.edit_parsed(key, edit),
                },
            };
            if let Edited::Changed(text, index) = items::edit(raw.get(), index, &mut edit) {
                #[allow(unsafe_code)]
                // SAFETY: `items::edit` writes valid JSON without blanks
                // around it: the sender's pieces, checked by serde_json when
                // the line was read, and serde_json's own output, joined by
                // the punctuation between them.
                let raw = unsafe { RawValue::from_string_unchecked(text) };
                self.raw = Some(raw);
                self.index = Some(Box::new(index));
            }
            return;
        }
        self.edit_parsed(key, edit);
    }

    fn edit_parsed(&mut self, key: &str, mut edit: impl FnMut(&mut Item<'_>) -> bool) {
        if let Some(Value::Array(items)) = (**self).get_mut(key) {
            items.retain_mut(|item| edit(&mut Item::in_place(item)));
        }
    }

    /// Whether the payload is still the sender's bytes, unread.
    pub fn is_untouched(&self) -> bool {
        self.value.get().is_none()
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self {
            raw: None,
            value: OnceLock::from(value),
            index: None,
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
        self.index = None;
        self.value.get_mut().expect("forced just above")
    }
}

impl Clone for Payload {
    fn clone(&self) -> Self {
        Self {
            raw: self.raw.clone(),
            value: self.value.clone(),
            // A cache: the copy finds the list again if it is edited.
            index: None,
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
/// levels; skipped raw bytes are not counted by it), no `\uD800`-range
/// escape (serde_json rejects a lone surrogate only when it decodes), and
/// no number too large for an `f64` (serde_json rejects `1e400` only when it
/// reads the value). Skipped bytes that a layer later parsed would
/// otherwise fail to parse, and a layer must never judge a payload it could
/// not read. Nor may it hold a line break. A line that fails is parsed
/// whole, so a bad one gets the same -32700 as before. The line as text
/// when it can.
pub(crate) fn raw_safe(line: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(line).ok()?;
    // A CR or LF can only be a blank between tokens (inside a string it
    // must be escaped): copied raw, it would split the line we write. Such
    // lines are rare (a framing that leaves a lone CR); they are re-encoded.
    if memchr::memchr2(b'\n', b'\r', line).is_some() {
        return None;
    }
    walk_safe(line).then_some(text)
}

/// serde_json's nesting limit.
const DEPTH_LIMIT: usize = 128;

/// The check: nesting, escapes and numbers, string by string (strings are
/// skipped eight bytes at a time, long ones at memchr speed). Iterative: no
/// input can exhaust the stack.
fn walk_safe(line: &[u8]) -> bool {
    let (mut depth, mut i) = (0usize, 0);
    while i < line.len() {
        match line[i] {
            b'"' => {
                // Jump from quote or backslash to the next: short strings
                // eight bytes at a time, long ones (a 10 MB result) at
                // memchr speed.
                i += 1;
                loop {
                    match scan::quote_or_backslash(&line[i.min(line.len())..]) {
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
            b'-' | b'0'..=b'9' => {
                let start = i;
                while matches!(
                    line.get(i),
                    Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                ) {
                    i += 1;
                }
                if !number_in_range(&line[start..i]) {
                    return false;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    true
}

/// Whether a number token reads as a finite `f64`. Only an exponent or a
/// very long run of digits can leave the range.
fn number_in_range(token: &[u8]) -> bool {
    if token.len() < 300 && !token.iter().any(|&c| c == b'e' || c == b'E') {
        return true;
    }
    std::str::from_utf8(token)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .is_some_and(f64::is_finite)
}

/// Whether the backslash at `at` starts a `\uD...` escape (the range that
/// holds the surrogates; the rest of it is rare enough to check whole).
fn surrogate_escape_at(line: &[u8], at: usize) -> bool {
    matches!(line.get(at + 1..at + 3), Some([b'u', b'd' | b'D']))
}
