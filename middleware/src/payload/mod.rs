//! `params` and `result`: kept as the sender's text until a layer asks.
//!
//! Most messages cross mcp-chain without any layer reading their payload
//! (every message, with an empty chain), so a [`Payload`] holds the text
//! serde_json found for it when the line was parsed, and a payload nobody
//! changed is written back out as that same text: a 10 MB result costs a
//! copy, not a parse and a re-encode.
//!
//! Every read goes through serde_json, from that text: a layer asking for
//! one member gets the object read one level deep (the other members stay
//! text), a layer editing a list gets its items one by one ([`Item`]), a
//! layer that needs the whole value gets a `Value`. Of duplicate keys the
//! last counts everywhere, as in servers. A read that fails (a payload that
//! is not an object where one is needed, a number beyond an `f64`, a lone
//! surrogate escape) is an [`Unreadable`] error, never a `null`: the layer
//! asking refuses the message.

mod list;
pub(crate) mod object;
mod text;
pub(crate) mod value;

pub use list::Item;
pub use text::{Text, BIG_PAYLOAD_BYTES};

use object::{find, Key, Member, Slot};
use serde::ser::{Error as _, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

/// A JSON value that may still be the sender's text.
pub struct Payload {
    repr: Repr,
    /// The whole value, once a read found the text's keys not plain (see
    /// `object::Read::plain`): from then on it is read and written from
    /// this. Set through `&self`, by the first layer that reads.
    whole: OnceLock<Result<Box<Value>, Unreadable>>,
}

enum Repr {
    /// As received, unchanged.
    Text(Text),
    /// Read one level deep because a layer edited a member or a list; the
    /// members not changed are still places in the text.
    Object(Box<Object>),
    /// Built by mcp-chain, or changed as a whole by a layer.
    Value(Box<Value>),
}

struct Object {
    text: Text,
    members: Vec<Member>,
    /// Whether a layer changed anything: if not, the text is written.
    changed: bool,
}

/// What a layer could not read in a payload, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(String);

impl Unreadable {
    pub fn new(what: impl Into<String>) -> Self {
        Self(what.into())
    }

    fn json(e: serde_json::Error) -> Self {
        Self(format!("not readable JSON: {e}"))
    }

    fn not_an_object() -> Self {
        Self::new("not an object")
    }
}

// === impl Payload ===

impl Payload {
    pub(crate) fn from_text(text: Text) -> Self {
        Self::with(Repr::Text(text))
    }

    fn with(repr: Repr) -> Self {
        Self {
            repr,
            whole: OnceLock::new(),
        }
    }

    /// The whole value read from the text, when a read found its keys not
    /// plain (see [`Self::whole`]).
    fn read_whole(&self) -> Option<&Value> {
        match self.whole.get() {
            Some(Ok(value)) => Some(value),
            _ => None,
        }
    }

    /// Reads the text whole, once: for a payload whose keys are not plain.
    fn whole(&self, text: &[u8]) -> Result<&Value, Unreadable> {
        let read = self
            .whole
            .get_or_init(|| value::parse(text).map(Box::new).map_err(Unreadable::json));
        read.as_deref().map_err(Clone::clone)
    }

    /// Moves a value read whole into the representation, for a change.
    fn settle(&mut self) {
        if let Some(Ok(value)) = self.whole.take() {
            self.repr = Repr::Value(value);
        }
    }

    /// The sender's text, while no layer has changed the payload.
    pub fn text(&self) -> Option<&Text> {
        if self.read_whole().is_some() {
            return None;
        }
        match &self.repr {
            Repr::Text(text) => Some(text),
            Repr::Object(o) if !o.changed => Some(&o.text),
            Repr::Object(_) | Repr::Value(_) => None,
        }
    }

    /// [`Self::text`], taken out.
    pub fn into_text(self) -> Option<Text> {
        if self.read_whole().is_some() {
            return None;
        }
        match self.repr {
            Repr::Text(text) => Some(text),
            Repr::Object(o) if !o.changed => Some(o.text),
            Repr::Object(_) | Repr::Value(_) => None,
        }
    }

    /// Whether the payload is still exactly the sender's text.
    pub fn is_untouched(&self) -> bool {
        self.text().is_some()
    }

    /// Whether it is an object or an array (what `params` must be).
    pub fn is_structured(&self) -> bool {
        match &self.repr {
            Repr::Text(text) => matches!(text.as_bytes().first(), Some(b'{' | b'[')),
            Repr::Object(_) => true,
            Repr::Value(v) => v.is_object() || v.is_array(),
        }
    }

    /// The whole value, parsed.
    pub fn to_value(&self) -> Result<Value, Unreadable> {
        if let Some(value) = self.read_whole() {
            return Ok(value.clone());
        }
        match &self.repr {
            Repr::Value(v) => Ok((**v).clone()),
            _ => value::parse(&self.to_bytes()).map_err(Unreadable::json),
        }
    }

    /// The whole value, taken out.
    pub fn into_value(mut self) -> Result<Value, Unreadable> {
        self.settle();
        match self.repr {
            Repr::Value(v) => Ok(*v),
            _ => value::parse(&self.to_bytes()).map_err(Unreadable::json),
        }
    }

    /// The whole value, to be changed in place; from then on the payload is
    /// written from it.
    pub fn value_mut(&mut self) -> Result<&mut Value, Unreadable> {
        self.settle();
        if !matches!(self.repr, Repr::Value(_)) {
            let value = value::parse(&self.to_bytes()).map_err(Unreadable::json)?;
            self.repr = Repr::Value(Box::new(value));
        }
        match &mut self.repr {
            Repr::Value(v) => Ok(v),
            Repr::Text(_) | Repr::Object(_) => unreachable!("just made a value"),
        }
    }

    /// The member `name` of an object, parsed; the others are not. `None`
    /// when there is no such member. `Err` when this is not an object or
    /// the member cannot be read.
    pub fn member(&self, name: &str) -> Result<Option<Value>, Unreadable> {
        let read = |slot: &Slot, text: &[u8]| object::read(slot, text).map_err(Unreadable::json);
        if let Some(value) = self.read_whole() {
            return Ok(value.get(name).cloned());
        }
        match &self.repr {
            Repr::Text(text) => {
                let text = text.as_bytes();
                if text.first() != Some(&b'{') {
                    return Err(Unreadable::not_an_object());
                }
                // Any spelling of the name holds it or an escape: a 10 MB
                // result with neither is not read to find out.
                let finder = memchr::memmem::find(text, name.as_bytes());
                if finder.is_none() && memchr::memchr(b'\\', text).is_none() {
                    return Ok(None);
                }
                let object = object::members(text, 0).map_err(Unreadable::json)?;
                if !object.plain {
                    return Ok(self.whole(text)?.get(name).cloned());
                }
                let members = object.members;
                find(&members, text, name)
                    .map(|n| read(&members[n].value, text))
                    .transpose()
            }
            Repr::Object(o) => {
                let text = o.text.as_bytes();
                find(&o.members, text, name)
                    .map(|n| read(&o.members[n].value, text))
                    .transpose()
            }
            Repr::Value(v) => match &**v {
                Value::Object(map) => Ok(map.get(name).cloned()),
                _ => Err(Unreadable::not_an_object()),
            },
        }
    }

    /// The string member `name` of an object. `None` when there is no such
    /// member. `Err` when this is not an object, or the member is not a
    /// string serde_json reads.
    pub fn str_member(&self, name: &str) -> Result<Option<Cow<'_, str>>, Unreadable> {
        let value = match (&self.repr, self.read_whole()) {
            (_, Some(value)) => value,
            (Repr::Text(text), None) => {
                let text = text.as_bytes();
                let object = object::members(text, 0).map_err(|_| Unreadable::not_an_object())?;
                if object.plain {
                    return str_in(&object.members, text, name);
                }
                self.whole(text)?
            }
            (Repr::Object(o), None) => return str_in(&o.members, o.text.as_bytes(), name),
            (Repr::Value(v), None) => v,
        };
        {
            match value {
                Value::Object(map) => match map.get(name) {
                    None => Ok(None),
                    Some(Value::String(s)) => Ok(Some(Cow::Borrowed(s))),
                    Some(_) => Err(Unreadable::new(format!("\"{name}\" is not a string"))),
                },
                _ => Err(Unreadable::not_an_object()),
            }
        }
    }

    /// Sets the member `name` of an object (added at the end when there is
    /// none); the other members stay as they are. `Err` when this is not an
    /// object.
    pub fn set_member(&mut self, name: &str, value: Value) -> Result<(), Unreadable> {
        self.settle();
        if let Repr::Value(v) = &mut self.repr {
            let map = v.as_object_mut().ok_or_else(Unreadable::not_an_object)?;
            map.insert(name.to_owned(), value);
            return Ok(());
        }
        let o = self.object()?;
        o.changed = true;
        match find(&o.members, o.text.as_bytes(), name) {
            Some(n) => o.members[n].value = Slot::Value(value),
            None => o.members.push(Member {
                key: Key::Own(name.into()),
                value: Slot::Value(value),
            }),
        }
        Ok(())
    }

    /// Edits the items of the array member `key` of an object (`tools`,
    /// `prompts`, …) one by one; an item is kept when `edit` returns true.
    /// The items are read one level deep, the rest of the payload not at
    /// all. Nothing happens when there is no such member. `Err`, with
    /// nothing done, when this is not an object or `key` is not an array.
    pub fn edit_items(
        &mut self,
        key: &str,
        mut edit: impl FnMut(&mut Item<'_>) -> bool,
    ) -> Result<(), Unreadable> {
        let o = self.object()?;
        let text = o.text.as_bytes();
        let Some(n) = find(&o.members, text, key) else {
            return Ok(());
        };
        let slot = &mut o.members[n].value;
        let entries = match slot {
            Slot::At(at) => {
                let entries = list::entries(text, at.clone())
                    .map_err(|_| Unreadable::new(format!("\"{key}\" is not an array")))?;
                *slot = Slot::List(entries);
                match slot {
                    Slot::List(entries) => entries,
                    _ => unreachable!("just made a list"),
                }
            }
            Slot::List(entries) => entries,
            Slot::Value(_) => return Err(Unreadable::new(format!("\"{key}\" was replaced"))),
        };
        let before = entries.len();
        let mut changed = false;
        entries.retain_mut(|entry| {
            let mut item = Item::new(text, entry);
            let keep = edit(&mut item);
            changed |= item.is_changed();
            keep
        });
        o.changed |= changed || entries.len() != before;
        Ok(())
    }

    /// The payload read one level deep, as an object. Keys that are not
    /// plain are settled first: the value is read whole and written anew,
    /// so from then on it says plainly what was read.
    fn object(&mut self) -> Result<&mut Object, Unreadable> {
        self.settle();
        let mut changed = false;
        if let Repr::Text(text) = &self.repr {
            let read = object::members(text.as_bytes(), 0);
            if !read.map_err(|_| Unreadable::not_an_object())?.plain {
                let value = value::parse(text.as_bytes()).map_err(Unreadable::json)?;
                self.repr = Repr::Value(Box::new(value));
            }
        }
        if let Repr::Value(value) = &self.repr {
            // Built or changed as a whole: its text, read as received text is.
            let text = serde_json::to_vec(value).expect("a Value always serializes");
            self.repr = Repr::Text(Text::written(text));
            changed = true;
        }
        if let Repr::Text(text) = &self.repr {
            let read = object::members(text.as_bytes(), 0);
            let members = read.map_err(|_| Unreadable::not_an_object())?.members;
            let text = text.clone();
            self.repr = Repr::Object(Box::new(Object {
                text,
                members,
                changed,
            }));
        }
        match &mut self.repr {
            Repr::Object(o) => Ok(o),
            Repr::Value(_) => Err(Unreadable::not_an_object()),
            Repr::Text(_) => unreachable!("just read one level deep"),
        }
    }

    /// Appends the payload as JSON.
    pub fn write(&self, out: &mut Vec<u8>) {
        if let Some(value) = self.read_whole() {
            serde_json::to_writer(out, value).expect("a Value always serializes");
            return;
        }
        match &self.repr {
            Repr::Text(text) => out.extend_from_slice(text.as_bytes()),
            Repr::Object(o) if !o.changed => out.extend_from_slice(o.text.as_bytes()),
            Repr::Object(o) => object::write(&o.members, o.text.as_bytes(), out),
            Repr::Value(v) => serde_json::to_writer(out, v).expect("a Value always serializes"),
        }
    }

    /// The payload as JSON text.
    fn to_bytes(&self) -> Cow<'_, [u8]> {
        match self.text() {
            Some(text) => Cow::Borrowed(text.as_bytes()),
            None => {
                let mut out = Vec::new();
                self.write(&mut out);
                Cow::Owned(out)
            }
        }
    }

    /// How many bytes [`Self::write`] writes.
    pub fn json_len(&self) -> usize {
        match self.text() {
            Some(text) => text.len(),
            None => self.to_bytes().len(),
        }
    }
}

/// The string member `name` of an object read one level deep from `text`.
fn str_in<'t>(
    members: &[Member],
    text: &'t [u8],
    name: &str,
) -> Result<Option<Cow<'t, str>>, Unreadable> {
    let not_a_string = || Unreadable::new(format!("\"{name}\" is not a string"));
    let Some(n) = find(members, text, name) else {
        return Ok(None);
    };
    match &members[n].value {
        Slot::At(at) => list::read_str(&text[at.clone()])
            .map(Some)
            .ok_or_else(not_a_string),
        Slot::Value(Value::String(s)) => Ok(Some(Cow::Owned(s.clone()))),
        Slot::Value(_) | Slot::List(_) => Err(not_a_string()),
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self::with(Repr::Value(Box::new(value)))
    }
}

impl Clone for Payload {
    fn clone(&self) -> Self {
        let repr = match &self.repr {
            Repr::Text(text) => Repr::Text(text.clone()),
            Repr::Object(o) => Repr::Object(Box::new(Object {
                text: o.text.clone(),
                members: o.members.clone(),
                changed: o.changed,
            })),
            Repr::Value(v) => Repr::Value(v.clone()),
        };
        Self {
            repr,
            whole: self.whole.clone(),
        }
    }
}

/// Two payloads are equal when they read as the same value (text that
/// cannot be read compares by its bytes).
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self.to_value(), other.to_value()) {
            (Ok(a), Ok(b)) => a == b,
            _ => self.to_bytes() == other.to_bytes(),
        }
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Value(v) => write!(f, "Payload({v})"),
            _ => write!(
                f,
                "Payload({:?})",
                Text::written(self.to_bytes().into_owned())
            ),
        }
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.repr {
            Repr::Value(v) => v.serialize(s),
            _ => {
                let bytes = self.to_bytes();
                let raw: &RawValue = serde_json::from_slice(&bytes).map_err(S::Error::custom)?;
                raw.serialize(s)
            }
        }
    }
}

#[cfg(test)]
mod tests;
