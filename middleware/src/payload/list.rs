//! The items of a list a layer edits (`tools`, `prompts`, `resources`, …):
//! each item read one level deep, so a filter judges a tool by its `name`
//! and a rewrite renames it without parsing its schema, and an item no
//! layer changed is written back as the sender's text.

use super::object::{self, find, Member, Slot};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;

/// One item of a list, as found in the payload's text.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Where its text is.
    at: Range<usize>,
    /// Its members, when it is an object serde_json reads.
    members: Option<Vec<Member>>,
    /// Whether a layer changed a member (then it is written from them).
    changed: bool,
}

/// Splits the array at `at` in `text` into its items. `Err` when it is not
/// an array.
pub(crate) fn entries(text: &[u8], at: Range<usize>) -> Result<Vec<Entry>, serde_json::Error> {
    let items: Vec<&RawValue> = serde_json::from_slice(&text[at.clone()])?;
    let entries = items.into_iter().map(|item| {
        let place = object::place(&text[at.clone()], item.get().as_bytes());
        let at = at.start + place.start..at.start + place.end;
        let read = match text[at.start] {
            b'{' => object::members(&text[at.clone()], at.start).ok(),
            _ => None,
        };
        // An item whose keys are not plain is written from what was read.
        let changed = read.as_ref().is_some_and(|read| !read.plain);
        Entry {
            at,
            members: read.map(|read| read.members),
            changed,
        }
    });
    Ok(entries.collect())
}

pub(crate) fn write(entries: &[Entry], text: &[u8], out: &mut Vec<u8>) {
    out.push(b'[');
    for (n, entry) in entries.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        match &entry.members {
            Some(members) if entry.changed => object::write(members, text, out),
            _ => out.extend_from_slice(&text[entry.at.clone()]),
        }
    }
    out.push(b']');
}

/// One item of a list, handed to a layer's edit (see
/// [`Payload::edit_items`](super::Payload::edit_items)).
pub struct Item<'a> {
    text: &'a [u8],
    entry: &'a mut Entry,
}

// === impl Item ===

impl<'a> Item<'a> {
    pub(crate) fn new(text: &'a [u8], entry: &'a mut Entry) -> Self {
        Self { text, entry }
    }

    pub(crate) fn is_changed(&self) -> bool {
        self.entry.changed
    }

    /// Whether the item is an object serde_json reads. A layer that cannot
    /// read an item it must judge drops it.
    pub fn is_readable(&self) -> bool {
        self.entry.members.is_some()
    }

    /// The string member `name`. `None` when the item is not a readable
    /// object, has no such member, or it is not a string.
    pub fn str_member(&self, name: &str) -> Option<Cow<'_, str>> {
        let members = self.entry.members.as_ref()?;
        match &members[find(members, self.text, name)?].value {
            Slot::At(at) => read_str(&self.text[at.clone()]),
            Slot::Value(Value::String(s)) => Some(Cow::Borrowed(s)),
            Slot::Value(_) | Slot::List(_) => None,
        }
    }

    /// The member `name`, parsed. `None` when the item is not a readable
    /// object, has no such member, or it cannot be read.
    pub fn member(&self, name: &str) -> Option<Value> {
        let members = self.entry.members.as_ref()?;
        let slot = &members[find(members, self.text, name)?].value;
        object::read(slot, self.text).ok()
    }

    /// Sets the member `name` (added at the end when there is none). Does
    /// nothing to an item that is not a readable object.
    pub fn set(&mut self, name: &str, value: Value) {
        if let Some(members) = self.entry.members.as_mut() {
            self.entry.changed = true;
            object::set(members, self.text, name, value);
        }
    }

    /// The member `name`, parsed, to be changed in place. `None` when the
    /// item is not a readable object, has no such member, or it cannot be
    /// read.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        let members = self.entry.members.as_mut()?;
        let n = find(members, self.text, name)?;
        let member = &mut members[n];
        if let Slot::At(_) | Slot::List(_) = member.value {
            let value = object::read(&member.value, self.text).ok()?;
            member.value = Slot::Value(value);
        }
        self.entry.changed = true;
        match &mut member.value {
            Slot::Value(value) => Some(value),
            Slot::At(_) | Slot::List(_) => None,
        }
    }
}

/// A JSON string's contents, borrowed when it has no escapes.
pub(crate) fn read_str(text: &[u8]) -> Option<Cow<'_, str>> {
    if let Ok(s) = serde_json::from_slice::<&str>(text) {
        return Some(Cow::Borrowed(s));
    }
    serde_json::from_slice::<String>(text).ok().map(Cow::Owned)
}
