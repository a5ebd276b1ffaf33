//! The items of a list result, edited one by one without parsing the list.
//!
//! `tools/list` with 1,000 tools is about 200 KB, and the layers that edit
//! it (filter drops items, rewrite renames them) read one or two members of
//! each item. Parsing the whole result into a `Value` to do that cost ten
//! times more than everything else mcp-chain does to the message. Here the
//! result stays the sender's text: where the items and their members are
//! comes from the outline recorded when the line was checked (`check`), or
//! from a scan ([`super::scan`]) when there is none; a member is parsed only
//! when a layer reads or changes it, and the result is written back from
//! those pieces. Unchanged items go out exactly as the server wrote them. Writing
//! records where the pieces landed ([`ListIndex`]), so the next layer to
//! edit the same list does not split it again.
//!
//! What the peer receives is still what the layers read: a later read of
//! the payload parses the text written here. Where the text is ambiguous, a
//! key written twice in the result or in an item, that part is parsed into a
//! `Value` (the last of the duplicates counts, as everywhere else).

use super::check::Node;
use super::scan::{self, has_backslash, same, Span};
use serde_json::Value;
use std::borrow::Cow;
use std::ops::Range;

/// Where the parts of a list result are in its text.
#[derive(Debug, Clone, PartialEq)]
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

#[derive(Debug, Clone, PartialEq)]
struct Element {
    span: Range<usize>,
    /// Its members, when it is an object that was split; otherwise it is
    /// split when read.
    members: Option<Split>,
}

#[derive(Debug, Clone, PartialEq)]
struct Split {
    /// Where they are in [`ListIndex::members`].
    at: Range<usize>,
    /// Whether every key reads as written (no escapes) and none is there
    /// twice: the keys are then compared as they stand.
    plain: bool,
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
        Self::new(text, key, top, at, items, members)
    }

    /// [`Self::scan`], from the outline the line's check recorded (see
    /// `check::Outline`): the parts are where it says, so only the keys are
    /// read.
    pub(super) fn from_outline(
        text: &str,
        nodes: impl ExactSizeIterator<Item = Node>,
        key: &str,
    ) -> Result<Self, NoList> {
        let b = text.as_bytes();
        if b.first() != Some(&b'{') {
            return Err(NoList::Absent);
        }
        // Sized for the usual case, a result that is little but the list:
        // about one node an item and the rest its members.
        let (mut top, mut items, mut members) = (
            Vec::new(),
            Vec::with_capacity(nodes.len() / 4),
            Vec::with_capacity(nodes.len()),
        );
        let mut at = None;
        // What the array's run left (the rest is dropped as it comes), and
        // where the current item's members start.
        let (mut kept_items, mut kept_members, mut item_members) = (0, 0, 0);
        // Whether a key among the current item's members holds an escape.
        let mut escaped = false;
        for node in nodes {
            match node.depth {
                // A member of an item (or something deeper in the result).
                3 => {
                    members.push((node.key(), node.value()));
                    escaped |= node.escaped;
                }
                // An item (or a member of another of the result's values).
                2 => {
                    let span = node.value();
                    let split = if b[span.start] == b'{' {
                        let at = item_members..members.len();
                        let plain = !escaped && distinct_keys(b, &members[at.clone()]);
                        Some(Split { at, plain })
                    } else {
                        members.truncate(item_members);
                        None
                    };
                    items.push(Element {
                        span,
                        members: split,
                    });
                    item_members = members.len();
                    escaped = false;
                }
                // One of the result's members.
                1 => {
                    let value = node.value();
                    let name = || scan::unquote(&text[node.key()]);
                    if at.is_none() && b[value.start] == b'[' && name().as_deref() == Some(key) {
                        at = Some(top.len());
                        (kept_items, kept_members) = (items.len(), members.len());
                    } else {
                        items.truncate(kept_items);
                        members.truncate(kept_members);
                    }
                    item_members = members.len();
                    escaped = false;
                    top.push((node.key(), value));
                }
                // Deeper than an item's members: not needed.
                _ => {}
            }
        }
        Self::new(text, key, top, at, items, members)
    }

    /// The index, unless the result's keys are ambiguous: a key written
    /// twice, or one that does not decode.
    fn new(
        text: &str,
        key: &str,
        top: Vec<Span>,
        at: Option<usize>,
        items: Vec<Element>,
        members: Vec<Span>,
    ) -> Result<Self, NoList> {
        let names: Option<Vec<_>> = top
            .iter()
            .map(|(k, _)| scan::unquote(&text[k.clone()]))
            .collect();
        if !names.is_some_and(|mut names| distinct(&mut names)) {
            return Err(NoList::Ambiguous);
        }
        Ok(Self {
            key: key.to_owned(),
            top,
            at: at.ok_or(NoList::Absent)?,
            items,
            members,
        })
    }

    /// An index of the same list with nothing in it yet, with room for as
    /// much as this one holds: what an edit of the list fills in.
    fn emptied(&self) -> Self {
        Self {
            key: self.key.clone(),
            top: Vec::with_capacity(self.top.len()),
            at: self.at,
            items: Vec::with_capacity(self.items.len()),
            members: Vec::with_capacity(self.members.len()),
        }
    }

    /// The result's members once the list's text is `shift` bytes longer
    /// (or shorter): those before it stay, it ends later, the rest move.
    fn top_moved(&self, shift: isize) -> Vec<Span> {
        let moves = |n: usize| match n.cmp(&self.at) {
            std::cmp::Ordering::Less => (0, 0),
            std::cmp::Ordering::Equal => (0, shift),
            std::cmp::Ordering::Greater => (shift, shift),
        };
        self.top
            .iter()
            .enumerate()
            .map(|(n, (key, value))| {
                let (start, end) = moves(n);
                (moved(key, start, start), moved(value, start, end))
            })
            .collect()
    }

    /// Whether this indexes the array `key`.
    pub(super) fn is_for(&self, key: &str) -> bool {
        self.key == key
    }

    /// Records an item copied unchanged to `to`, with its members (`old`
    /// is the members of the index it comes from).
    fn keep(&mut self, element: &Element, to: usize, old: &[Span]) {
        let members = element.moved(to, old, &mut self.members);
        self.items.push(Element {
            span: to..to + element.span.len(),
            members,
        });
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
            Some(end) => {
                let plain = plain_keys(b, &members[first..]);
                (
                    end,
                    Some(Split {
                        at: first..members.len(),
                        plain,
                    }),
                )
            }
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

/// Whether an item's keys read as written and none is there twice.
fn plain_keys(b: &[u8], spans: &[Span]) -> bool {
    let escaped = spans.iter().any(|(key, _)| has_backslash(&b[key.clone()]));
    !escaped && distinct_keys(b, spans)
}

/// Whether no key of an item is written twice (as written: keys without
/// escapes are the same when their bytes are).
fn distinct_keys(b: &[u8], spans: &[Span]) -> bool {
    if spans.len() <= FEW {
        return spans.iter().enumerate().all(|(n, (key, _))| {
            let key = &b[key.clone()];
            spans[..n]
                .iter()
                .all(|(other, _)| !same(&b[other.clone()], key))
        });
    }
    let mut keys: Vec<&[u8]> = spans.iter().map(|(key, _)| &b[key.clone()]).collect();
    distinct(&mut keys)
}

/// Up to this many keys are compared pair by pair; more are sorted first.
const FEW: usize = 16;

/// Whether no two of `keys` are equal (their order is not kept). Pair by
/// pair for the handful of keys an object usually has; sorted beyond
/// [`FEW`], so that an object of 100,000 members, which a server may
/// send, costs n log n rather than n² (it took seconds).
fn distinct<T: Ord>(keys: &mut [T]) -> bool {
    if keys.len() <= FEW {
        return keys
            .iter()
            .enumerate()
            .all(|(n, key)| !keys[..n].contains(key));
    }
    keys.sort_unstable();
    keys.windows(2).all(|pair| pair[0] != pair[1])
}

/// What [`edit`] did.
pub(super) enum Edited {
    /// No item was changed or dropped: the text stands.
    Unchanged,
    /// The new text (valid JSON, no blanks around it) and its index.
    Changed(String, ListIndex),
}

/// Edits the items `index` found in `text`; an item is kept when `edit`
/// returns true. The new text is written as the items are seen, and
/// thrown away if none was changed or dropped.
pub(super) fn edit(
    text: &str,
    index: &ListIndex,
    edit: &mut dyn FnMut(&mut Item<'_>) -> bool,
) -> Edited {
    let mut out = Vec::with_capacity(text.len() + text.len() / 8);
    let mut new = index.emptied();
    out.push(b'{');
    let mut top = index.top.iter();
    for (key, value) in top.by_ref().take(index.at) {
        let key = copy(text, key, &mut out);
        out.push(b':');
        let value = copy(text, value, &mut out);
        out.push(b',');
        new.top.push((key, value));
    }
    let (key, _) = top.next().expect("the index points at one of the members");
    let key = copy(text, key, &mut out);
    out.push(b':');
    let start = out.len();
    out.push(b'[');
    // One buffer for the members of every item in turn.
    let mut members = Vec::new();
    let mut changed = false;
    // Items kept as they were are copied a stretch at a time, separators
    // included: where in `text` the stretch is, and where in `out` it goes.
    let mut run: Option<(Range<usize>, usize)> = None;
    for (n, element) in index.items.iter().enumerate() {
        members.clear();
        let mut item = match &element.members {
            Some(split) => Item::split(text, element, split, &index.members, &mut members),
            None => Item::raw(&text[element.span.clone()], &mut members),
        };
        let kept = edit(&mut item);
        if kept && !item.changed() {
            let to = match &mut run {
                Some((stretch, to)) => {
                    let to = *to + (element.span.start - stretch.start);
                    stretch.end = element.span.end;
                    to
                }
                None => {
                    if !new.items.is_empty() {
                        out.push(b',');
                    }
                    run = Some((element.span.clone(), out.len()));
                    out.len()
                }
            };
            // Where kept items went is recorded once something changed:
            // most passes (a filter that drops nothing) change nothing.
            if changed {
                new.keep(element, to, &index.members);
            }
            continue;
        }
        if !changed {
            changed = true;
            // Every item before this one was kept as it was, in `run`.
            if let Some((stretch, to)) = &run {
                for before in &index.items[..n] {
                    new.keep(
                        before,
                        to + (before.span.start - stretch.start),
                        &index.members,
                    );
                }
            }
        }
        if let Some((stretch, _)) = run.take() {
            copy(text, &stretch, &mut out);
        }
        if !kept {
            continue;
        }
        if !new.items.is_empty() {
            out.push(b',');
        }
        let item_start = out.len();
        let spans = item.write(&mut out, &mut new.members);
        new.items.push(Element {
            span: item_start..out.len(),
            members: spans,
        });
    }
    if !changed {
        return Edited::Unchanged;
    }
    if let Some((stretch, _)) = run.take() {
        copy(text, &stretch, &mut out);
    }
    out.push(b']');
    new.top.push((key, start..out.len()));
    for (key, value) in top {
        out.push(b',');
        let key = copy(text, key, &mut out);
        out.push(b':');
        let value = copy(text, value, &mut out);
        new.top.push((key, value));
    }
    out.push(b'}');
    #[allow(unsafe_code)]
    // SAFETY: `out` is pieces of `text` cut where the check or the scan
    // found a token to start or end (never inside a character), ASCII
    // punctuation, keys serde_json wrote, and what `write_value` wrote:
    // serde_json's output or whole strings. (`from_utf8` here was 87k
    // instructions for a 1,000-tool list, 3 % of the two edits.)
    let text = unsafe { String::from_utf8_unchecked(out) };
    Edited::Changed(text, new)
}

/// Keeps the items of the list `index` found in `text` for which `keep`
/// returns true, given the item's string member `member` (`None` when it
/// has none, or is not an object). Items are not split: the member is read
/// where the index says it is, and kept items are copied as written, a run
/// at a time. Most passes keep every item, and then nothing is written.
///
/// `None` when an item does not hold its keys plainly (escaped or written
/// twice): the caller then edits the list item by item ([`edit`]).
pub(super) fn retain(
    text: &str,
    index: &ListIndex,
    member: &str,
    mut keep: impl FnMut(Option<&str>) -> bool,
) -> Option<Edited> {
    let b = text.as_bytes();
    let mut dropped = Vec::new();
    for (n, element) in index.items.iter().enumerate() {
        let value = match &element.members {
            Some(split) if split.plain => {
                let spans = &index.members[split.at.clone()];
                find(b, spans, member)
                    .map(|at| &spans[at].1)
                    .filter(|value| b[value.start] == b'"')
                    .and_then(|value| scan::unquote(&text[value.clone()]))
            }
            Some(_) => return None,
            None if b[element.span.start] == b'{' => return None,
            None => None,
        };
        if !keep(value.as_deref()) {
            dropped.push(n);
        }
    }
    if dropped.is_empty() {
        return Some(Edited::Unchanged);
    }
    let list = &index.top[index.at].1;
    let mut out = Vec::with_capacity(text.len());
    let mut new = index.emptied();
    out.extend_from_slice(&b[..=list.start]);
    // The kept items between two dropped ones, separators and all.
    let mut from = 0;
    for stop in dropped.into_iter().chain([index.items.len()]) {
        let run = &index.items[from..stop];
        from = stop + 1;
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            continue;
        };
        if !new.items.is_empty() {
            out.push(b',');
        }
        let to = out.len();
        out.extend_from_slice(&b[first.span.start..last.span.end]);
        for element in run {
            let at = to + (element.span.start - first.span.start);
            new.keep(element, at, &index.members);
        }
    }
    out.push(b']');
    let shift = out.len() as isize - list.end as isize;
    out.extend_from_slice(&b[list.end..]);
    new.top = index.top_moved(shift);
    #[allow(unsafe_code)]
    // SAFETY: `out` is `text` with items (whole values, cut where the
    // check or the scan found them) and the blanks and commas between them
    // taken out: still UTF-8, and still valid JSON.
    let text = unsafe { String::from_utf8_unchecked(out) };
    Some(Edited::Changed(text, new))
}

/// Puts `prefix` before the string member `member` of each item of the
/// list `index` found in `text`, calling `seen` with each name so
/// prefixed. Nothing is split or parsed: the text is copied as it stands,
/// the prefix written just inside each name's opening quote, and `index`
/// shifted in place to match, so prefixing 1,000 listed tools costs little
/// more than a copy of the list. `Some(None)` when no item has such a
/// member: nothing changed, the index included.
///
/// `None` when an item does not hold its member plainly (an object whose
/// keys are escaped or written twice, or a name with an escape), or when
/// the prefix would need escaping: the caller then edits the list item by
/// item ([`edit`]), which reads those. `index` may then be half shifted,
/// and must be dropped.
pub(super) fn prefix(
    text: &str,
    index: &mut ListIndex,
    member: &str,
    prefix: &str,
    mut seen: impl FnMut(&str),
) -> Option<Option<String>> {
    if prefix.is_empty() || !super::needs_no_escape(prefix) {
        return None;
    }
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    // `text` is copied to `out` up to `copied`; from there on, a position
    // in `text` is `shift` further on in `out`.
    let (mut copied, mut shift) = (0, 0isize);
    let reserve = text.len() + index.items.len() * prefix.len();
    for element in &mut index.items {
        let before = shift;
        match &element.members {
            Some(split) if split.plain => {
                let spans = &mut index.members[split.at.clone()];
                let found = find(b, spans, member).filter(|&at| b[spans[at].1.start] == b'"');
                if let Some(at) = found {
                    let value = &spans[at].1;
                    let old = &text[value.start + 1..value.end - 1];
                    if has_backslash(old.as_bytes()) {
                        return None;
                    }
                    seen(old);
                    if out.capacity() == 0 {
                        out.reserve(reserve);
                    }
                    out.extend_from_slice(&b[copied..=value.start]);
                    out.extend_from_slice(prefix.as_bytes());
                    copied = value.start + 1;
                    shift += prefix.len() as isize;
                }
                if shift != 0 {
                    for (i, (key, value)) in spans.iter_mut().enumerate() {
                        // Members before the prefixed one move as the item
                        // does; it starts there and ends where the new
                        // value does; the rest move on with it.
                        let (start, end) = match found {
                            Some(at) if i < at => (before, before),
                            Some(at) if i == at => (before, shift),
                            _ => (shift, shift),
                        };
                        *key = moved(key, start, start);
                        *value = moved(value, start, end);
                    }
                }
            }
            Some(_) => return None,
            None if b[element.span.start] == b'{' => return None,
            None => {}
        }
        element.span = moved(&element.span, before, shift);
    }
    if copied == 0 {
        return Some(None);
    }
    out.extend_from_slice(&b[copied..]);
    index.top = index.top_moved(shift);
    #[allow(unsafe_code)]
    // SAFETY: `out` is `text` with `prefix` (UTF-8, and nothing in it that
    // a JSON string must escape) written just after opening quotes: still
    // UTF-8, and still valid JSON.
    Some(Some(unsafe { String::from_utf8_unchecked(out) }))
}

/// Which of an item's plain members (`spans`, keys as written) is `member`.
fn find(b: &[u8], spans: &[Span], member: &str) -> Option<usize> {
    spans
        .iter()
        .position(|(key, _)| same(&b[key.start + 1..key.end - 1], member.as_bytes()))
}

/// A span whose start moves by one shift and whose end by another: a
/// renamed value, the item and the list holding it end later (or earlier)
/// than they start.
fn moved(r: &Range<usize>, start: isize, end: isize) -> Range<usize> {
    r.start.wrapping_add_signed(start)..r.end.wrapping_add_signed(end)
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
    /// An object, split into members, which are where they are in `text`
    /// until they are changed.
    Members {
        text: &'a str,
        members: &'a mut Vec<Member>,
        changed: bool,
        /// False when no key as written holds an escape (the split found
        /// the item plain), so writing need not look again.
        escapes: bool,
    },
    /// Something other than an object, as written: nothing to read in it.
    Other(&'a str),
    /// Parsed, because it has a key twice.
    Parsed(Value),
    /// An item of a payload that was already parsed, edited in place.
    InPlace(&'a mut Value),
}

/// A member of an item: pieces of the item's text, or new ones.
struct Member {
    /// The key as written, quotes included.
    key: Piece,
    /// The key as the string it stands for.
    name: Piece,
    value: Slot,
}

enum Piece {
    At(Range<usize>),
    New(String),
}

impl Piece {
    fn get<'t>(&'t self, text: &'t str) -> &'t str {
        match self {
            Self::At(span) => &text[span.clone()],
            Self::New(s) => s,
        }
    }

    /// [`Self::get`] as bytes, without checking that the span falls on
    /// character boundaries (it does: it came from the scan or the check).
    fn get_bytes<'t>(&'t self, text: &'t [u8]) -> &'t [u8] {
        match self {
            Self::At(span) => &text[span.clone()],
            Self::New(s) => s.as_bytes(),
        }
    }

    /// Whether this is the name `name`.
    fn is(&self, text: &str, name: &str) -> bool {
        same(self.get_bytes(text.as_bytes()), name.as_bytes())
    }
}

enum Slot {
    Raw(Range<usize>),
    Parsed(Value),
}

impl<'a> Item<'a> {
    /// An item the index did not split (valid JSON).
    fn raw(text: &'a str, members: &'a mut Vec<Member>) -> Self {
        let mut spans = Vec::new();
        match scan::object(text.as_bytes(), 0, &mut spans) {
            Some(_) => Self::from_spans(text, &spans, text, members),
            None => Self(Repr::Other(text)),
        }
    }

    /// An item the index split.
    fn split(
        text: &'a str,
        element: &Element,
        split: &Split,
        spans: &[Span],
        members: &'a mut Vec<Member>,
    ) -> Self {
        let spans = &spans[split.at.clone()];
        if !split.plain {
            return Self::from_spans(text, spans, &text[element.span.clone()], members);
        }
        members.extend(spans.iter().map(|(key, value)| Member {
            key: Piece::At(key.clone()),
            name: Piece::At(key.start + 1..key.end - 1),
            value: Slot::Raw(value.clone()),
        }));
        Self(Repr::Members {
            text,
            members,
            changed: false,
            escapes: false,
        })
    }

    fn from_spans(
        text: &'a str,
        spans: &[Span],
        whole: &str,
        members: &'a mut Vec<Member>,
    ) -> Self {
        for (key, value) in spans {
            let written = &text[key.clone()];
            let name = if has_backslash(written.as_bytes()) {
                match scan::unquote(written) {
                    Some(name) => Piece::New(name.into_owned()),
                    None => return Self::parsed(whole),
                }
            } else {
                Piece::At(key.start + 1..key.end - 1)
            };
            members.push(Member {
                key: Piece::At(key.clone()),
                name,
                value: Slot::Raw(value.clone()),
            });
        }
        let mut names: Vec<&str> = members.iter().map(|m| m.name.get(text)).collect();
        if !distinct(&mut names) {
            return Self::parsed(whole);
        }
        Self(Repr::Members {
            text,
            members,
            changed: false,
            escapes: true,
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
            Repr::Members { text, members, .. } => {
                match &members.iter().find(|m| m.name.is(text, name))?.value {
                    Slot::Raw(span) => {
                        let value = &text[span.clone()];
                        if value.starts_with('"') {
                            scan::unquote(value)
                        } else {
                            None
                        }
                    }
                    Slot::Parsed(value) => value.as_str().map(Cow::Borrowed),
                }
            }
            Repr::Other(_) => None,
            Repr::Parsed(value) => value.get(name)?.as_str().map(Cow::Borrowed),
            Repr::InPlace(value) => value.get(name)?.as_str().map(Cow::Borrowed),
        }
    }

    /// The member `name`, parsed, to change in place.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        match &mut self.0 {
            Repr::Members {
                text,
                members,
                changed,
                ..
            } => {
                let member = members.iter_mut().find(|m| m.name.is(text, name))?;
                if let Slot::Raw(span) = &member.value {
                    let value = serde_json::from_str(&text[span.clone()]).unwrap_or(Value::Null);
                    member.value = Slot::Parsed(value);
                }
                *changed = true;
                match &mut member.value {
                    Slot::Parsed(value) => Some(value),
                    Slot::Raw(_) => None,
                }
            }
            Repr::Other(_) => None,
            Repr::Parsed(value) => value.get_mut(name),
            Repr::InPlace(value) => value.get_mut(name),
        }
    }

    /// Sets the member `name`: in its place when it is there, last when
    /// not. Nothing happens when this is not an object.
    pub fn insert(&mut self, name: &str, value: Value) {
        match &mut self.0 {
            Repr::Members {
                text,
                members,
                changed,
                ..
            } => {
                *changed = true;
                match members.iter_mut().find(|m| m.name.is(text, name)) {
                    Some(member) => member.value = Slot::Parsed(value),
                    None => members.push(Member {
                        key: Piece::New(Value::from(name).to_string()),
                        name: Piece::New(name.to_owned()),
                        value: Slot::Parsed(value),
                    }),
                }
            }
            Repr::Other(_) => {}
            Repr::Parsed(item) => insert_into(item, name, value),
            Repr::InPlace(item) => insert_into(item, name, value),
        }
    }

    /// Whether writing this item needs more than copying its text.
    fn changed(&self) -> bool {
        match &self.0 {
            Repr::Members { changed, .. } => *changed,
            Repr::Other(_) | Repr::InPlace(_) => false,
            Repr::Parsed(_) => true,
        }
    }

    /// Appends a changed item to `out` and where its members landed to
    /// `spans`; returns which of `spans` are its own, when it recorded them.
    /// (An unchanged item is copied with its neighbours: see [`edit`].)
    fn write(&self, out: &mut Vec<u8>, spans: &mut Vec<Span>) -> Option<Split> {
        let first = spans.len();
        match &self.0 {
            Repr::Members {
                text,
                members,
                escapes,
                ..
            } => {
                let text = text.as_bytes();
                out.push(b'{');
                // No name is there twice (see `from_spans` and `insert`);
                // a key written with an escape makes the item not plain.
                let mut plain = true;
                // Members kept as written are copied a stretch at a time:
                // they are in `members` in the order they were written, and
                // only what follows the last of them was added.
                let mut run: Option<(Range<usize>, usize)> = None;
                for (i, member) in members.iter().enumerate() {
                    if i > 0 && run.is_none() {
                        out.push(b',');
                    }
                    if let (Piece::At(key), Slot::Raw(value)) = (&member.key, &member.value) {
                        plain &= !(*escapes && has_backslash(&text[key.clone()]));
                        let to = match &mut run {
                            Some((stretch, to)) => {
                                stretch.end = value.end;
                                *to
                            }
                            None => {
                                run = Some((key.start..value.end, out.len()));
                                out.len()
                            }
                        };
                        let from = run.as_ref().map_or(key.start, |(stretch, _)| stretch.start);
                        let shift = |r: &Range<usize>| r.start - from + to..r.end - from + to;
                        spans.push((shift(key), shift(value)));
                        continue;
                    }
                    if let Some((stretch, _)) = run.take() {
                        out.extend_from_slice(&text[stretch]);
                        out.push(b',');
                    }
                    let written = member.key.get_bytes(text);
                    plain &= !has_backslash(written);
                    let key = out.len()..out.len() + written.len();
                    out.extend_from_slice(written);
                    out.push(b':');
                    let value = out.len();
                    match &member.value {
                        Slot::Raw(span) => out.extend_from_slice(&text[span.clone()]),
                        Slot::Parsed(value) => write_value(value, out),
                    }
                    spans.push((key, value..out.len()));
                }
                if let Some((stretch, _)) = run.take() {
                    out.extend_from_slice(&text[stretch]);
                }
                out.push(b'}');
                Some(Split {
                    at: first..spans.len(),
                    plain,
                })
            }
            Repr::Parsed(value) => {
                write_value(value, out);
                None
            }
            Repr::InPlace(value) => {
                write_value(value, out);
                None
            }
            Repr::Other(text) => {
                out.extend_from_slice(text.as_bytes());
                None
            }
        }
    }
}

impl Element {
    /// Records the members of this item, copied unchanged to `to`, in
    /// `spans`; returns which of them are its own.
    fn moved(&self, to: usize, old: &[Span], spans: &mut Vec<Span>) -> Option<Split> {
        let split = self.members.as_ref()?;
        let first = spans.len();
        let shift = |r: &Range<usize>| r.start - self.span.start + to..r.end - self.span.start + to;
        spans.extend(
            old[split.at.clone()]
                .iter()
                .map(|(k, v)| (shift(k), shift(v))),
        );
        Some(Split {
            at: first..spans.len(),
            plain: split.plain,
        })
    }
}

fn insert_into(item: &mut Value, name: &str, value: Value) {
    if let Some(map) = item.as_object_mut() {
        map.insert(name.to_owned(), value);
    }
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    // A string (a renamed tool's name) without serde_json's machinery.
    match value {
        Value::String(s) => super::write_str(s, out),
        _ => serde_json::to_writer(out, value).expect("a Value always serializes into a Vec"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::check;
    use super::*;

    /// Both ways of finding a list in `text`, which must agree.
    fn both(text: &str, key: &str) -> [Result<ListIndex, NoList>; 2] {
        let (_, outline) = check::line(text.as_bytes()).expect("valid");
        assert!(outline.complete);
        [
            ListIndex::scan(text, key),
            ListIndex::from_outline(text, outline.nodes.into_iter(), key),
        ]
    }

    /// The index of the list `tools` in `text`, from its outline.
    fn tools(text: &str) -> ListIndex {
        let (_, outline) = check::line(text.as_bytes()).expect("valid");
        ListIndex::from_outline(text, outline.nodes.into_iter(), "tools")
            .ok()
            .expect("a list")
    }

    /// Reads, through `index`, the string members `strings` and the member
    /// `parsed` (as JSON text) of every item, item after item.
    fn read_back(
        text: &str,
        index: &ListIndex,
        strings: &[&str],
        parsed: &str,
    ) -> Vec<Option<String>> {
        let mut seen = Vec::new();
        let read = &mut |item: &mut Item<'_>| {
            for name in strings {
                seen.push(item.str_member(name).map(|v| v.into_owned()));
            }
            seen.push(item.get_mut(parsed).map(|v| v.to_string()));
            true
        };
        // (`get_mut` counts as a change: what is written does not matter.)
        let _ = edit(text, index, read);
        seen
    }

    #[test]
    fn members_kept_around_a_changed_one_are_copied_and_found_again() {
        let text =
            r#"{"tools":[{"a" : "x" , "name":"n1", "b" :[1, {"c":2}] ,"d":"y"},{"name":"n2"}]}"#;
        let index = tools(text);
        let rename = &mut |item: &mut Item<'_>| {
            let name = item.str_member("name").map(|n| format!("p_{n}"));
            item.insert("name", name.into());
            item.insert("added", true.into());
            true
        };
        let Edited::Changed(text, index) = edit(text, &index, rename) else {
            panic!("renamed");
        };
        assert_eq!(
            text,
            r#"{"tools":[{"a" : "x","name":"p_n1","b" :[1, {"c":2}] ,"d":"y","added":true},{"name":"p_n2","added":true}]}"#
        );
        // The second edit reads every member through the positions the
        // first recorded.
        let seen = read_back(&text, &index, &["a", "name", "d", "added"], "b");
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            seen,
            [
                s("x"),
                s("p_n1"),
                s("y"),
                None,
                s(r#"[1,{"c":2}]"#),
                None,
                s("p_n2"),
                None,
                None,
                None,
            ]
        );
    }

    #[test]
    fn items_kept_before_the_first_change_are_found_again() {
        let text =
            r#"{"tools":[{"name":"a","x":1}, {"name":"b"} ,{"name":"c","y":[2]},{"name":"d"}]}"#;
        let index = tools(text);
        // A pass that changes nothing leaves the text as it is.
        let keep = &mut |_: &mut Item<'_>| true;
        assert!(matches!(edit(text, &index, keep), Edited::Unchanged));
        // The first change comes third: the two items before it were
        // copied as they were, and the index must still find them.
        let rename_c = &mut |item: &mut Item<'_>| {
            if item.str_member("name").as_deref() == Some("c") {
                item.insert("name", "C".into());
            }
            true
        };
        let Edited::Changed(text, index) = edit(text, &index, rename_c) else {
            panic!("renamed");
        };
        assert_eq!(
            text,
            r#"{"tools":[{"name":"a","x":1}, {"name":"b"},{"name":"C","y":[2]},{"name":"d"}]}"#
        );
        let seen = read_back(&text, &index, &["name"], "x");
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            seen,
            [s("a"), s("1"), s("b"), None, s("C"), None, s("d"), None]
        );
    }

    #[test]
    fn a_value_is_written_as_serde_json_writes_it() {
        for s in [
            "b_tool",
            "",
            "a \"quote\"",
            "back\\slash",
            "tab\t",
            "\u{1}",
            "\u{7f}",
            "é ✓",
        ] {
            let value = Value::from(s);
            let mut out = Vec::new();
            write_value(&value, &mut out);
            assert_eq!(out, serde_json::to_vec(&value).expect("a string"), "{s:?}");
        }
    }

    #[test]
    fn a_prefix_spliced_in_writes_and_indexes_what_an_edit_does() {
        let compact = r#"{"a":1,"tools":[{"name":"one","x":[1,{"y":2}]},{"x":{"name":"inner"},"name":"two","z":3},{"z":1},{"name":5},7,[{"name":"no"}],{"name":"three"}],"next":"c"}"#;
        let index = tools(compact);
        let mut seen = Vec::new();
        let mut spliced_index = index.clone();
        let Some(Some(spliced)) = prefix(compact, &mut spliced_index, "name", "p_", |old: &str| {
            seen.push(old.to_owned())
        }) else {
            panic!("renamed");
        };
        assert_eq!(seen, ["one", "two", "three"]);
        let Edited::Changed(edited, edited_index) = edit(compact, &index, &mut |item| {
            if let Some(name) = item.str_member("name").map(|n| format!("p_{n}")) {
                item.insert("name", name.into());
            }
            true
        }) else {
            panic!("renamed");
        };
        assert_eq!(spliced, edited);
        assert_eq!(spliced_index, edited_index);
        // Blanks stay where the sender put them, and the index finds every
        // member where it landed.
        let spaced = r#"{ "tools" : [ { "name" : "one" , "x" : [ 1 ] } , 7 , { "y" : 2 , "name":"two"} ] , "next" : "c" }"#;
        let mut index = tools(spaced);
        let Some(Some(text)) = prefix(spaced, &mut index, "name", "p_", |_: &str| {}) else {
            panic!("renamed");
        };
        assert_eq!(
            text,
            r#"{ "tools" : [ { "name" : "p_one" , "x" : [ 1 ] } , 7 , { "y" : 2 , "name":"p_two"} ] , "next" : "c" }"#
        );
        let seen = read_back(&text, &index, &["name", "y"], "x");
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            seen,
            [
                s("p_one"),
                None,
                s("[1]"),
                None,
                None,
                None,
                s("p_two"),
                None,
                None
            ]
        );
        assert_eq!(
            index.top[1].1,
            text.find(r#""c""#).map(|at| at..at + 3).expect("next")
        );
        // Left alone: nothing to prefix, the index included.
        let mut index = tools(compact);
        let unchanged = prefix(compact, &mut index, "missing", "p_", |_: &str| {});
        assert_eq!(unchanged, Some(None));
        assert_eq!(index, tools(compact));
        // Not plain: a name with an escape, keys written twice or escaped,
        // a prefix that would need escaping.
        for (text, with) in [
            (r#"{"tools":[{"name":"a"},{"name":"tab\t"}]}"#, "p_"),
            (r#"{"tools":[{"name":"a","name":"b"}]}"#, "p_"),
            (r#"{"tools":[{"na\u006de":"a"}]}"#, "p_"),
            (r#"{"tools":[{"name":"a"}]}"#, "p\\"),
            (r#"{"tools":[{"name":"a"}]}"#, "p\""),
            (r#"{"tools":[{"name":"a"}]}"#, "p\n"),
        ] {
            let renamed = prefix(text, &mut tools(text), "name", with, |_: &str| {});
            assert!(renamed.is_none(), "{text} {with:?}");
        }
    }

    #[test]
    fn items_retained_unsplit_write_and_index_what_an_edit_does() {
        let compact = r#"{"a":1,"tools":[{"name":"one","x":[1,{"y":2}]},{"x":{"name":"drop"},"name":"two"},{"z":1},{"name":"drop","z":3},7,{"name":5},{"name":"dr\u006fp"},{"name":"three"},{"name":"drop"}],"next":"c"}"#;
        let index = tools(compact);
        // What each item is judged by, in order.
        let mut seen = Vec::new();
        let judge = &mut |name: Option<&str>| {
            seen.push(name.map(str::to_owned));
            name != Some("drop")
        };
        let Some(Edited::Changed(kept, kept_index)) = retain(compact, &index, "name", judge) else {
            panic!("items dropped");
        };
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            seen,
            [
                s("one"),
                s("two"),
                None,
                s("drop"),
                None,
                None,
                s("drop"),
                s("three"),
                s("drop")
            ]
        );
        let Edited::Changed(edited, edited_index) = edit(compact, &index, &mut |item| {
            item.str_member("name").as_deref() != Some("drop")
        }) else {
            panic!("items dropped");
        };
        assert_eq!(kept, edited);
        assert_eq!(kept_index, edited_index);
        assert_eq!(
            kept,
            r#"{"a":1,"tools":[{"name":"one","x":[1,{"y":2}]},{"x":{"name":"drop"},"name":"two"},{"z":1},7,{"name":5},{"name":"three"}],"next":"c"}"#
        );
        // Blanks inside a run of kept items stay; the index finds every
        // member where it landed.
        let spaced = r#"{ "tools" : [ {"name":"drop"} , { "name" : "one" , "x" : [ 1 ] } , 7 , {"name":"drop"}, { "y" : 2 , "name":"two"} , {"name":"drop"} ] , "next" : "c" }"#;
        let Some(Edited::Changed(text, index)) =
            retain(spaced, &tools(spaced), "name", |n: Option<&str>| {
                n != Some("drop")
            })
        else {
            panic!("items dropped");
        };
        assert_eq!(
            text,
            r#"{ "tools" : [{ "name" : "one" , "x" : [ 1 ] } , 7,{ "y" : 2 , "name":"two"}] , "next" : "c" }"#
        );
        let seen = read_back(&text, &index, &["name", "y"], "x");
        assert_eq!(
            seen,
            [
                s("one"),
                None,
                s("[1]"),
                None,
                None,
                None,
                s("two"),
                None,
                None
            ]
        );
        assert_eq!(
            index.top[1].1,
            text.find(r#""c""#).map(|at| at..at + 3).expect("next")
        );
        // Every item dropped, or none.
        let Some(Edited::Changed(text, _)) =
            retain(spaced, &tools(spaced), "name", |_: Option<&str>| false)
        else {
            panic!("items dropped");
        };
        assert_eq!(text, r#"{ "tools" : [] , "next" : "c" }"#);
        assert!(matches!(
            retain(compact, &tools(compact), "name", |_: Option<&str>| true),
            Some(Edited::Unchanged)
        ));
        // Not plain: keys written twice or escaped.
        for text in [
            r#"{"tools":[{"name":"a"},{"name":"a","name":"b"}]}"#,
            r#"{"tools":[{"na\u006de":"a"}]}"#,
        ] {
            let kept = retain(text, &tools(text), "name", |_: Option<&str>| true);
            assert!(kept.is_none(), "{text}");
        }
    }

    #[test]
    fn keys_alike_at_their_ends_are_still_told_apart() {
        let keys = |text: &str| {
            let mut spans = Vec::new();
            scan::object(text.as_bytes(), 0, &mut spans).expect("an object");
            distinct_keys(text.as_bytes(), &spans)
        };
        assert!(keys(r#"{"axb":1,"ayb":2,"ab":3,"a":4,"":5}"#));
        assert!(!keys(r#"{"axb":1,"ayb":2,"axb":3}"#));
        assert!(!keys(r#"{"":1,"a":2,"":3}"#));
        assert!(!keys(r#"{"name":1,"name":2}"#));
    }

    #[test]
    fn objects_of_many_members_are_told_apart_by_sorting() {
        // More members than are compared pair by pair (`FEW`).
        let many = |last: &str| {
            let keys: Vec<String> = (0..3 * FEW).map(|n| format!(r#""k{n}":{n}"#)).collect();
            format!("{},{last}", keys.join(","))
        };
        let item = |members: &str| format!(r#"{{"tools":[{{{members}}}]}}"#);
        for (members, name) in [
            (many(r#""name":"plain""#), "plain"),
            (many(r#""name":"first","name":"last""#), "last"),
            (many(r#""name":"escaped""#), "escaped"),
            (many(r#""name":"first","name":"last""#), "last"),
        ] {
            let text = item(&members);
            let seen = read_back(&text, &tools(&text), &["name", "k0"], "k1");
            let s = |v: &str| Some(v.to_owned());
            assert_eq!(seen, [s(name), None, s("1")], "{text}");
        }
        let text = format!(r#"{{{},"tools":[1],"tools":[2]}}"#, many(r#""x":0"#));
        let [scan, outline] = both(&text, "tools");
        assert!(matches!(scan, Err(NoList::Ambiguous)));
        assert!(matches!(outline, Err(NoList::Ambiguous)));
        let mut keys: Vec<u32> = (0..1000).rev().collect();
        assert!(distinct(&mut keys));
        keys.push(500);
        assert!(!distinct(&mut keys));
    }

    #[test]
    fn the_outline_finds_the_list_the_scan_finds() {
        let hostile = r#"{ "_meta" : {"a":[1,{"b":"]"}],"tools":[{"x":1}]},
            "tools" : [ {"name":"one","x":[1, 2]} , {"na\u006de":"two","d":{"e":[{"f":1}]}},
            {"name":"dup","name":"twice"}, 42, [ {"name":"in an array"} ], "text", null, {},
            {"a":1,"b":{"c":2},"a":3} ], "nextCursor":"c", "after":[{"name":"x"}]}"#
            .replace('\n', " ");
        for (text, key) in [
            (hostile.as_str(), "tools"),
            (hostile.as_str(), "after"),
            (r#"{"tools":[]}"#, "tools"),
            (
                r#"{"a":{"tools":[{"name":"deeper"}]},"tools":[{"name":"x"}]}"#,
                "tools",
            ),
        ] {
            let [scan, outline] = both(text, key);
            assert_eq!(scan.as_ref().ok(), outline.as_ref().ok(), "{text}");
            assert!(scan.is_ok(), "{text}");
        }
        for (text, key) in [
            (hostile.as_str(), "nextCursor"),
            (hostile.as_str(), "missing"),
            (r#"{"tools":{"name":"not a list"}}"#, "tools"),
            (r#"[{"tools":[]}]"#, "tools"),
        ] {
            let [scan, outline] = both(text, key);
            assert!(matches!(scan, Err(NoList::Absent)), "{text}");
            assert!(matches!(outline, Err(NoList::Absent)), "{text}");
        }
        for text in [
            r#"{"tools":[1],"tools":[2]}"#,
            r#"{"tools":[1],"t\u006fols":[2]}"#,
        ] {
            let [scan, outline] = both(text, "tools");
            assert!(matches!(scan, Err(NoList::Ambiguous)), "{text}");
            assert!(matches!(outline, Err(NoList::Ambiguous)), "{text}");
        }
    }
}
