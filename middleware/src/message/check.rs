//! The one pass a line gets before its payloads may stay the sender's bytes.
//!
//! [`line()`] checks the JSON grammar (RFC 8259, as strictly as serde_json
//! reads it) and, in the same pass, what the raw path needs on top of it:
//! nesting under serde_json's limit, no `\uD800`-range escape, no number
//! beyond an `f64`, no line break between tokens. It also records an
//! [`Outline`]: where the members and elements of the first four levels
//! are. The envelope is read from its first level, and a list result keeps
//! the rest, so a layer editing 1,000 listed tools starts from positions
//! already found instead of another pass over 200 KB.
//!
//! Anything it refuses is parsed whole by serde_json instead, which gives
//! the error (-32700) or the value; so this check may be stricter than
//! serde_json, never looser. The message fuzz target holds it to that.

use super::scan;
use std::cell::Cell;
use std::ops::Range;

/// serde_json's nesting limit; a line that reaches it is parsed whole, so
/// serde_json gives its own error.
const DEPTH_LIMIT: usize = 128;

/// How many levels of the line the outline records: the envelope's
/// members, and in a result, its members, a list's items and their
/// members.
const OUTLINE_DEPTH: usize = 4;

/// At most this many entries are recorded: 1,000 listed tools take about
/// 4,000. Past it, only the envelope's members are (see [`Outline`]).
const OUTLINE_CAP: usize = 1 << 17;

/// What a line holds at its top.
#[derive(Debug, PartialEq, Clone, Copy)]
pub(super) enum Top {
    /// An object: a message.
    Object,
    /// An array: a batch.
    Array,
}

/// One member or element, recorded when its value ends.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Node {
    /// 1 for an entry of the outermost container, 2 for an entry of one of
    /// its values, and so on.
    pub(super) depth: u8,
    /// The key, quotes included; empty for an array's element.
    pub(super) key: Range<u32>,
    /// Whether the key holds an escape (a backslash), so that it may not
    /// read as it is written.
    pub(super) escaped: bool,
    pub(super) value: Range<u32>,
}

impl Node {
    pub(super) fn key(&self) -> Range<usize> {
        self.key.start as usize..self.key.end as usize
    }

    pub(super) fn value(&self) -> Range<usize> {
        self.value.start as usize..self.value.end as usize
    }
}

/// Where the parts of a line are, found while it was checked: the entries
/// of its containers down to [`OUTLINE_DEPTH`] levels in, innermost first
/// (an entry comes after everything inside it). A value's entries are thus
/// the run of deeper nodes just before its own.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Outline {
    pub(super) nodes: Vec<Node>,
    /// False when [`OUTLINE_CAP`] was reached: from there on only depth 1
    /// was recorded, so deeper runs may be cut.
    pub(super) complete: bool,
}

/// The part of a line's outline that lies inside one of its values (a
/// payload), seen from that value: one level up, positions from where it
/// starts. Kept without copying the nodes: the view is taken as they are
/// read.
#[derive(Debug)]
pub(super) struct Within {
    /// The line's whole outline.
    nodes: Vec<Node>,
    /// Which of them lie inside the value.
    run: Range<usize>,
    /// Where the value starts in the line.
    base: u32,
}

impl Within {
    /// `nodes[run]`, the run of nodes inside the value that starts at
    /// `base`.
    pub(super) fn new(nodes: Vec<Node>, run: Range<usize>, base: u32) -> Self {
        Self { nodes, run, base }
    }

    /// The nodes, as the outline of the value alone would have them.
    pub(super) fn nodes(&self) -> impl ExactSizeIterator<Item = Node> + '_ {
        rebased(&self.nodes[self.run.clone()], self.base)
    }
}

/// `run`, the nodes inside a value that starts at `base`, as the outline of
/// the value alone would have them: one level up, positions from its start.
pub(super) fn rebased(run: &[Node], base: u32) -> impl ExactSizeIterator<Item = Node> + '_ {
    run.iter().map(move |node| Node {
        depth: node.depth - 1,
        // An element's key is empty (0..0), and stays so: every key
        // inside the value is past `base`.
        key: node.key.start.saturating_sub(base)..node.key.end.saturating_sub(base),
        escaped: node.escaped,
        value: node.value.start - base..node.value.end - base,
    })
}

/// Checks a line (without its newline) whose top level is an object or an
/// array, and outlines it. A line it passes is UTF-8: outside strings only
/// JSON's ASCII tokens pass, and inside them every character is checked.
/// `None` when it is not valid JSON, or when it is but must be parsed whole
/// (see the module docs).
pub(super) fn line(b: &[u8]) -> Option<(Top, Outline)> {
    let first = blanks(b, 0);
    let top = match b.get(first)? {
        b'{' => Top::Object,
        b'[' => Top::Array,
        _ => return None,
    };
    // u32 positions: lines are capped well below 4 GiB.
    if u32::try_from(b.len()).is_err() {
        return None;
    }
    // Enough for most messages without growing, and for a long line what a
    // list of small items takes (1,000 listed tools, 200 KB, make 4,000
    // nodes), so it does not grow (each time a copy of all it holds) ten
    // times over.
    let mut nodes = SPARE.take();
    nodes.reserve((b.len() / 48).clamp(32, 8192));
    let mut outline = Outline {
        nodes,
        complete: true,
    };
    walk(b, first, &mut outline)?;
    Some((top, outline))
}

thread_local! {
    /// The last small outline done with, kept for the next line: most
    /// messages need one only while their envelope is read.
    static SPARE: Cell<Vec<Node>> = const { Cell::new(Vec::new()) };
}

/// Outlines up to this many nodes are kept for reuse (5 KiB).
const SPARE_NODES: usize = 256;

/// Gives back an outline no payload kept, for the next line to fill.
pub(super) fn recycle(mut nodes: Vec<Node>) {
    if nodes.capacity() <= SPARE_NODES {
        nodes.clear();
        SPARE.set(nodes);
    }
}

/// Walks the value at `at` to the end of `b`, recording entries in
/// `outline`. Iterative: no input can exhaust the stack.
fn walk(b: &[u8], at: usize, outline: &mut Outline) -> Option<()> {
    // Bit n says whether the container n + 1 levels in is an object.
    let mut objects: u128 = 0;
    let mut depth = 0;
    let mut i = at;
    // The entry being read at each outlined depth: its key and start.
    let mut keys: [(Range<u32>, bool); OUTLINE_DEPTH] = Default::default();
    let mut starts = [0u32; OUTLINE_DEPTH];
    let mut outlined = OUTLINE_DEPTH;
    // `i` fits: `line` checked the length.
    let pos = |i: usize| i as u32;
    loop {
        // A value starts at `i`.
        match *b.get(i)? {
            open @ (b'{' | b'[') => {
                depth += 1;
                if depth >= DEPTH_LIMIT {
                    return None;
                }
                let object = open == b'{';
                objects = objects << 1 | u128::from(object);
                i = blanks(b, i + 1);
                if b.get(i) == Some(if object { &b'}' } else { &b']' }) {
                    i += 1;
                    depth -= 1;
                    objects >>= 1;
                } else {
                    let (key, value) = if object {
                        let (key_end, escaped, value) = member_key(b, i)?;
                        ((pos(i)..pos(key_end), escaped), value)
                    } else {
                        ((0..0, false), i)
                    };
                    if depth <= outlined {
                        keys[depth - 1] = key;
                        starts[depth - 1] = pos(value);
                    }
                    i = value;
                    continue;
                }
            }
            b'"' => i = string(b, i, &mut false)?,
            b'-' | b'0'..=b'9' => i = number(b, i)?,
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            _ => return None,
        }
        // A value ended at `i`: go on to the next entry, or close.
        loop {
            if depth == 0 {
                return (blanks(b, i) == b.len()).then_some(());
            }
            if depth <= outlined {
                let (key, escaped) = keys[depth - 1].clone();
                outline.nodes.push(Node {
                    depth: depth as u8,
                    key,
                    escaped,
                    value: starts[depth - 1]..pos(i),
                });
                if outline.nodes.len() == OUTLINE_CAP {
                    outlined = 1;
                    outline.complete = false;
                }
            }
            i = blanks(b, i);
            let object = objects & 1 == 1;
            match *b.get(i)? {
                b',' => {
                    i = blanks(b, i + 1);
                    if object {
                        let (key_end, escaped, value) = member_key(b, i)?;
                        if depth <= outlined {
                            keys[depth - 1] = (pos(i)..pos(key_end), escaped);
                        }
                        i = value;
                    }
                    if depth <= outlined {
                        starts[depth - 1] = pos(i);
                    }
                    break;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            i += 1;
            depth -= 1;
            objects >>= 1;
        }
    }
}

/// A member's key at `at`, its colon and the blanks after: where the key
/// ends, whether it holds an escape, and where the value starts.
#[inline(always)]
fn member_key(b: &[u8], at: usize) -> Option<(usize, bool, usize)> {
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let mut escaped = false;
    let end = string(b, at, &mut escaped)?;
    // A key that decodes to `$...` may be one of serde_json's private
    // tokens, which it reads as an instruction rather than a name.
    if matches!(b.get(at + 1), Some(b'$' | b'\\')) && private_token(&b[at..end]) {
        return None;
    }
    let colon = blanks(b, end);
    if b.get(colon) != Some(&b':') {
        return None;
    }
    Some((end, escaped, blanks(b, colon + 1)))
}

/// Whether a key (quotes included) is one of serde_json's private tokens
/// (`$serde_json::private::RawValue`). As the first key of an object,
/// serde_json reads the member's value as JSON text standing for the whole
/// object, or refuses the object; a line holding one is left to serde_json.
#[cold]
fn private_token(key: &[u8]) -> bool {
    std::str::from_utf8(key)
        .ok()
        .and_then(scan::unquote)
        .is_some_and(|name| name.starts_with("$serde_json::private::"))
}

/// Blanks between tokens. A CR or LF is not among them here: copied raw, it
/// would split the line mcp-chain writes, so a line holding one is parsed
/// whole (such lines are rare: a framing that leaves a lone CR).
#[inline(always)]
fn blanks(b: &[u8], mut i: usize) -> usize {
    // Most tokens follow one another without a blank: one comparison says
    // so (both blanks are at most a space).
    if b.get(i).is_none_or(|&c| c > b' ') {
        return i;
    }
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

/// Just past the string whose opening quote is at `at`. Refuses a control
/// character, bytes that are not UTF-8, a bad escape, and any `\uD...`
/// escape (the range that holds the surrogates: serde_json rejects a lone
/// one only when it decodes it). Sets `escaped` when the string holds an
/// escape.
#[inline(always)]
fn string(b: &[u8], at: usize, escaped: &mut bool) -> Option<usize> {
    let mut i = at + 1;
    loop {
        i += special(b.get(i..)?)?;
        match b[i] {
            b'"' => return Some(i + 1),
            b'\\' => {
                *escaped = true;
                match *b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        let hex = b.get(i + 2..i + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) || matches!(hex[0], b'd' | b'D') {
                            return None;
                        }
                        i += 6;
                    }
                    _ => return None,
                }
            }
            // Not ASCII: a character of two to four bytes.
            0x80.. => i += utf8_char(b, i)?,
            // A control character, which JSON wants escaped.
            _ => return None,
        }
    }
}

/// The length of the UTF-8 character at `at`, whose first byte is not
/// ASCII; `None` when the bytes there are not one (a stray continuation
/// byte, an overlong form, a surrogate, past U+10FFFF, or cut short), as
/// in the Unicode standard's table of well-formed sequences (Table 3-7).
#[inline]
fn utf8_char(b: &[u8], at: usize) -> Option<usize> {
    // The continuation byte `k` after the first, within `range`.
    let next = |k: usize, range: std::ops::RangeInclusive<u8>| {
        b.get(at + k).filter(|c| range.contains(c)).map(|_| ())
    };
    let (second, len) = match b[at] {
        0xC2..=0xDF => (0x80..=0xBF, 2),
        0xE0 => (0xA0..=0xBF, 3),
        0xE1..=0xEC | 0xEE..=0xEF => (0x80..=0xBF, 3),
        0xED => (0x80..=0x9F, 3),
        0xF0 => (0x90..=0xBF, 4),
        0xF1..=0xF3 => (0x80..=0xBF, 4),
        0xF4 => (0x80..=0x8F, 4),
        _ => return None,
    };
    next(1, second)?;
    for k in 2..len {
        next(k, 0x80..=0xBF)?;
    }
    Some(len)
}

/// Where the first `"`, `\`, control character or byte of a non-ASCII
/// character in `b` is, eight bytes at a time ([`scan::stops`], as
/// serde_json does it), to the end: a control character has no memchr to
/// hand over to.
#[inline(always)]
fn special(b: &[u8]) -> Option<usize> {
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut i = 0;
    while let Some(word) = b.get(i..i + 8) {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let hits = scan::stops::<true>(word) | word & HIGHS;
        if hits != 0 {
            return Some(i + hits.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    let at = b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c))?;
    Some(i + at)
}

/// Just past the number at `at`, checked against JSON's grammar: no
/// leading zeros, no bare `.` or `e`. Refuses a number beyond an `f64`
/// (`1e400`), which serde_json rejects only when it reads the value.
#[inline]
fn number(b: &[u8], at: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while matches!(b.get(i), Some(b'0'..=b'9')) {
            i += 1;
        }
        i
    };
    let mut i = at + usize::from(b[at] == b'-');
    match b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(i + 1),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    let mut exponent = false;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        exponent = true;
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return None;
        }
        i = end;
    }
    // Only an exponent or a very long run of digits can leave the range.
    if exponent || i - at >= 300 {
        let token = std::str::from_utf8(&b[at..i]).ok()?;
        if !token.parse::<f64>().is_ok_and(f64::is_finite) {
            return None;
        }
    }
    Some(i)
}

#[inline]
fn literal(b: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    (b.get(at..at + word.len())? == word).then_some(at + word.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(text: &str) -> bool {
        line(text.as_bytes()).is_some()
    }

    /// The outline as (depth, key, value) pieces of `text`.
    fn outline(text: &str) -> Vec<(u8, &str, &str)> {
        let (_, outline) = line(text.as_bytes()).expect("valid");
        assert!(outline.complete);
        outline
            .nodes
            .iter()
            .map(|n| (n.depth, &text[n.key()], &text[n.value()]))
            .collect()
    }

    /// The outermost container's entries, as (key, value) pieces.
    fn top_level(text: &str) -> Vec<(&str, &str)> {
        let entries = outline(text).into_iter().filter(|(depth, ..)| *depth == 1);
        entries.map(|(_, k, v)| (k, v)).collect()
    }

    #[test]
    fn the_line_is_outlined_as_it_is_checked() {
        let text = r#" {"a" : 1 ,"b":{"c":[1,{"d":"}"}]},"e":[] , "f":"x\"y" , "g":{}} "#;
        assert_eq!(line(text.as_bytes()).map(|(top, _)| top), Some(Top::Object));
        assert_eq!(
            top_level(text),
            [
                (r#""a""#, "1"),
                (r#""b""#, r#"{"c":[1,{"d":"}"}]}"#),
                (r#""e""#, "[]"),
                (r#""f""#, r#""x\"y""#),
                (r#""g""#, "{}"),
            ]
        );
        // Innermost first, down to four levels.
        assert_eq!(
            outline(r#"{"r":{"tools":[{"n":"a","s":{"deep":[5]}},2],"x":{}}}"#),
            [
                (4, r#""n""#, r#""a""#),
                (4, r#""s""#, r#"{"deep":[5]}"#),
                (3, "", r#"{"n":"a","s":{"deep":[5]}}"#),
                (3, "", "2"),
                (2, r#""tools""#, r#"[{"n":"a","s":{"deep":[5]}},2]"#),
                (2, r#""x""#, "{}"),
                (
                    1,
                    r#""r""#,
                    r#"{"tools":[{"n":"a","s":{"deep":[5]}},2],"x":{}}"#
                ),
            ]
        );
        let text = r#"[ {"a":1}, 2,"s" ,[[]],{} ]"#;
        assert_eq!(line(text.as_bytes()).map(|(top, _)| top), Some(Top::Array));
        assert_eq!(
            top_level(text),
            [
                ("", r#"{"a":1}"#),
                ("", "2"),
                ("", r#""s""#),
                ("", "[[]]"),
                ("", "{}")
            ]
        );
        assert_eq!(outline("{}"), []);
        assert_eq!(outline(" [ ] "), []);
    }

    #[test]
    fn a_long_outline_stops_at_the_cap_but_keeps_the_top() {
        let zeros = vec!["0"; OUTLINE_CAP + 10].join(",");
        let text = format!(r#"{{"a":1,"result":{{"list":[{zeros}]}},"z":2}}"#);
        let (_, outline) = line(text.as_bytes()).expect("valid");
        assert!(!outline.complete);
        let top: Vec<_> = outline
            .nodes
            .iter()
            .filter(|n| n.depth == 1)
            .map(|n| &text[n.key()])
            .collect();
        assert_eq!(top, [r#""a""#, r#""result""#, r#""z""#]);
        assert!(outline.nodes.len() <= OUTLINE_CAP + 2);
    }

    #[test]
    fn valid_json_passes() {
        for text in [
            r#"{"a":[true,false,null,0,-0,1.5,-2e10,3E+2,4e-2,0.0,12345678901234567890]}"#,
            r#"{"s":"\"\\\/\b\f\n\r\t\u00e9\uABCD é ☃ \u0000"}"#,
            "{\"tab\"\t:\t1\t}",
            r#"{"":""}"#,
            r#"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"#,
        ] {
            assert!(passes(text), "{text}");
            serde_json::from_str::<serde_json::Value>(text).expect("serde_json agrees");
        }
    }

    #[test]
    fn invalid_json_is_refused() {
        for text in [
            "",
            " ",
            "{",
            "[",
            "}",
            "{]",
            "[}",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            r#"{"a":1,}"#,
            "[1,]",
            "[,1]",
            "[1 2]",
            r#"{"a":1 "b":2}"#,
            "{}x",
            "{} {}",
            "[]]",
            "[01]",
            "[1.]",
            "[.5]",
            "[-]",
            "[1e]",
            "[1e+]",
            "[+1]",
            "[0x1]",
            "[1.e5]",
            "[--1]",
            "[tru]",
            "[nul]",
            "[True]",
            "[NaN]",
            "[Infinity]",
            r#"["\x"]"#,
            r#"["\u12"]"#,
            r#"["\u12G4"]"#,
            "[\"a",
            "[\"a\\",
            "[\"\u{1}\"]",
            "[\"\u{1f}\"]",
            "[\"a\tb\"]",
            "{\"a\":1}\u{0}",
            "[1]/",
        ] {
            assert!(!passes(text), "{text:?}");
        }
    }

    #[test]
    fn what_the_raw_path_cannot_keep_is_refused() {
        let deep = format!("{}{}", "[".repeat(DEPTH_LIMIT), "]".repeat(DEPTH_LIMIT));
        let shallow = format!(
            "{}{}",
            "[".repeat(DEPTH_LIMIT - 1),
            "]".repeat(DEPTH_LIMIT - 1)
        );
        assert!(!passes(&deep));
        assert!(passes(&shallow));
        for text in [
            r#"["\uD800"]"#,
            r#"["\ud83d\ude00"]"#,
            "[1e400]",
            "[-1e400]",
            &format!("[{}]", "9".repeat(400)),
            // Line breaks between tokens.
            "[1]\n",
            "[\n1]",
            "[1\r]",
            // serde_json's private tokens, whatever their spelling.
            r#"{"$serde_json::private::RawValue":"1"}"#,
            r#"{"a":[{"$serde_json::private::RawValue":"1"}]}"#,
            r#"{"\u0024serde_json::private::RawValue":1}"#,
            r#"{"$serde_json::private::Number":"1"}"#,
            // Not an object or a batch: parsed whole, to be answered -32600.
            "1",
            "\"s\"",
            "null",
        ] {
            assert!(!passes(text), "{text}");
        }
        for text in ["[1e300]", "[1e-400]", &format!("[{}]", "9".repeat(300))] {
            assert!(passes(text), "{text}");
        }
    }

    /// `["` + `bytes` + `"]`, and the same after a run long enough for the
    /// eight-byte scan.
    fn in_strings(bytes: &[u8]) -> [Vec<u8>; 2] {
        let wrap = |pad: &[u8]| [b"[\"", pad, bytes, b"\"]"].concat();
        [wrap(b""), wrap(b"0123456789abcdef")]
    }

    #[test]
    fn what_passes_is_utf8_as_serde_json_reads_it() {
        for good in [
            "é",
            "☃",
            "😀",
            "\u{7f}",
            "\u{80}",
            "\u{7ff}",
            "\u{800}",
            "\u{d7ff}",
            "\u{e000}",
            "\u{fffd}",
            "\u{ffff}",
            "\u{10000}",
            "\u{10ffff}",
            "aé☃😀z",
            "日本語のテキスト",
        ] {
            for text in in_strings(good.as_bytes()) {
                assert!(line(&text).is_some(), "{good:?}");
                serde_json::from_slice::<serde_json::Value>(&text).expect("serde_json agrees");
            }
        }
        for bad in [
            &b"\x80"[..], // a continuation byte alone
            b"\xbf",
            b"\xc0\x80", // overlong
            b"\xc1\xbf",
            b"\xe0\x80\x80",
            b"\xe0\x9f\xbf",
            b"\xf0\x8f\xbf\xbf",
            b"\xed\xa0\x80", // a surrogate
            b"\xed\xbf\xbf",
            b"\xf4\x90\x80\x80", // past U+10FFFF
            b"\xf5\x80\x80\x80",
            b"\xff",
            b"\xc3", // cut short by the closing quote
            b"\xe2\x98",
            b"\xf0\x9f\x98",
            b"\xc3\xa9\xa9", // one continuation too many
            b"\xe2\x28\xa1", // a continuation byte that is not one
        ] {
            for text in in_strings(bad) {
                assert!(line(&text).is_none(), "{bad:?}");
                assert!(serde_json::from_slice::<serde_json::Value>(&text).is_err());
            }
        }
        // Outside strings nothing but ASCII passes.
        for text in [
            &b"[1,\xc3\xa9]"[..],
            b"{\"a\"\xc2\xa0:1}",
            b"[1]\xc2\xa0",
            b"[\"a\"\xe2\x80\xa8]",
        ] {
            assert!(line(text).is_none(), "{text:?}");
        }
        // Cut short by the end of the line.
        assert!(line(b"[\"\xe2\x98").is_none());
    }

    #[test]
    fn long_strings_are_checked_to_the_end() {
        let long = "x".repeat(1000);
        assert!(passes(&format!(r#"["{long}"]"#)));
        assert!(!passes(&format!("[\"{long}\u{2}{long}\"]")));
        assert!(passes(&format!(r#"["{long}\"{long}"]"#)));
        for cut in 1..9 {
            assert!(!passes(&format!(r#"["{}"#, &long[..cut])), "{cut}");
        }
    }
}
