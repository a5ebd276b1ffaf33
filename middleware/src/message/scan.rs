//! Finding the parts of JSON text that is already known to be valid.
//!
//! A payload's bytes were checked by serde_json when the line was read, so
//! splitting an object into members or an array into elements needs no
//! grammar: only where each value ends. That is a string's closing quote or
//! the bracket that closes a nesting, much cheaper to find than deserializing
//! the parts, and what lets a layer read the `name` of each of 1,000 listed
//! tools without parsing their schemas.
//!
//! Given text that is not valid JSON the functions return `None` or a wrong
//! split, never panic; callers only pass text serde_json accepted.

use std::borrow::Cow;
use std::ops::Range;

/// Where a member's key (quotes included) and value are.
pub(super) type Span = (Range<usize>, Range<usize>);

/// The members of the object that starts at `at` (after any blanks), pushed
/// onto `out`; returns where the object ends. `None` when it is not an
/// object.
pub(super) fn object(b: &[u8], at: usize, out: &mut Vec<Span>) -> Option<usize> {
    object_with(b, at, out, |_, value| value_end(b, value))
}

/// [`object`], with `value(key, start)` finding where each member's value
/// ends, so a caller can split the one it wants in the same pass.
pub(super) fn object_with(
    b: &[u8],
    at: usize,
    out: &mut Vec<Span>,
    mut value_end: impl FnMut(Range<usize>, usize) -> Option<usize>,
) -> Option<usize> {
    members(b, at, |key, value| {
        let end = value_end(key.clone(), value)?;
        out.push((key, value..end));
        Some(end)
    })
}

/// The members of the object that starts at `at` (after any blanks), each
/// passed to `member` with where its key (quotes included) and its value
/// start; `member` returns where the value ends. Returns where the object
/// ends; `None` when it is not an object, or `member` says so.
pub(super) fn members(
    b: &[u8],
    at: usize,
    mut member: impl FnMut(Range<usize>, usize) -> Option<usize>,
) -> Option<usize> {
    sequence(b, at, (b'{', b'}'), |key| {
        let key_end = string_end(b, key)?;
        let colon = skip_ws(b, key_end);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        member(key..key_end, skip_ws(b, colon + 1))
    })
}

/// The elements of the array that starts at `at` (after any blanks), each
/// passed to `element` with where it starts; `element` returns where it
/// ends. Returns where the array ends; `None` when it is not an array.
pub(super) fn array(
    b: &[u8],
    at: usize,
    element: impl FnMut(usize) -> Option<usize>,
) -> Option<usize> {
    sequence(b, at, (b'[', b']'), element)
}

/// A bracketed, comma-separated sequence starting at `at` (after any
/// blanks): `item` reads one entry from where it starts and returns where
/// it ends. Returns where the sequence ends.
fn sequence(
    b: &[u8],
    at: usize,
    (open, close): (u8, u8),
    mut item: impl FnMut(usize) -> Option<usize>,
) -> Option<usize> {
    let mut i = skip_ws(b, at);
    if b.get(i) != Some(&open) {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&close) {
        return Some(i + 1);
    }
    loop {
        i = skip_ws(b, item(i)?);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(&c) if c == close => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The string a JSON string literal (quotes included) stands for.
pub(super) fn unquote(literal: &str) -> Option<Cow<'_, str>> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    if inner.bytes().any(|c| c == b'\\') {
        serde_json::from_str::<String>(literal).ok().map(Into::into)
    } else {
        Some(inner.into())
    }
}

/// `a == b` for the short keys and names of list items, without a call to
/// `memcmp`: a byte loop is quicker for a handful of bytes, and this runs
/// a few times for each of 1,000 listed tools.
#[inline]
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Up to this many bytes, a text is searched byte by byte: a tool's name
/// or a short result is too short for `memmem`'s set-up to pay (in a glob
/// it cost more than the rest of filtering a listed tool).
pub(crate) const SHORT: usize = 64;

/// Where `needle` (not empty) first occurs in `haystack`, byte by byte:
/// for a haystack of up to [`SHORT`] bytes.
pub(crate) fn find_short(needle: &[u8], haystack: &[u8]) -> Option<usize> {
    let (&first, tail) = needle.split_first()?;
    let last_start = haystack.len().checked_sub(needle.len())?;
    (0..=last_start).find(|&at| {
        haystack[at] == first
            && haystack[at + 1..at + needle.len()]
                .iter()
                .zip(tail)
                .all(|(a, b)| a == b)
    })
}

/// Whether `needle` occurs in `hay`: byte by byte when `hay` is short,
/// with `memmem` otherwise.
pub(super) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    if hay.len() <= SHORT {
        find_short(needle, hay).is_some()
    } else {
        memchr::memmem::find(hay, needle).is_some()
    }
}

/// Whether a key holds an escape. Keys are short: a plain loop beats the
/// memchr that `<[u8]>::contains` calls (measured: 13M instructions for a thousand
/// lists of 1,000 tools).
#[allow(clippy::manual_contains)]
pub(super) fn has_backslash(key: &[u8]) -> bool {
    key.iter().any(|&c| c == b'\\')
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Just past the value that starts at `at`.
#[inline]
pub(super) fn value_end(b: &[u8], at: usize) -> Option<usize> {
    match *b.get(at)? {
        b'"' => string_end(b, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&c) = b.get(i) {
                match c {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        // A number, `true`, `false` or `null`: up to what may follow it.
        _ => {
            let len = b[at..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(b.len() - at);
            Some(at + len)
        }
    }
}

/// Just past the string whose opening quote is at `at`.
#[inline]
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        i += quote_or_backslash(b.get(i..)?)?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        // An escape: skip the backslash and the character it escapes.
        i += 2;
    }
}

/// Where the first `"` or `\` in `b` is. Eight bytes at a time: most
/// strings in a listing are names and keys, too short for memchr's vector
/// start-up to pay; long ones move on to it.
#[inline]
fn quote_or_backslash(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    for word in b.chunks_exact(8).take(8) {
        let hits = stops::<false>(u64::from_le_bytes(
            word.try_into().expect("chunks of eight"),
        ));
        if hits != 0 {
            return Some(i + hits.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    memchr::memchr2(b'"', b'\\', &b[i..]).map(|k| i + k)
}

/// The bytes of `w` (eight bytes, little-endian) where a string scan must
/// stop: a `"` or a `\`, and with `CONTROLS` a control character too. The
/// high bit of each such byte is set, and perhaps of bytes above one
/// (Mycroft's zero-byte test): only the lowest flag may be read, as
/// `trailing_zeros() / 8`.
#[inline(always)]
pub(super) fn stops<const CONTROLS: bool>(w: u64) -> u64 {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    const SPACES: u64 = u64::from_ne_bytes([0x20; 8]);
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    let mut hits = zero(w ^ QUOTES) | zero(w ^ BACKSLASHES);
    if CONTROLS {
        // Below 0x20: the subtraction borrows from a byte under it.
        hits |= w.wrapping_sub(SPACES) & !w;
    }
    hits & HIGHS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(text: &str) -> Option<Vec<(&str, &str)>> {
        let mut spans = Vec::new();
        let end = object(text.as_bytes(), 0, &mut spans)?;
        assert_eq!(
            text[end..].trim(),
            "",
            "the object ends where the text does"
        );
        Some(
            spans
                .into_iter()
                .map(|(k, v)| (&text[k], &text[v]))
                .collect(),
        )
    }

    fn elements(text: &str) -> Option<Vec<&str>> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        array(b, 0, |at| {
            let end = value_end(b, at)?;
            out.push(&text[at..end]);
            Some(end)
        })?;
        Some(out)
    }

    #[test]
    fn contains_finds_a_needle_anywhere_and_only_whole() {
        let hay = br#"{"content":[],"isError":true}"#;
        assert!(contains(hay, b"isError"));
        assert!(contains(hay, b"{"));
        assert!(contains(hay, b"true}"));
        assert!(contains(hay, b""));
        assert!(!contains(hay, b"isErrors"));
        assert!(!contains(hay, b"true}}"));
        assert!(!contains(b"iiisErro", b"isError"));
        assert!(contains(b"iiisError", b"isError"));
        assert!(!contains(b"", b"i"));
        // Past the short length, the same answers.
        let long = [&[b'i'; 100][..], b"isError"].concat();
        assert!(contains(&long, b"isError"));
        assert!(!contains(&long[..106], b"isError"));
    }

    #[test]
    fn an_object_is_split_into_members_as_written() {
        let text = r#" { "a" : 1 , "b\"q":"x\\\"]}" ,"c":{"d":[1,{"e":"}"}]},"f":[] ,"g":-1.5e3,"h":null} "#;
        assert_eq!(
            members(text).unwrap(),
            vec![
                (r#""a""#, "1"),
                (r#""b\"q""#, r#""x\\\"]}""#),
                (r#""c""#, r#"{"d":[1,{"e":"}"}]}"#),
                (r#""f""#, "[]"),
                (r#""g""#, "-1.5e3"),
                (r#""h""#, "null"),
            ]
        );
        assert_eq!(members("{}").unwrap(), vec![]);
        assert_eq!(members(" { } ").unwrap(), vec![]);
        assert!(members("[1]").is_none());
        assert!(members(r#""{}""#).is_none());
    }

    #[test]
    fn an_array_is_split_into_elements_as_written() {
        assert_eq!(
            elements(r#"[ 1, "a,b" ,{"x":[2,3]},[[]], true ,"\\"]"#).unwrap(),
            vec!["1", r#""a,b""#, r#"{"x":[2,3]}"#, "[[]]", "true", r#""\\""#]
        );
        assert_eq!(elements("[]").unwrap(), Vec::<&str>::new());
        assert!(elements("{}").is_none());
    }

    #[test]
    fn long_strings_are_found_past_the_short_scan() {
        let long = format!(
            r#"{{"k":"{}\"{}","n":1}}"#,
            "x".repeat(100),
            "y".repeat(5000)
        );
        let split = members(&long).unwrap();
        assert_eq!(split.len(), 2);
        assert_eq!(split[1], (r#""n""#, "1"));
    }

    #[test]
    fn broken_text_gives_none_not_a_panic() {
        for text in [
            "{",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":1",
            "{\"a\" 1}",
            "{\"a\":\"x",
            "[1,",
            "{\"a\":]}",
            "{\"a\":[}",
            "\"\\",
            "{\"a\":1,}x",
            "}",
            "]]]",
            "",
        ] {
            let _ = members(text);
            let _ = elements(text);
        }
    }

    #[test]
    fn keys_are_read_as_the_strings_they_stand_for() {
        assert_eq!(unquote(r#""name""#).unwrap(), "name");
        assert_eq!(unquote(r#""na\u006de""#).unwrap(), "name");
        assert_eq!(unquote(r#""a\"b""#).unwrap(), "a\"b");
        assert!(unquote("name").is_none());
    }
}
