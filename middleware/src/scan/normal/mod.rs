//! Text as the rules read it. An attacker hides an instruction from a
//! pattern by its spelling: zero-width characters inside a word,
//! full-width or mathematical letters, Cyrillic look-alikes, odd spacing,
//! capitals, base64 or percent-encoding, or ASCII in the Unicode tag block
//! (invisible to the person, read by the model). Each is undone here
//! before any rule looks:
//!
//! - invisible and control characters are noted (a rule of their own) and
//!   dropped; tag characters are read as the ASCII they hide;
//! - each character outside ASCII is put in Unicode's compatibility form
//!   (NFKD: full-width, mathematical and other styled letters become
//!   plain ones; accents are dropped), folded to its Latin prototype when
//!   it is a look-alike (Unicode's confusables), and lower-cased; runs of
//!   white space become one space. Text that is all ASCII and holds no
//!   invisible character is read as it is (the rules ignore case and take
//!   any run of white space for one): most text costs no copy per byte;
//! - base64 and percent-encoded segments are decoded once and read as
//!   text of their own, beside the text.
//!
//! Every character of the normal text remembers where it came from, so a
//! match can be cut out of the original (`results = "redact"`).

use base64::Engine as _;
use std::borrow::Cow;
use std::ops::Range;
use unicode_normalization::char::decompose_compatible;
use unicode_security::confusable_detection::skeleton;

/// A text read for scanning.
#[derive(Debug, Default)]
pub(super) struct Normal<'a> {
    /// The normal text, lower case, single-spaced; or the original itself.
    pub(super) text: Cow<'a, str>,
    /// Where each stretch of `text` came from, in order; empty when `text`
    /// is the original as it is.
    pieces: Vec<Piece>,
    /// The invisible or control characters found, with where they were.
    pub(super) invisible: Vec<(char, usize)>,
}

/// Where a stretch of the normal text came from: kept a stretch at a
/// time, not a byte at a time (a map per byte was 16 bytes for each
/// byte read, and most of the time spent on a text with one accent).
#[derive(Debug, Clone, Copy)]
struct Piece {
    /// Where the stretch starts in the normal text.
    normal: usize,
    /// Where what it came from starts in the original.
    original: usize,
    /// 0: ASCII copied byte for byte from `original` on; otherwise the
    /// length of the one character of the original all of it came from.
    from_char: usize,
}

/// What kind of character `c` is to the scanner.
pub(super) fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}'      // zero-width space, (non-)joiner, marks
        | '\u{202A}'..='\u{202E}'    // bidi embeddings and overrides
        | '\u{2060}'..='\u{2064}'    // word joiner, invisible operators
        | '\u{2066}'..='\u{2069}'    // bidi isolates
        | '\u{FEFF}'                 // zero-width no-break space
        | '\u{180E}'                 // Mongolian vowel separator
        | '\u{00AD}'                 // soft hyphen
        | '\u{E0000}'..='\u{E007F}'  // tags
    ) || (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

/// The ASCII a tag character stands for (U+E0020–U+E007E).
fn tag_ascii(c: char) -> Option<char> {
    let n = u32::from(c);
    (0xE0020..=0xE007E)
        .contains(&n)
        .then(|| char::from_u32(n - 0xE0000))
        .flatten()
}

/// What a character outside ASCII reads as: its compatibility form, each
/// part folded to its Latin prototype when it is a look-alike, lower
/// case, combining marks dropped.
fn folded(c: char) -> String {
    let mut parts = String::new();
    decompose_compatible(c, |d| parts.push(d));
    let mut out = String::new();
    for d in parts.chars() {
        // A combining mark (an accent NFKC left apart) adds nothing a
        // rule reads.
        if unicode_normalization::char::is_combining_mark(d) {
            continue;
        }
        // ASCII stays as it is (Unicode's prototype of `I` is `l`).
        let prototype: String = match d.is_ascii() {
            true => d.to_string(),
            false => skeleton(&d.to_string()).collect(),
        };
        let shown = match prototype.is_ascii() && !prototype.is_empty() {
            true => prototype,
            false => d.to_string(),
        };
        out.extend(shown.chars().flat_map(char::to_lowercase));
    }
    out
}

/// A printable ASCII byte or a space: copied as it is, lower case.
fn is_printable(b: u8) -> bool {
    (0x20..0x7F).contains(&b)
}

/// The search for two spaces, built once.
static TWO_SPACES: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"  "));

/// Where the first two spaces in `bytes` are: a vector search in a long
/// run, a walk in a short one (prose between two accents is a few dozen
/// bytes, shorter than a vector search takes to start).
fn two_spaces(bytes: &[u8]) -> Option<usize> {
    match bytes.len() < 64 {
        true => bytes.windows(2).position(|w| w == b"  "),
        false => TWO_SPACES.find(bytes),
    }
}

/// The normal text as it is written.
struct Writer {
    text: String,
    pieces: Vec<Piece>,
}

impl Writer {
    /// Appends `run` (printable ASCII of the original from `at`), lower
    /// case, each run of spaces as one.
    fn printable(&mut self, run: &str, at: usize) {
        let bytes = run.as_bytes();
        let past_spaces = |from: usize| {
            bytes[from..]
                .iter()
                .position(|&b| b != b' ')
                .map_or(bytes.len(), |n| from + n)
        };
        let mut from = 0;
        if self.text.is_empty() || self.text.ends_with(' ') {
            from = past_spaces(0);
        }
        // Two spaces are found by a search (`two_spaces`); what lies
        // between is copied as it is.
        while let Some(two) = two_spaces(&bytes[from..]) {
            let keep = from + two + 1;
            self.copy(&run[from..keep], at + from);
            from = past_spaces(keep);
        }
        if from < bytes.len() {
            self.copy(&run[from..], at + from);
        }
    }

    /// Appends `run` (ASCII of the original from `at`), lower case.
    fn copy(&mut self, run: &str, at: usize) {
        let normal = self.text.len();
        match self.pieces.last() {
            Some(p) if p.from_char == 0 && p.original + (normal - p.normal) == at => {}
            _ => self.pieces.push(Piece {
                normal,
                original: at,
                from_char: 0,
            }),
        }
        self.text.push_str(run);
        self.text[normal..].make_ascii_lowercase();
    }

    /// Appends one space for white space at `span`, unless one is there.
    fn space(&mut self, span: Range<usize>) {
        if self.text.is_empty() || self.text.ends_with(' ') {
            return;
        }
        match span.len() {
            1 => self.copy(" ", span.start),
            _ => self.put(' ', span),
        }
    }

    /// Appends `c` (white space as one space, never two), from the
    /// character of the original at `span`.
    fn push(&mut self, c: char, span: Range<usize>) {
        match c.is_whitespace() {
            true => self.space(span),
            false => self.put(c, span),
        }
    }

    fn put(&mut self, c: char, span: Range<usize>) {
        match self.pieces.last() {
            Some(p) if p.from_char != 0 && p.original == span.start => {}
            _ => self.pieces.push(Piece {
                normal: self.text.len(),
                original: span.start,
                from_char: span.len(),
            }),
        }
        self.text.push(c);
    }
}

impl<'a> Normal<'a> {
    /// Reads `original`.
    pub(super) fn of(original: &'a str) -> Self {
        if all_plain(original.as_bytes()) {
            return Normal {
                text: Cow::Borrowed(original),
                ..Normal::default()
            };
        }
        let mut out = Writer {
            text: String::with_capacity(original.len()),
            pieces: Vec::new(),
        };
        let mut invisible = Vec::new();
        // Each character outside ASCII folded once however often it comes
        // (looked up with foldhash: SipHash was a tenth of reading prose).
        let mut seen: foldhash::HashMap<char, String> = foldhash::HashMap::default();
        let bytes = original.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let end = super::encoded::end_of(bytes, at, is_printable);
            if end > at {
                out.printable(&original[at..end], at);
                at = end;
                continue;
            }
            let c = original[at..].chars().next().expect("at a character");
            let span = at..at + c.len_utf8();
            at = span.end;
            if is_invisible(c) {
                invisible.push((c, span.start));
                if let Some(ascii) = tag_ascii(c) {
                    out.push(ascii.to_ascii_lowercase(), span);
                }
            } else if c.is_ascii() {
                out.push(c, span);
            } else {
                let shown = seen.entry(c).or_insert_with(|| folded(c));
                for p in shown.chars() {
                    out.push(p, span.clone());
                }
            }
        }
        let Writer {
            mut text,
            mut pieces,
        } = out;
        while text.ends_with(' ') {
            text.pop();
        }
        while pieces.last().is_some_and(|p| p.normal >= text.len()) {
            pieces.pop();
        }
        Normal {
            text: Cow::Owned(text),
            pieces,
            invisible,
        }
    }

    /// The original's byte range a match at `at` of the normal text came
    /// from.
    pub(super) fn original(&self, at: Range<usize>) -> Range<usize> {
        if self.pieces.is_empty() {
            return at;
        }
        let start = self.origin(at.start).map_or(0, |s| s.start);
        let end = at
            .end
            .checked_sub(1)
            .and_then(|last| self.origin(last))
            .map_or(start, |s| s.end);
        start..end.max(start)
    }

    /// Where byte `at` of the normal text came from.
    fn origin(&self, at: usize) -> Option<Range<usize>> {
        if at >= self.text.len() {
            return None;
        }
        let piece = self.pieces[self.pieces.partition_point(|p| p.normal <= at) - 1];
        Some(match piece.from_char {
            0 => {
                let o = piece.original + (at - piece.normal);
                o..o + 1
            }
            n => piece.original..piece.original + n,
        })
    }
}

/// The segments of `original` that decode (base64 of 16 to 4,096
/// characters, percent-encoding of at least three escapes in at most
/// 4,096), each decoded once, with where it was. A rule's match in one is a match of the whole
/// segment.
pub(super) fn decoded(original: &str) -> Vec<(String, Range<usize>)> {
    let mut found = Vec::new();
    for range in super::encoded::segments(original) {
        let segment = original[range.clone()].trim_end_matches('=');
        let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(segment)
            .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(segment));
        if let Ok(Ok(text)) = bytes.map(String::from_utf8) {
            if looks_like_text(&text) {
                found.push((text, range));
            }
        }
    }
    // A percent-encoded segment has no white space: only the words
    // around a `%` (a vector search) are read by the pattern, not the
    // whole text; past a few dozen such words, the rest at once (many
    // short readings would cost more than one long one).
    let bytes = original.as_bytes();
    let (mut read_to, mut words) = (0, 0);
    for at in memchr::memchr_iter(b'%', bytes) {
        if at < read_to {
            continue;
        }
        let start = bytes[..at]
            .iter()
            .rposition(u8::is_ascii_whitespace)
            .map_or(0, |n| n + 1);
        words += 1;
        let end = match words > WORDS_APART {
            true => bytes.len(),
            false => bytes[at..]
                .iter()
                .position(u8::is_ascii_whitespace)
                .map_or(bytes.len(), |n| at + n),
        };
        read_to = end;
        for m in PERCENT.find_iter(&original[start..end]) {
            if m.len() > MAX_ENCODED {
                continue;
            }
            let text = percent_encoding::percent_decode_str(m.as_str()).decode_utf8_lossy();
            if text != m.as_str() {
                found.push((text.into_owned(), start + m.start()..start + m.end()));
            }
        }
        if end == bytes.len() {
            break;
        }
    }
    found
}

/// How many words holding a `%` are read apart before the rest of a text
/// is read at once.
const WORDS_APART: usize = 32;

/// The longest encoded segment decoded.
pub(super) const MAX_ENCODED: usize = 4096;

/// Mostly letters and spaces: words, not a key or a hash.
fn looks_like_text(text: &str) -> bool {
    let printable = text
        .chars()
        .filter(|c| !c.is_control() || c.is_whitespace())
        .count();
    let spaces = text.chars().filter(|c| *c == ' ').count();
    let n = text.chars().count();
    n > 0 && printable == n && spaces * 12 >= n
}

/// Whether every byte is ASCII and no control but a line break or a tab:
/// text read as it is. Folded a block at a time without stopping at each
/// byte, which the compiler turns into vector compares.
fn all_plain(bytes: &[u8]) -> bool {
    let odd = |b: u8| (b >= 0x7f) | ((b < 0x20) & (b != b'\n') & (b != b'\r') & (b != b'\t'));
    bytes
        .chunks(256)
        .all(|block| !block.iter().fold(false, |any, &b| any | odd(b)))
}

static PERCENT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"[^\s%]*(?:%[0-9A-Fa-f]{2}[^\s%]*){3,}")
        .expect("the percent pattern compiles")
});

#[cfg(test)]
mod tests;
