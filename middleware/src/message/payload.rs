//! `params` and `result`, parsed only when someone looks.
//!
//! Most messages cross mcp-chain without any layer reading their payload
//! (every message, with an empty chain). A [`Payload`] keeps the sender's
//! bytes and parses them on first access; a payload nobody read is written
//! back out as those same bytes, so a 10 MB result costs a copy, not a
//! parse and a re-encode. Once read, it is written from the parsed value:
//! what the peer receives is exactly what the layers checked (a duplicate
//! key cannot show a layer one thing and the server another).

use super::check::Node;
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
    /// The parsed value, once someone looked. Boxed: most payloads are never
    /// parsed, and every message future carries this field.
    value: OnceLock<Box<Value>>,
    /// Where the items of a list are in `raw`, when a layer edited them:
    /// the next layer to edit the same list need not find them again.
    index: Option<Box<ListIndex>>,
    /// Where the parts of `raw` are, as found when the line was checked
    /// (see `check::Outline`), when it holds a list: editing the list or
    /// reading a member starts from it instead of scanning.
    outline: Option<Box<[Node]>>,
}

impl Payload {
    /// A payload as received. The bytes must parse: `Incoming::parse`
    /// checks the line (`check::line`) before making one.
    /// `outline`, when given, must be the whole outline of `raw`.
    pub(super) fn raw(raw: Box<RawValue>, outline: Option<Vec<Node>>) -> Self {
        Self {
            raw: Some(raw),
            value: OnceLock::new(),
            index: None,
            outline: outline.map(Vec::into_boxed_slice),
        }
    }

    /// Takes the value out.
    pub fn into_value(mut self) -> Value {
        self.force();
        self.value.take().map_or(Value::Null, |value| *value)
    }

    fn force(&self) -> &Value {
        self.value.get_or_init(|| {
            Box::new(match &self.raw {
                // Checked at parse time (`check::line`), so this cannot
                // fail; Null is a safe floor.
                Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
                None => Value::Null,
            })
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
                match &self.outline {
                    Some(nodes) => {
                        let top = nodes.iter().filter(|n| n.depth == 1);
                        members.extend(top.map(|n| (n.key(), n.value())));
                    }
                    None => {
                        scan::object(text.as_bytes(), 0, &mut members)?;
                    }
                }
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
                _ => match self.find_list(raw, key) {
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
                // around it: the sender's pieces, checked when the line was
                // read (`check::line`), and serde_json's own output, joined
                // by the punctuation between them.
                let raw = unsafe { RawValue::from_string_unchecked(text) };
                self.raw = Some(raw);
                self.index = Some(Box::new(index));
                self.outline = None;
            }
            return;
        }
        self.edit_parsed(key, edit);
    }

    /// Where the items of the list `key` are: from the outline when there
    /// is one, else by scanning the text.
    fn find_list(&self, raw: &RawValue, key: &str) -> Result<ListIndex, NoList> {
        match &self.outline {
            Some(nodes) => ListIndex::from_outline(raw.get(), nodes, key),
            None => ListIndex::scan(raw.get(), key),
        }
    }

    fn edit_parsed(&mut self, key: &str, mut edit: impl FnMut(&mut Item<'_>) -> bool) {
        if let Some(Value::Array(items)) = (**self).get_mut(key) {
            items.retain_mut(|item| edit(&mut Item::in_place(item)));
        }
    }

    /// Whether the payload kept the outline found when its line was checked.
    #[cfg(test)]
    pub(super) fn is_outlined(&self) -> bool {
        self.outline.is_some()
    }

    /// The length of the sender's bytes, while the payload is still them.
    pub(super) fn raw_len(&self) -> Option<usize> {
        self.raw_text().map(str::len)
    }

    /// The sender's text, while no one has read the payload.
    pub(super) fn raw_text(&self) -> Option<&str> {
        match (self.value.get(), &self.raw) {
            (None, Some(raw)) => Some(raw.get()),
            _ => None,
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
            value: OnceLock::from(Box::new(value)),
            index: None,
            outline: None,
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
        self.outline = None;
        self.value.get_mut().expect("forced just above")
    }
}

impl Clone for Payload {
    fn clone(&self) -> Self {
        Self {
            raw: self.raw.clone(),
            value: self.value.clone(),
            // Caches: the copy finds the list again if it is edited.
            index: None,
            outline: None,
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
