//! The items of a list a layer edits (`tools`, `prompts`, `resources`, …):
//! each item read one level deep, so a filter judges a tool by its `name`
//! and a rewrite renames it without parsing its schema, and an item no
//! layer changed is written back as the sender's text.

use super::object::{self, find, Member, Slot};
use super::{Found, Payload, Repr, Unreadable};
use crate::json::value::{self, ValueSeed};
use crate::json::Out;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// One item of a list, as read.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// An object, read one level deep; `changed` when a layer changed a
    /// member (or its keys are not plain): then it is written from them.
    Object { members: Vec<Member>, changed: bool },
    /// Anything else, read whole (a list of tools holds only objects).
    Other(Value),
}

/// Reads the array at `at` in `text` into its items. `Err` when it is not
/// an array.
pub(crate) fn entries(text: &[u8], at: Range<usize>) -> Result<Vec<Entry>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(value::utf8(&text[at.clone()])?);
    let entries = ListSeed {
        text: &text[at.clone()],
        base: at.start,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(entries)
}

pub(crate) fn write(entries: &[Entry], text: &[u8], out: &mut impl Out) {
    out.put(b"[");
    write_items(entries, text, out);
    out.put(b"]");
}

/// The items, comma-separated, without the brackets.
fn write_items(entries: &[Entry], text: &[u8], out: &mut impl Out) {
    for (n, entry) in entries.iter().enumerate() {
        if n > 0 {
            out.put(b",");
        }
        match entry {
            Entry::Object { members, .. } => object::write(members, text, out),
            Entry::Other(value) => {
                serde_json::to_writer(&mut *out, value).expect("a Value always serializes")
            }
        }
    }
}

// === impl Payload ===

impl Payload {
    /// Appends the items of the array member `name` of an object,
    /// comma-separated, without the brackets (nothing for an empty one): a
    /// listing's items as they now stand (a list a layer edited written
    /// from its items, once), for a page that joins several. `false` when
    /// there is no such member; `Err` when this is not an object or the
    /// member is not an array.
    pub fn write_items(&self, name: &str, out: &mut Vec<u8>) -> Result<bool, Unreadable> {
        if let Repr::Object(o) = &self.repr {
            let text = o.text.as_bytes();
            if let Some(Slot::List(entries)) =
                find(&o.members, text, name).map(|n| &o.members[n].value)
            {
                write_items(entries, text, out);
                return Ok(true);
            }
        }
        let start = out.len();
        match self.find_member(name)? {
            None => return Ok(false),
            Some(Found::Text(text)) => out.extend_from_slice(&text),
            Some(Found::Value(value)) => {
                serde_json::to_writer(&mut *out, value).map_err(Unreadable::json)?
            }
        }
        // The brackets taken off where the text was written.
        let written = &out[start..];
        let inner = written
            .trim_ascii()
            .strip_prefix(b"[")
            .and_then(|t| t.strip_suffix(b"]"))
            .map(|inner| inner.trim_ascii());
        let Some(inner) = inner else {
            out.truncate(start);
            return Err(Unreadable::new(format!("\"{name}\" is not an array")));
        };
        let from = start + (inner.as_ptr() as usize - written.as_ptr() as usize);
        let len = inner.len();
        out.copy_within(from..from + len, start);
        out.truncate(start + len);
        Ok(true)
    }
}

/// Reads a list whose items' places are kept as offsets in `text` plus
/// `base` (see [`object::members`]), each object item one level deep, in
/// the same pass.
pub(crate) struct ListSeed<'t> {
    pub(crate) text: &'t [u8],
    pub(crate) base: usize,
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = Vec<Entry>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Entry>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = Vec<Entry>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Entry>, A::Error> {
        let mut entries = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let item = || ItemSeed {
            text: self.text,
            base: self.base,
        };
        while let Some(entry) = seq.next_element_seed(item())? {
            entries.push(entry);
        }
        Ok(entries)
    }
}

/// Reads one item of a list.
struct ItemSeed<'t> {
    text: &'t [u8],
    base: usize,
}

impl<'de> DeserializeSeed<'de> for ItemSeed<'_> {
    type Value = Entry;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Entry, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItemSeed<'_> {
    type Value = Entry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Entry, A::Error> {
        let read = object::read_map(self.text, self.base, map)?;
        // An item whose keys are not plain is written from what was read.
        Ok(Entry::Object {
            changed: !read.plain,
            members: read.members,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Entry, A::Error> {
        ValueSeed.visit_seq(seq).map(Entry::Other)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Entry, E> {
        Ok(Entry::Other(Value::Bool(b)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Entry, E> {
        Ok(Entry::Other(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Entry, E> {
        Ok(Entry::Other(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Entry, E> {
        ValueSeed.visit_f64(n).map(Entry::Other)
    }

    fn visit_str<E>(self, s: &str) -> Result<Entry, E> {
        Ok(Entry::Other(s.into()))
    }

    fn visit_unit<E>(self) -> Result<Entry, E> {
        Ok(Entry::Other(Value::Null))
    }
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
        matches!(self.entry, Entry::Object { changed: true, .. })
    }

    fn members(&self) -> Option<&[Member]> {
        match &self.entry {
            Entry::Object { members, .. } => Some(members),
            Entry::Other(_) => None,
        }
    }

    /// The members, for a change.
    fn members_mut(&mut self) -> Option<&mut Vec<Member>> {
        match &mut self.entry {
            Entry::Object { members, changed } => {
                *changed = true;
                Some(members)
            }
            Entry::Other(_) => None,
        }
    }

    /// The string member `name`. `None` when the item is not a readable
    /// object, has no such member, or it is not a string.
    pub fn str_member(&self, name: &str) -> Option<Cow<'_, str>> {
        let members = self.members()?;
        match &members[find(members, self.text, name)?].value {
            Slot::At(at) => value::read_str(&self.text[at.clone()]),
            Slot::Value(Value::String(s)) => Some(Cow::Borrowed(s)),
            Slot::Value(_) | Slot::List(_) => None,
        }
    }

    /// The member `name`, parsed. `None` when the item is not a readable
    /// object, has no such member, or it cannot be read.
    pub fn member(&self, name: &str) -> Option<Value> {
        let members = self.members()?;
        let slot = &members[find(members, self.text, name)?].value;
        object::read(slot, self.text).ok()
    }

    /// The whole item, read (a guard that reads every member's text: the
    /// scan layer). `Err` when it is not a readable object or a member
    /// cannot be read.
    pub fn to_map(&self) -> Result<serde_json::Map<String, Value>, Unreadable> {
        let members = self
            .members()
            .ok_or_else(|| Unreadable::new("the item is not an object"))?;
        let mut map = serde_json::Map::new();
        for member in members {
            let name = String::from_utf8_lossy(member.key.bytes(self.text)).into_owned();
            let value = object::read(&member.value, self.text)
                .map_err(|e| Unreadable::new(format!("{name:?} cannot be read ({e})")))?;
            map.insert(name, value);
        }
        Ok(map)
    }

    /// Whether the item is an object whose members could be read.
    pub fn is_object(&self) -> bool {
        self.members().is_some()
    }

    /// The member `name`, parsed: `Ok(None)` when there is none, `Err`
    /// when the item is not a readable object or the member cannot be
    /// read (a guard tells the two apart; [`member`](Self::member) does
    /// not).
    pub fn try_member(&self, name: &str) -> Result<Option<Value>, Unreadable> {
        let members = self
            .members()
            .ok_or_else(|| Unreadable::new("the item is not an object"))?;
        match find(members, self.text, name) {
            None => Ok(None),
            Some(n) => object::read(&members[n].value, self.text)
                .map(Some)
                .map_err(|e| Unreadable::new(format!("\"{name}\" cannot be read ({e})"))),
        }
    }

    /// Sets the member `name` (added at the end when there is none). Does
    /// nothing to an item that is not a readable object.
    pub fn set(&mut self, name: &str, value: Value) {
        let text = self.text;
        if let Some(members) = self.members_mut() {
            object::set(members, text, name, value);
        }
    }

    /// The member `name`, parsed, to be changed in place. `None` when the
    /// item is not a readable object, has no such member, or it cannot be
    /// read.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        let text = self.text;
        let n = find(self.members()?, text, name)?;
        let member = &mut self.members_mut()?[n];
        if let Slot::At(_) | Slot::List(_) = member.value {
            let value = object::read(&member.value, text).ok()?;
            member.value = Slot::Value(value);
        }
        match &mut member.value {
            Slot::Value(value) => Some(value),
            Slot::At(_) | Slot::List(_) => None,
        }
    }
}
