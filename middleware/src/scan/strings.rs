//! Every string of a listing's or a result's JSON text, for their first,
//! whole reading: one pass over all their strings before any item is read
//! on its own (building a map per tool cost more than reading the text)
//! or a result is built as a value (`first_look.rs`).
//!
//! The text is a payload's: serde_json read it when its line was parsed,
//! so it is one valid JSON value, and in valid JSON a `"` outside a string
//! can only open one. The strings are found as `json::value::check` finds
//! them (the next quote, then the closing quote or a backslash: a short
//! walk, then a vector search), with no grammar of our own: a string
//! holding an escape is decoded by serde_json; one without is its bytes
//! as they stand. The walk reads every literal, keys and duplicates
//! included, so it can only read more than the message means, never less.
//! Walking the value with a serde_json visitor gave the same strings at
//! 1.6 times the instructions of serde_json's own pass over the text (the
//! visitor is kept in the tests, and the walk is held to it over
//! generated texts).

use std::borrow::Cow;

/// Why a text's strings could not be gathered: it is not the JSON a
/// payload holds (a string never closed, an escape serde_json refuses).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct NotJson;

/// The strings (object keys too) of the JSON text `bytes`, a line each,
/// in the order they stand, and the length in characters of the longest.
pub(super) fn strings_of(bytes: &[u8]) -> Result<(String, usize), NotJson> {
    // Checked as UTF-8 once (a vector pass), so each string is a slice.
    let text = std::str::from_utf8(bytes).map_err(|_| NotJson)?;
    let mut gathered = Gathered {
        // About what the strings come to: a listing is mostly strings.
        text: String::with_capacity(bytes.len()),
        longest: 0,
    };
    each_string(text, |s| {
        gathered.push(&s);
        true
    })?;
    Ok((gathered.text, gathered.longest))
}

/// Each string (object keys too) of the JSON text `text`, in the order
/// they stand, given to `visit` until it returns `false`: one without an
/// escape as it stands in `text`, one with an escape decoded.
pub(super) fn each_string<'t>(
    text: &'t str,
    mut visit: impl FnMut(Cow<'t, str>) -> bool,
) -> Result<(), NotJson> {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(open) = find(&bytes[at..], |b| b == b'"', |b| memchr::memchr(b'"', b)) {
        let start = at + open + 1;
        let (end, escaped) = closing_quote(bytes, start).ok_or(NotJson)?;
        let string = match escaped {
            // From quote to quote: both ASCII, so both on a character's
            // boundary whatever the text holds.
            true => Cow::Owned(serde_json::from_str(&text[start - 1..=end]).map_err(|_| NotJson)?),
            false => Cow::Borrowed(&text[start..end]),
        };
        if !visit(string) {
            break;
        }
        at = end + 1;
    }
    Ok(())
}

/// Where the string whose contents start at `start` closes, and whether
/// it holds an escape; `None` when it never closes.
fn closing_quote(bytes: &[u8], start: usize) -> Option<(usize, bool)> {
    let (mut at, mut escaped) = (start, false);
    loop {
        let stop = |b| b == b'"' || b == b'\\';
        at += find(bytes.get(at..)?, stop, |b| memchr::memchr2(b'"', b'\\', b))?;
        if bytes[at] == b'"' {
            return Some((at, escaped));
        }
        // The backslash and the byte it escapes (a `"` or `\` among them).
        escaped = true;
        at += 2;
    }
}

/// Where in `bytes` the first byte `stop` holds for is: looked for a
/// byte at a time among the first [`NEAR`] bytes, where it most often is
/// (the next string of a listing is a few bytes away, and most of its
/// strings are short), then by `search`, a vector search, which costs more
/// to start than a short walk.
fn find(
    bytes: &[u8],
    stop: impl Fn(u8) -> bool,
    search: impl Fn(&[u8]) -> Option<usize>,
) -> Option<usize> {
    let near = &bytes[..bytes.len().min(NEAR)];
    match near.iter().position(|&b| stop(b)) {
        Some(at) => Some(at),
        None => search(&bytes[near.len()..]).map(|at| at + near.len()),
    }
}

/// How far [`find`] walks before it searches.
const NEAR: usize = 16;

struct Gathered {
    text: String,
    longest: usize,
}

impl Gathered {
    fn push(&mut self, s: &str) {
        // A string no longer in bytes than the longest so far in
        // characters is no longer in characters: not counted.
        if s.len() > self.longest {
            let chars = if s.is_ascii() {
                s.len()
            } else {
                s.chars().count()
            };
            self.longest = self.longest.max(chars);
        }
        self.text.push_str(s);
        self.text.push('\n');
    }
}

#[cfg(test)]
#[path = "strings_tests.rs"]
mod tests;
