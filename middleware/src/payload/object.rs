//! An object read one level deep: its members in order, each value left as
//! the text serde_json found for it until someone reads or changes it. This
//! is what lets a layer read a tool's `name` without parsing its arguments,
//! or drop one tool of a thousand without parsing any schema.
//!
//! Every value here is found by serde_json: a member's place is where the
//! `&RawValue` serde_json gave for it lies in the text. Of duplicate keys
//! the last counts, in the place of the first, as in a parsed `Value` and
//! as servers read them.

use super::{list, Text};
use crate::json::key::{place, KeySeed, Name};
use crate::json::{value, Out};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

/// One member of an object.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) key: Key,
    pub(crate) value: Slot,
}

/// A member's name: where it stands in the text when it is written without
/// escapes (most are), or decoded.
#[derive(Debug, Clone)]
pub(crate) enum Key {
    At(Range<usize>),
    Own(Box<str>),
}

/// A member's value.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// As received: where its text is.
    At(Range<usize>),
    /// Set or changed by a layer.
    Value(Value),
    /// An array whose items a layer edits (see `list`).
    List(Vec<list::Entry>),
}

// === impl Key ===

impl Key {
    /// The decoded name, as bytes.
    pub(crate) fn bytes<'a>(&'a self, text: &'a [u8]) -> &'a [u8] {
        self.bytes_in(text, 0)
    }

    /// [`Self::bytes`], for a key whose place counts from `base` (see
    /// [`members`]) while `text` starts there.
    fn bytes_in<'a>(&'a self, text: &'a [u8], base: usize) -> &'a [u8] {
        match self {
            Self::At(at) => &text[at.start - base..at.end - base],
            Self::Own(name) => name.as_bytes(),
        }
    }
}

/// An object read one level deep.
#[derive(Debug)]
pub(crate) struct Read {
    pub(crate) members: Vec<Member>,
    /// Whether every key is written once (escapes decoded, as every reader
    /// decodes them). If not, a reader that keeps the first of duplicate
    /// keys could see other members than mcp-chain does: what a layer read
    /// of it is then written from what was read, where each key is once.
    pub(crate) plain: bool,
}

/// Reads the object `text` one level deep. The places in the members are
/// offsets in `text` plus `base` (a list item is read on its own but its
/// places are kept in the payload's text).
pub(crate) fn members(text: &[u8], base: usize) -> Result<Read, serde_json::Error> {
    members_with_list(text, base, None)
}

/// [`members`], with the member named `list` read as a list, its items one
/// level deep, in the same pass (see [`list::entries`]).
pub(crate) fn members_with_list(
    text: &[u8],
    base: usize,
    list: Option<&str>,
) -> Result<Read, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(value::utf8(text)?);
    let read = de.deserialize_map(Members { text, base, list })?;
    de.end()?;
    Ok(read)
}

/// Reads the members of a map serde_json is in the middle of (a list item).
pub(crate) fn read_map<'de, A: MapAccess<'de>>(
    text: &[u8],
    base: usize,
    map: A,
) -> Result<Read, A::Error> {
    Members {
        text,
        base,
        list: None,
    }
    .visit_map(map)
}

/// The index of the member named `name`, if there is one.
pub(crate) fn find(members: &[Member], text: &[u8], name: &str) -> Option<usize> {
    members
        .iter()
        .position(|m| m.key.bytes(text) == name.as_bytes())
}

/// Reads a member's value as a `Value`.
pub(crate) fn read(slot: &Slot, text: &[u8]) -> Result<Value, serde_json::Error> {
    match slot {
        Slot::Value(v) => Ok(v.clone()),
        _ => value::parse(&text_of(slot, text)),
    }
}

/// A member's value as JSON text: where it is in `text`, or written anew.
pub(crate) fn text_of<'a>(slot: &Slot, text: &'a [u8]) -> Cow<'a, [u8]> {
    match slot {
        Slot::At(at) => Cow::Borrowed(&text[at.clone()]),
        _ => {
            let mut out = Vec::new();
            write_slot(slot, text, &mut out);
            Cow::Owned(out)
        }
    }
}

/// Sets the member `name` (added at the end when there is none).
pub(crate) fn set(members: &mut Vec<Member>, text: &[u8], name: &str, value: Value) {
    match find(members, text, name) {
        Some(n) => members[n].value = Slot::Value(value),
        None => members.push(Member {
            key: Key::Own(name.into()),
            value: Slot::Value(value),
        }),
    }
}

/// An object's members written anew, as a payload's text.
pub(crate) fn written(members: &[Member], text: &[u8]) -> Text {
    let mut out = Vec::new();
    write(members, text, &mut out);
    Text::written(out)
}

/// Writes an object's members as JSON.
pub(crate) fn write(members: &[Member], text: &[u8], out: &mut impl Out) {
    out.put(b"{");
    for (n, member) in members.iter().enumerate() {
        if n > 0 {
            out.put(b",");
        }
        match &member.key {
            // Borrowed by serde_json, so written without escapes: as it
            // stands, it is the same JSON string.
            Key::At(at) => {
                out.put(b"\"");
                out.put(&text[at.clone()]);
                out.put(b"\"");
            }
            Key::Own(name) => crate::json::write_str(name, out),
        }
        out.put(b":");
        write_slot(&member.value, text, out);
    }
    out.put(b"}");
}

pub(crate) fn write_slot(slot: &Slot, text: &[u8], out: &mut impl Out) {
    match slot {
        Slot::At(at) => out.put(&text[at.clone()]),
        Slot::Value(v) => serde_json::to_writer(&mut *out, v).expect("a Value always serializes"),
        Slot::List(entries) => list::write(entries, text, out),
    }
}

/// The visitor for [`members`].
struct Members<'t> {
    text: &'t [u8],
    base: usize,
    /// The member read as a list, if any.
    list: Option<&'t str>,
}

impl<'de> Visitor<'de> for Members<'_> {
    type Value = Read;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
        let mut members: Vec<Member> = Vec::new();
        let mut plain = true;
        // Past a few members, where each name is, so that a hostile object
        // with a million keys is not compared pairwise.
        let mut index: Option<HashMap<Vec<u8>, usize>> = None;
        let at = |part: &[u8]| {
            let place = place(self.text, part);
            place.start + self.base..place.end + self.base
        };
        while let Some(name) = map.next_key_seed(KeySeed)? {
            let is_list = self.list == Some(name.as_str());
            let value = if is_list {
                let seed = list::ListSeed {
                    text: self.text,
                    base: self.base,
                };
                Slot::List(map.next_value_seed(seed)?)
            } else {
                let raw: &RawValue = map.next_value()?;
                Slot::At(at(raw.get().as_bytes()))
            };
            let key = match name {
                Name::Borrowed(s) => Key::At(at(s.as_bytes())),
                Name::Own(s) => Key::Own(s.into_boxed_str()),
            };
            let bytes = key.bytes_in(self.text, self.base);
            let seen = match &mut index {
                Some(index) => index.get(bytes).copied(),
                None => members
                    .iter()
                    .position(|m| m.key.bytes_in(self.text, self.base) == bytes),
            };
            match seen {
                Some(n) => {
                    plain = false;
                    members[n].value = value;
                }
                None => {
                    if let Some(index) = &mut index {
                        index.insert(bytes.to_vec(), members.len());
                    }
                    members.push(Member { key, value });
                }
            }
            if index.is_none() && members.len() > INDEXED_FROM {
                let names = members.iter().enumerate();
                index = Some(
                    names
                        .map(|(n, m)| (m.key.bytes_in(self.text, self.base).to_vec(), n))
                        .collect(),
                );
            }
        }
        Ok(Read { members, plain })
    }
}

/// From this many members on, names are found through a map.
const INDEXED_FROM: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    fn names_and_values(text: &str) -> Vec<(String, String)> {
        let t = text.as_bytes();
        let members = members(t, 0).expect("an object").members;
        let show = |slot: &Slot| match slot {
            Slot::At(at) => String::from_utf8_lossy(&t[at.clone()]).into_owned(),
            _ => unreachable!("only places after a read"),
        };
        members
            .iter()
            .map(|m| {
                let name = String::from_utf8_lossy(m.key.bytes(t)).into_owned();
                (name, show(&m.value))
            })
            .collect()
    }

    #[test]
    fn members_are_read_in_order_with_the_last_of_a_name_in_the_first_place() {
        let got = names_and_values(r#"{ "a" : [1, 2] ,"b":{"x":1},"\u0061":"last","c":null}"#);
        let want = [("a", r#""last""#), ("b", r#"{"x":1}"#), ("c", "null")];
        let want: Vec<_> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn many_members_are_deduplicated_through_the_index() {
        let mut text = String::from("{");
        for n in 0..100 {
            text.push_str(&format!("\"k{}\":{n},", n % 40));
        }
        text.push_str("\"end\":0}");
        let got = names_and_values(&text);
        assert_eq!(got.len(), 41);
        assert_eq!(got[0], ("k0".to_string(), "80".to_string()));
        let reference: Value = serde_json::from_str(&text).expect("valid");
        let keys: Vec<&String> = reference.as_object().expect("object").keys().collect();
        assert_eq!(keys, got.iter().map(|(k, _)| k).collect::<Vec<_>>());
    }

    #[test]
    fn keys_written_twice_are_not_plain() {
        let plain = |text: &str| members(text.as_bytes(), 0).expect("an object").plain;
        assert!(plain(r#"{"a":1,"b":{"a":2,"a":3}}"#));
        assert!(plain(r#"{"\u0061":1,"\n":2}"#));
        assert!(!plain(r#"{"a":1,"a":2}"#));
        assert!(!plain(r#"{"a":1,"\u0061":2}"#));
    }

    #[test]
    fn what_is_not_an_object_is_an_error() {
        for bad in ["[]", "1", r#""s""#, "{", r#"{"a":1}x"#] {
            assert!(members(bad.as_bytes(), 0).is_err(), "{bad}");
        }
    }
}
