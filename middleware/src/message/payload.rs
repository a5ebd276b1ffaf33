//! `params` and `result`, parsed only when someone looks.
//!
//! Most messages cross mcp-chain without any layer reading their payload
//! (every message, with an empty chain). A [`Payload`] keeps the sender's
//! bytes and parses them on first access; a payload nobody read is written
//! back out as those same bytes, so a 10 MB result costs a copy, not a
//! parse and a re-encode. Once read, it is written from the parsed value:
//! what the peer receives is exactly what the layers checked (a duplicate
//! key cannot show a layer one thing and the server another).

use super::check::{Node, Within};
use super::items::{self, Edited, Item, ListIndex, NoList};
use super::scan::{self, has_backslash, same};
use serde::ser::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::ops::{Deref, DerefMut, Range};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A JSON value that may still be unparsed.
pub struct Payload {
    /// The sender's bytes, until the value is changed.
    raw: Option<Raw>,
    /// The parsed value, once someone looked. Boxed: most payloads are never
    /// parsed, and every message future carries this field.
    value: OnceLock<Box<Value>>,
    /// What is known of where the parts of `raw` are, when it holds a
    /// list; dropped when `raw` changes.
    found: Option<Box<Found>>,
    /// Where the string member last read plainly from `raw` is (see
    /// [`Self::str_member`]): its key's start and its value's end, as two
    /// `u32`s, or 0. Each layer that names a `tools/call`'s tool reads its
    /// `name`; the first one finds it, the others look here. Atomic only
    /// to be shared as `&self`: it is written before it is read, by
    /// whoever holds the message.
    member_at: AtomicU64,
}

/// A payload's text as received: a copy of its own, or, for a big one, its
/// place in the line it came in, shared rather than copied.
#[derive(Clone)]
enum Raw {
    Own(Box<RawValue>),
    /// `line[at]`, which `check::line` passed: UTF-8, one JSON value, cut
    /// where the check found it to start and end. Boxed: most payloads are
    /// small and their own, and every message future carries this.
    Line(Box<(Arc<Vec<u8>>, Range<usize>)>),
}

impl Raw {
    fn get(&self) -> &str {
        match self {
            Self::Own(raw) => raw.get(),
            #[allow(unsafe_code)]
            // SAFETY: see `Raw::Line`: the check passes only UTF-8, and cut
            // it between tokens, so on character boundaries.
            Self::Line(line) => unsafe { std::str::from_utf8_unchecked(&line.0[line.1.clone()]) },
        }
    }
}

/// A payload's text, taken out of its message to be written as it stands
/// (see [`Message::write_line_around`](super::Message::write_line_around)).
pub struct Text(Raw);

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.0.get()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Text({} bytes)", self.len())
    }
}

/// Where the parts of a payload's text are, kept so that the next layer to
/// edit its list need not find them again.
struct Found {
    /// As found when the line was checked (see `check::Outline`): the
    /// whole outline of the text, while it is the sender's.
    outline: Option<Within>,
    /// Where the items of a list are: as the last edit wrote them, or as
    /// found by a pass that changed nothing (a filter that drops no tool
    /// leaves the rewrite after it the list already indexed).
    index: Option<ListIndex>,
}

impl Payload {
    /// A payload as received. The bytes must parse: `Incoming::parse`
    /// checks the line (`check::line`) before making one.
    pub(super) fn raw(raw: Box<RawValue>) -> Self {
        Self::received(Raw::Own(raw))
    }

    /// [`Self::raw`], for a payload left where it is in the line it came in
    /// (`line[at]`, which `check::line` passed): a big one is not copied.
    pub(super) fn in_line(line: Arc<Vec<u8>>, at: Range<usize>) -> Self {
        Self::received(Raw::Line(Box::new((line, at))))
    }

    fn received(raw: Raw) -> Self {
        Self {
            raw: Some(raw),
            value: OnceLock::new(),
            found: None,
            member_at: AtomicU64::new(0),
        }
    }

    /// Keeps the outline the line's check found for this payload, which
    /// must be the whole outline of its text, as received.
    pub(super) fn keep_outline(&mut self, outline: Within) {
        self.found = Some(Box::new(Found {
            outline: Some(outline),
            index: None,
        }));
    }

    /// Notes where the member `name` or `uri` (what a layer asks a
    /// request's params for, see [`crate::target::Target`]) stands, when
    /// this object holds it plainly (as [`Self::str_member`] means it).
    /// `run` is the part of the line's outline inside the payload, which
    /// starts at `base` in the line: found when the line was checked, so
    /// the layers need not scan the text for it.
    pub(super) fn note_named_member(&self, run: &[Node], base: u32) {
        let Some(raw) = &self.raw else {
            return;
        };
        let b = raw.get().as_bytes();
        if b.first() != Some(&b'{') {
            return;
        }
        // The payload's own members are the run's second level.
        let key_of = |node: &Node| {
            let at = (node.key.start - base) as usize;
            &b[at + 1..(node.key.end - base) as usize - 1]
        };
        let members = run.iter().filter(|node| node.depth == 2);
        let mut found = None;
        for (n, node) in members.clone().enumerate() {
            let written = key_of(node);
            if n == PLAIN_MEMBERS
                || node.escaped
                || members
                    .clone()
                    .take(n)
                    .any(|other| same(key_of(other), written))
            {
                // Not plain: the layers' own look finds it unclear too.
                return;
            }
            if found.is_none()
                && NAMED_MEMBERS
                    .iter()
                    .any(|name| same(name.as_bytes(), written))
            {
                found = Some(node);
            }
        }
        if let Some(node) = found {
            let key = (node.key.start - base) as usize;
            let value = (node.value.start - base) as usize..(node.value.end - base) as usize;
            if b[value.start] == b'"' && !has_backslash(&b[value.start + 1..value.end - 1]) {
                remember(&self.member_at, key, value.end);
            }
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
                // The last member of that name is the one a reader keeps.
                let is =
                    |key: &Range<usize>| scan::unquote(&text[key.clone()]).as_deref() == Some(name);
                let mut found = None;
                match self.outline() {
                    Some(outline) => {
                        let top = outline.nodes().filter(|n| n.depth == 1);
                        found = top.filter(|n| is(&n.key())).last().map(|n| n.value());
                    }
                    None => {
                        let b = text.as_bytes();
                        // A key of that name is written out, or escaped: a
                        // text with neither has no such member (a tool's
                        // result asked for `isError`), and is not split.
                        if memchr::memchr(b'\\', b).is_none() && !scan::contains(b, name.as_bytes())
                        {
                            return None;
                        }
                        scan::members(b, 0, |key, value| {
                            let end = scan::value_end(b, value)?;
                            if is(&key) {
                                found = Some(value..end);
                            }
                            Some(end)
                        })?;
                    }
                }
                serde_json::from_str(&text[found?]).ok().map(Cow::Owned)
            }
            (None, None) => None,
        }
    }

    /// The string member `key` of an object, read from the sender's bytes
    /// when they say it plainly, so a layer that needs only a tool's name
    /// leaves the call's arguments unparsed. `None` when this is not an
    /// object, has no such member, or it is not a string.
    ///
    /// The bytes say it plainly when no key is written twice or with an
    /// escape, and the string holds no escape: then every reader of the
    /// text, the peer included, finds this same value. Otherwise the
    /// payload is parsed, and from then on written from what was read.
    pub fn str_member(&self, key: &str) -> Option<&str> {
        match self.plainly(key) {
            Some((text, Plain::String(at))) => return Some(&text[at.value]),
            Some((_, Plain::Other)) => return None,
            Some((_, Plain::Unclear)) | None => {}
        }
        self.force().get(key)?.as_str()
    }

    /// The sender's text, while the payload is still that, and how plainly
    /// it holds the member `key`.
    fn plainly(&self, key: &str) -> Option<(&str, Plain)> {
        let (None, Some(raw)) = (self.value.get(), &self.raw) else {
            return None;
        };
        let text = raw.get();
        if let Some(at) = recall(&self.member_at, text, key) {
            return Some((text, Plain::String(at)));
        }
        let plain = plain_member(text, key);
        if let Plain::String(at) = &plain {
            remember(&self.member_at, at.key, at.value.end + 1);
        }
        Some((text, plain))
    }

    /// Sets the member `key` of an object to the string `value`. When the
    /// sender's bytes hold it plainly (see [`Self::str_member`]) only its
    /// text is replaced and the rest stays as it was sent; otherwise the
    /// payload is parsed and the member set there. Nothing happens when
    /// this is not an object.
    pub fn set_str_member(&mut self, key: &str, value: &str) {
        if let Some((text, Plain::String(at))) = self.plainly(key) {
            // Exactly the new text's size when the value needs no escape,
            // so making it a `Box<RawValue>` does not reallocate.
            let mut out = Vec::with_capacity(text.len() - at.value.len() + value.len());
            out.extend_from_slice(&text.as_bytes()[..at.value.start - 1]);
            let start = out.len();
            super::write_str(value, &mut out);
            let end = out.len();
            out.extend_from_slice(&text.as_bytes()[at.value.end + 1..]);
            #[allow(unsafe_code)]
            // SAFETY: one string of valid JSON text, quotes included,
            // replaced by another (`write_str`): still valid JSON, and
            // still UTF-8, being cut only at the quotes.
            let raw = unsafe { RawValue::from_string_unchecked(String::from_utf8_unchecked(out)) };
            self.replace_raw(raw, None);
            // Where the new value is, when it was written as it reads: the
            // next layer to read it need not scan again.
            if end - start == value.len() + 2 {
                remember(&self.member_at, at.key, end);
            }
            return;
        }
        if let Value::Object(map) = &mut **self {
            map.insert(key.to_owned(), Value::String(value.to_owned()));
        }
    }

    /// Edits the items of the array member `key` (`tools`, `prompts`, …) of
    /// an object payload, one by one; an item is kept when `edit` returns
    /// true. Items are read member by member and the rest of the payload
    /// stays the sender's bytes (see [`Item`]), so a layer renaming 1,000
    /// tools does not parse their schemas. Nothing happens when there is no
    /// such array.
    pub fn edit_items(&mut self, key: &str, mut edit: impl FnMut(&mut Item<'_>) -> bool) {
        let (text, index) = match self.plain_list(key) {
            Ok(found) => found,
            Err(true) => return,
            Err(false) => return self.edit_parsed(key, edit),
        };
        let edited = items::edit(text, &index, &mut edit);
        let found = fresh(index);
        self.settle(edited, found);
    }

    /// Keeps the items of the array member `key` for which `keep` returns
    /// true, given the item's string member `member` (`None` when it has
    /// none); the items are neither split nor parsed, and those kept are
    /// copied as they stand. False, with nothing done, when the list does
    /// not hold its keys plainly (see `items::retain`) or the payload was
    /// parsed: [`Self::edit_items`] then does it item by item.
    pub fn retain_items(
        &mut self,
        key: &str,
        member: &str,
        mut keep: impl FnMut(Option<&str>) -> bool,
    ) -> bool {
        let (text, index) = match self.plain_list(key) {
            Ok(found) => found,
            Err(done) => return done,
        };
        let Some(edited) = items::retain(text, &index, member, &mut keep) else {
            return false;
        };
        let found = fresh(index);
        self.settle(edited, found);
        true
    }

    /// Puts `prefix` before the string member `member` of every item of
    /// the array member `key` that has one, calling `seen` with each name
    /// so prefixed; the rest of the text is copied as it stands, items
    /// neither split nor parsed. False, with nothing done, when the list
    /// does not hold its members plainly (see `items::prefix`) or the
    /// payload was parsed: [`Self::edit_items`] then does it item by item.
    pub fn prefix_items(
        &mut self,
        key: &str,
        member: &str,
        prefix: &str,
        mut seen: impl FnMut(&str),
    ) -> bool {
        let (text, index) = match self.plain_list(key) {
            Ok(found) => found,
            Err(done) => return done,
        };
        // Shifted in place: a copy of it when it was kept from the last
        // pass, which must stand if this one gives up.
        let mut index = index.into_owned();
        match items::prefix(text, &mut index, member, prefix, &mut seen) {
            None => false,
            Some(None) => {
                self.settle(Edited::Unchanged, Some(index));
                true
            }
            Some(Some(text)) => {
                self.settle(Edited::Changed(text, index), None);
                true
            }
        }
    }

    /// The sender's text and where the items of its list `key` are, for a
    /// pass over them. `Err(true)` when there is no such list: nothing to
    /// do. `Err(false)` when the payload was parsed or its keys are
    /// ambiguous: the pass goes item by item over the parsed value.
    fn plain_list(&self, key: &str) -> Result<(&str, Cow<'_, ListIndex>), bool> {
        let (None, Some(raw)) = (self.value.get(), &self.raw) else {
            return Err(false);
        };
        match self.list_index(raw, key) {
            Ok(index) => Ok((raw.get(), index)),
            Err(NoList::Absent) => Err(true),
            Err(NoList::Ambiguous) => Err(false),
        }
    }

    /// Where the items of the list `key` are in `raw` (the payload's text):
    /// as the last edit left them, or found anew.
    fn list_index(&self, raw: &Raw, key: &str) -> Result<Cow<'_, ListIndex>, NoList> {
        match self.found.as_ref().and_then(|found| found.index.as_ref()) {
            Some(index) if index.is_for(key) => Ok(Cow::Borrowed(index)),
            _ => self.find_list(raw, key).map(Cow::Owned),
        }
    }

    /// Where the items of the list `key` are: from the outline when there
    /// is one, else by scanning the text.
    fn find_list(&self, raw: &Raw, key: &str) -> Result<ListIndex, NoList> {
        match self.outline() {
            Some(outline) => ListIndex::from_outline(raw.get(), outline.nodes(), key),
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
        self.outline().is_some()
    }

    /// The outline found when the line was checked, while the text is the
    /// sender's.
    fn outline(&self) -> Option<&Within> {
        self.found.as_ref()?.outline.as_ref()
    }

    /// New text for the payload, and where its list's items are.
    fn replace_raw(&mut self, raw: Box<RawValue>, index: Option<ListIndex>) {
        self.raw = Some(Raw::Own(raw));
        self.found = index.map(|index| {
            Box::new(Found {
                outline: None,
                index: Some(index),
            })
        });
        *self.member_at.get_mut() = 0;
    }

    /// Takes what a pass over the list made of it: the new text and where
    /// its items are, or, when nothing changed, the index the pass found
    /// (`found`, when it had to find one), kept for the next.
    fn settle(&mut self, edited: Edited, found: Option<ListIndex>) {
        match edited {
            Edited::Changed(text, index) => {
                #[allow(unsafe_code)]
                // SAFETY: `items::edit`, `retain` and `prefix` write valid JSON
                // without blanks around it: pieces of the sender's text,
                // checked when the line was read (`check::line`) and cut
                // where a token starts or ends, joined by punctuation, with
                // `write_str`'s strings and serde_json's output between.
                let raw = unsafe { RawValue::from_string_unchecked(text) };
                self.replace_raw(raw, Some(index));
            }
            Edited::Unchanged => {
                if let Some(index) = found {
                    let kept = self.found.get_or_insert_with(|| {
                        Box::new(Found {
                            outline: None,
                            index: None,
                        })
                    });
                    kept.index = Some(index);
                }
            }
        }
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

    /// The sender's text, taken out, while no one has read the payload.
    pub(super) fn into_raw_text(self) -> Option<Text> {
        match (self.value.get(), self.raw) {
            (None, Some(raw)) => Some(Text(raw)),
            _ => None,
        }
    }

    /// Whether the payload is still the sender's bytes, unread.
    pub fn is_untouched(&self) -> bool {
        self.value.get().is_none()
    }
}

/// The index in `index` when it was found anew rather than borrowed from
/// the payload: the one to keep after a pass that changed nothing.
fn fresh(index: Cow<'_, ListIndex>) -> Option<ListIndex> {
    match index {
        Cow::Owned(index) => Some(index),
        Cow::Borrowed(_) => None,
    }
}

/// How plainly an object's text holds one member (see
/// [`Payload::str_member`]).
enum Plain {
    /// A string without escapes, under a key written once.
    String(PlainAt),
    /// No such member, or not a string, or not an object.
    Other,
    /// A key written twice or with an escape, an escaped string, or more
    /// members than are compared: the text must be parsed to tell.
    Unclear,
}

/// Where a string member held plainly is.
struct PlainAt {
    /// Its key's opening quote.
    key: usize,
    /// Its value's text, between the quotes.
    value: Range<usize>,
}

/// Keeps in `plain` (see [`Payload::member_at`]) where the string member whose
/// key starts at `key` and whose value ends just before `end` is.
fn remember(plain: &AtomicU64, key: usize, end: usize) {
    // Lines are capped well below 4 GiB; a position that does not fit is
    // simply not kept. A key starts after the object's brace: never 0.
    if let (Ok(key), Ok(end)) = (u32::try_from(key), u32::try_from(end)) {
        plain.store(u64::from(key) << 32 | u64::from(end), Ordering::Relaxed);
    }
}

/// Where the string member `key` of `text` is, when it is the one `plain`
/// keeps: the key found there must be `key`, written plainly.
fn recall(plain: &AtomicU64, text: &str, key: &str) -> Option<PlainAt> {
    let kept = plain.load(Ordering::Relaxed);
    if kept == 0 {
        return None;
    }
    let (at, end) = ((kept >> 32) as usize, (kept & u64::from(u32::MAX)) as usize);
    let b = text.as_bytes();
    let name_end = at + 1 + key.len();
    if !same(b.get(at + 1..name_end)?, key.as_bytes()) || b.get(name_end) != Some(&b'"') {
        return None;
    }
    // The colon, perhaps between blanks, then the value's opening quote.
    let mut i = name_end + 1;
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r' | b':')) {
        i += 1;
    }
    Some(PlainAt {
        key: at,
        value: i + 1..end - 1,
    })
}

/// Up to this many members are read from the text by [`plain_member`]; a
/// `tools/call` has two or three.
const PLAIN_MEMBERS: usize = 16;

/// The members [`Payload::note_named_member`] looks for.
const NAMED_MEMBERS: [&str; 2] = ["name", "uri"];

/// Where the member `key` of the object `text` (valid JSON) stands. Keys
/// are compared byte by byte rather than with `memcmp`: they are short, and
/// this runs for every `tools/call` in each layer that names its tool.
fn plain_member(text: &str, key: &str) -> Plain {
    let b = text.as_bytes();
    let mut keys: [&[u8]; PLAIN_MEMBERS] = [&[]; PLAIN_MEMBERS];
    let (mut seen, mut found, mut unclear) = (0, None, false);
    let object = scan::members(b, 0, |at, value| {
        // The key without its quotes.
        let written = &b[at.start + 1..at.end - 1];
        if seen == PLAIN_MEMBERS
            || has_backslash(written)
            || keys[..seen].iter().any(|other| same(other, written))
        {
            unclear = true;
            return None;
        }
        keys[seen] = written;
        seen += 1;
        let end = scan::value_end(b, value)?;
        if same(written, key.as_bytes()) {
            found = Some((at.start, value..end));
        }
        Some(end)
    });
    match found {
        _ if unclear => Plain::Unclear,
        Some((key, value)) if object.is_some() && b[value.start] == b'"' => {
            let value = value.start + 1..value.end - 1;
            if has_backslash(&b[value.clone()]) {
                Plain::Unclear
            } else {
                Plain::String(PlainAt { key, value })
            }
        }
        _ => Plain::Other,
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self {
            raw: None,
            value: OnceLock::from(Box::new(value)),
            found: None,
            member_at: AtomicU64::new(0),
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
        self.found = None;
        *self.member_at.get_mut() = 0;
        self.value.get_mut().expect("forced just above")
    }
}

impl Clone for Payload {
    fn clone(&self) -> Self {
        Self {
            raw: self.raw.clone(),
            value: self.value.clone(),
            // Caches: the copy finds the list again if it is edited.
            found: None,
            member_at: AtomicU64::new(0),
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
            (None, Some(Raw::Own(raw))) => raw.serialize(s),
            (None, Some(raw)) => {
                #[allow(unsafe_code)]
                // SAFETY: the text passed `check::line` (see `Raw`).
                let own = unsafe { RawValue::from_string_unchecked(raw.get().to_owned()) };
                own.serialize(s)
            }
            (None, None) => s.serialize_unit(),
        }
    }
}
