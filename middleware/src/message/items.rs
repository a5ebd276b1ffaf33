//! The items of a list result, edited one by one without parsing the list.
//!
//! `tools/list` with 1,000 tools is about 200 KB, and the layers that edit
//! it (filter drops items, rewrite renames them) read one or two members of
//! each item. Parsing the whole result into a `Value` to do that cost ten
//! times more than everything else mcp-chain does to the message. Here the
//! result stays the sender's text: the array is split into items and each
//! item into members ([`scan`](super::scan)), a member is parsed only when a
//! layer reads or changes it, and the result is written back from those
//! pieces. Unchanged items go out exactly as the server wrote them. Writing
//! records where the pieces landed ([`ListIndex`]), so the next layer to
//! edit the same list does not split it again.
//!
//! What the peer receives is still what the layers read: a later read of
//! the payload parses the text written here. Where the text is ambiguous, a
//! key written twice in the result or in an item, that part is parsed into a
//! `Value` (the last of the duplicates counts, as everywhere else).

use super::scan::{self, Span};
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;

/// Where the parts of a list result are in its text.
#[derive(Debug, Clone)]
pub(super) struct ListIndex {
    /// The name of the array member.
    key: String,
    /// The result's members.
    top: Vec<Span>,
    /// Which of them is the array.
    at: usize,
    items: Vec<Element>,
    /// The members of every item that is an object, item after item.
    members: Vec<Span>,
}

#[derive(Debug, Clone)]
struct Element {
    span: Range<usize>,
    /// Its members in [`ListIndex::members`], when it is an object that
    /// was split; otherwise it is split when read.
    members: Option<Range<usize>>,
}

/// Why a payload's text could not be indexed.
pub(super) enum NoList {
    /// There is no such array: nothing to edit.
    Absent,
    /// A key is written twice in the result: parse it whole.
    Ambiguous,
}

impl ListIndex {
    /// Splits `text` (valid JSON) as far as editing the array `key` needs.
    pub(super) fn scan(text: &str, key: &str) -> Result<Self, NoList> {
        let b = text.as_bytes();
        let (mut top, mut items, mut members) = (Vec::new(), Vec::new(), Vec::new());
        let (mut at, mut seen) = (None, 0);
        // One pass: the array is split while the result's members are.
        scan::object_with(b, 0, &mut top, |name, start| {
            seen += 1;
            if at.is_some() || scan::unquote(&text[name]).as_deref() != Some(key) {
                return scan::value_end(b, start);
            }
            at = Some(seen - 1);
            match split_array(b, start, &mut items, &mut members) {
                Some(end) => Some(end),
                // Not an array: nothing to edit, but the scan goes on.
                None => {
                    at = None;
                    scan::value_end(b, start)
                }
            }
        })
        .ok_or(NoList::Absent)?;
        let names: Vec<_> = top
            .iter()
            .map(|(k, _)| scan::unquote(&text[k.clone()]))
            .collect();
        for (n, name) in names.iter().enumerate() {
            if name.is_none() || names[..n].contains(name) {
                return Err(NoList::Ambiguous);
            }
        }
        Ok(Self {
            key: key.to_owned(),
            top,
            at: at.ok_or(NoList::Absent)?,
            items,
            members,
        })
    }

    /// Whether this indexes the array `key`.
    pub(super) fn is_for(&self, key: &str) -> bool {
        self.key == key
    }
}

/// Splits the array at `start` into `items`, and each item that is an
/// object into `members`; returns where the array ends.
fn split_array(
    b: &[u8],
    start: usize,
    items: &mut Vec<Element>,
    members: &mut Vec<Span>,
) -> Option<usize> {
    scan::array(b, start, |start| {
        let first = members.len();
        let (end, split) = match scan::object(b, start, members) {
            Some(end) => (end, Some(first..members.len())),
            None => {
                members.truncate(first);
                (scan::value_end(b, start)?, None)
            }
        };
        items.push(Element {
            span: start..end,
            members: split,
        });
        Some(end)
    })
}

/// What [`edit`] did.
pub(super) enum Edited {
    /// No item was changed or dropped: the text stands.
    Unchanged,
    /// The new text (valid JSON, no blanks around it) and its index.
    Changed(String, ListIndex),
}

/// Edits the items `index` found in `text`; an item is kept when `edit`
/// returns true.
pub(super) fn edit(
    text: &str,
    index: &ListIndex,
    edit: &mut dyn FnMut(&mut Item<'_>) -> bool,
) -> Edited {
    let mut kept = Vec::with_capacity(index.items.len());
    let mut changed = false;
    for element in &index.items {
        let mut item = match &element.members {
            Some(members) => Item::split(text, element, &index.members[members.clone()]),
            None => Item::raw(&text[element.span.clone()]),
        };
        if edit(&mut item) {
            changed |= item.changed();
            kept.push((element, item));
        } else {
            changed = true;
        }
    }
    if !changed {
        return Edited::Unchanged;
    }
    let mut out = Vec::with_capacity(text.len() + text.len() / 8);
    let mut new = ListIndex {
        key: index.key.clone(),
        top: Vec::with_capacity(index.top.len()),
        at: index.at,
        items: Vec::with_capacity(kept.len()),
        members: Vec::with_capacity(index.members.len()),
    };
    out.push(b'{');
    for (n, (key, value)) in index.top.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let key = copy(text, key, &mut out);
        out.push(b':');
        let value = if n == index.at {
            let start = out.len();
            out.push(b'[');
            for (i, (element, item)) in kept.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let item_start = out.len();
                let members = item.write(text, element, &index.members, &mut out, &mut new.members);
                new.items.push(Element {
                    span: item_start..out.len(),
                    members,
                });
            }
            out.push(b']');
            start..out.len()
        } else {
            copy(text, value, &mut out)
        };
        new.top.push((key, value));
    }
    out.push(b'}');
    let text = String::from_utf8(out).expect("pieces of UTF-8 text and serde_json output");
    Edited::Changed(text, new)
}

/// Appends `text[span]` to `out`; returns where it landed.
fn copy(text: &str, span: &Range<usize>, out: &mut Vec<u8>) -> Range<usize> {
    let start = out.len();
    out.extend_from_slice(&text.as_bytes()[span.clone()]);
    start..out.len()
}

/// One item of a list, as [`Payload::edit_items`](super::Payload::edit_items)
/// hands it to a layer.
pub struct Item<'a>(Repr<'a>);

enum Repr<'a> {
    /// An object, split into members.
    Members {
        members: Vec<Member<'a>>,
        changed: bool,
    },
    /// Something other than an object: nothing to read in it.
    Other,
    /// Parsed, because it has a key twice.
    Parsed(Value),
    /// An item of a payload that was already parsed, edited in place.
    InPlace(&'a mut Value),
}

struct Member<'a> {
    /// The key as written, quotes included.
    key: Cow<'a, str>,
    /// The key as the string it stands for.
    name: Cow<'a, str>,
    value: Slot<'a>,
}

enum Slot<'a> {
    Raw(&'a str),
    Parsed(Value),
}

impl<'a> Item<'a> {
    /// An item the index did not split (valid JSON).
    fn raw(text: &'a str) -> Self {
        let mut spans = Vec::new();
        match scan::object(text.as_bytes(), 0, &mut spans) {
            Some(_) => Self::from_spans(text, &spans, text),
            None => Self(Repr::Other),
        }
    }

    /// An item the index split.
    fn split(text: &'a str, element: &Element, spans: &[Span]) -> Self {
        Self::from_spans(text, spans, &text[element.span.clone()])
    }

    fn from_spans(text: &'a str, spans: &[Span], whole: &str) -> Self {
        let mut members: Vec<Member<'a>> = Vec::with_capacity(spans.len());
        for (key, value) in spans {
            let key = &text[key.clone()];
            let Some(name) = scan::unquote(key) else {
                return Self::parsed(whole);
            };
            if members.iter().any(|m| m.name == name) {
                return Self::parsed(whole);
            }
            members.push(Member {
                key: key.into(),
                name,
                value: Slot::Raw(&text[value.clone()]),
            });
        }
        Self(Repr::Members {
            members,
            changed: false,
        })
    }

    fn parsed(text: &str) -> Self {
        Self(Repr::Parsed(
            serde_json::from_str(text).unwrap_or(Value::Null),
        ))
    }

    /// An item of a payload that was already parsed.
    pub(super) fn in_place(value: &'a mut Value) -> Self {
        Self(Repr::InPlace(value))
    }

    /// The member `name` when it is a string. `None` when this is not an
    /// object, has no such member, or it is not a string.
    pub fn str_member(&self, name: &str) -> Option<Cow<'_, str>> {
        match &self.0 {
            Repr::Members { members, .. } => {
                match &members.iter().find(|m| m.name == name)?.value {
                    Slot::Raw(text) if text.starts_with('"') => scan::unquote(text),
                    Slot::Raw(_) => None,
                    Slot::Parsed(value) => value.as_str().map(Cow::Borrowed),
                }
            }
            Repr::Other => None,
            Repr::Parsed(value) => value.get(name)?.as_str().map(Cow::Borrowed),
            Repr::InPlace(value) => value.get(name)?.as_str().map(Cow::Borrowed),
        }
    }

    /// The member `name`, parsed, to change in place.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        match &mut self.0 {
            Repr::Members { members, changed } => {
                let member = members.iter_mut().find(|m| m.name == name)?;
                if let Slot::Raw(text) = member.value {
                    member.value = Slot::Parsed(serde_json::from_str(text).unwrap_or(Value::Null));
                }
                *changed = true;
                match &mut member.value {
                    Slot::Parsed(value) => Some(value),
                    Slot::Raw(_) => None,
                }
            }
            Repr::Other => None,
            Repr::Parsed(value) => value.get_mut(name),
            Repr::InPlace(value) => value.get_mut(name),
        }
    }

    /// Sets the member `name`: in its place when it is there, last when
    /// not. Nothing happens when this is not an object.
    pub fn insert(&mut self, name: &str, value: Value) {
        match &mut self.0 {
            Repr::Members { members, changed } => {
                *changed = true;
                match members.iter_mut().find(|m| m.name == name) {
                    Some(member) => member.value = Slot::Parsed(value),
                    None => members.push(Member {
                        key: Value::from(name).to_string().into(),
                        name: name.to_owned().into(),
                        value: Slot::Parsed(value),
                    }),
                }
            }
            Repr::Other => {}
            Repr::Parsed(item) => insert_into(item, name, value),
            Repr::InPlace(item) => insert_into(item, name, value),
        }
    }

    /// Whether writing this item needs more than copying its text.
    fn changed(&self) -> bool {
        match &self.0 {
            Repr::Members { changed, .. } => *changed,
            Repr::Other | Repr::InPlace(_) => false,
            Repr::Parsed(_) => true,
        }
    }

    /// Appends the item to `out` and where its members landed to `spans`;
    /// returns which of `spans` are its own, when it recorded them.
    fn write(
        &self,
        text: &str,
        element: &Element,
        old: &[Span],
        out: &mut Vec<u8>,
        spans: &mut Vec<Span>,
    ) -> Option<Range<usize>> {
        let first = spans.len();
        let start = out.len();
        match &self.0 {
            Repr::Members { members, .. } if self.changed() => {
                out.push(b'{');
                for (i, member) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    let key = out.len()..out.len() + member.key.len();
                    out.extend_from_slice(member.key.as_bytes());
                    out.push(b':');
                    let value = out.len();
                    match &member.value {
                        Slot::Raw(text) => out.extend_from_slice(text.as_bytes()),
                        Slot::Parsed(value) => write_value(value, out),
                    }
                    spans.push((key, value..out.len()));
                }
                out.push(b'}');
            }
            Repr::Parsed(value) => {
                write_value(value, out);
                return None;
            }
            Repr::InPlace(value) => {
                write_value(value, out);
                return None;
            }
            Repr::Members { .. } | Repr::Other => {
                copy(text, &element.span, out);
                // Copied as it was: its members moved with it.
                let members = element.members.clone()?;
                let shift = |r: &Range<usize>| {
                    r.start - element.span.start + start..r.end - element.span.start + start
                };
                spans.extend(old[members].iter().map(|(k, v)| (shift(k), shift(v))));
            }
        }
        Some(first..spans.len())
    }
}

fn insert_into(item: &mut Value, name: &str, value: Value) {
    if let Some(map) = item.as_object_mut() {
        map.insert(name.to_owned(), value);
    }
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    serde_json::to_writer(out, value).expect("a Value always serializes into a Vec");
}
