//! Text a server or a client chose, as a person is shown it: in a
//! terminal (`mcp-chain pin list`), a log line, an approval dialog, the
//! audit. Names, argument keys, values and URIs are untrusted: a newline
//! in a tool name forges a log line, ESC sequences repaint a terminal (a
//! drifted tool reads as pinned), bidi overrides reorder what is read, and
//! a key of ten thousand characters pushes the rest of a dialog out of
//! view. So such text is escaped and cut wherever it is shown.
//!
//! Escaped: every control character (C0, DEL, C1), the invisible
//! formatting characters (bidi embeddings, overrides and isolates, marks,
//! zero-width characters, line and paragraph separators, the byte order
//! mark). What is escaped reads `\u{…}` (`\n`, `\t`, `\r` as such).

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a person raw.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}'                      // Arabic letter mark
            | '\u{200B}'..='\u{200F}'       // zero-width, LRM, RLM
            | '\u{2028}' | '\u{2029}'       // line and paragraph separators
            | '\u{202A}'..='\u{202E}'       // bidi embeddings and overrides
            | '\u{2060}'..='\u{2069}'       // word joiner .. bidi isolates
            | '\u{FEFF}'                    // byte order mark
        )
}

/// `text` escaped and cut to `max_chars` characters (then `…` and how
/// long it was). A backslash is escaped too, so what is shown cannot
/// pretend to be an escape.
pub fn shown(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 2));
    escape_into(&mut out, text, true, max_chars);
    out
}

/// `text` with the unsafe characters escaped, backslashes left as they
/// are: for text that is already an escaped form (JSON) or that is ours.
pub fn defanged(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    escape_into(&mut out, text, false, usize::MAX);
    Cow::Owned(out)
}

fn escape_into(out: &mut String, text: &str, backslash: bool, max_chars: usize) {
    for (n, c) in text.chars().enumerate() {
        if n == max_chars {
            let _ = write!(out, "… ({} characters)", text.chars().count());
            return;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' if backslash => out.push_str("\\\\"),
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

/// A JSON formatter that writes every unsafe character above the C0
/// range (C0 is always escaped in JSON) as `\uXXXX`, in strings and in raw
/// payloads alike (raw JSON holds them only inside strings): the same
/// values when parsed, nothing invisible when read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Defanging;

impl Defanging {
    fn write<W: ?Sized + std::io::Write>(writer: &mut W, text: &str) -> std::io::Result<()> {
        let mut start = 0;
        for (at, c) in text.char_indices() {
            if c >= ' ' && is_unsafe(c) {
                writer.write_all(&text.as_bytes()[start..at])?;
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = at + c.len_utf8();
            }
        }
        writer.write_all(&text.as_bytes()[start..])
    }
}

impl serde_json::ser::Formatter for Defanging {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        Self::write(writer, fragment)
    }

    fn write_raw_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        Self::write(writer, fragment)
    }
}

/// `value` as JSON through [`Defanging`].
pub fn write_json<T: serde::Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(out, Defanging))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_newlines_and_bidi_are_escaped() {
        assert_eq!(shown("read_file", 64), "read_file");
        assert_eq!(shown("a\nb", 64), "a\\nb");
        assert_eq!(
            shown("\u{1b}[32mpinned\u{1b}[0m", 64),
            "\\u{001b}[32mpinned\\u{001b}[0m"
        );
        assert_eq!(shown("evil\u{202E}txt.exe", 64), "evil\\u{202e}txt.exe");
        assert_eq!(
            shown("x\u{2066}y\u{85}z\u{7f}", 64),
            "x\\u{2066}y\\u{0085}z\\u{007f}"
        );
        assert_eq!(shown("a\\u{1b}", 64), "a\\\\u{1b}");
        assert_eq!(defanged("a\\n\u{202E}"), "a\\n\\u{202e}");
        assert!(matches!(defanged("plain é"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_is_defanged_and_parses_to_the_same_value() {
        let value = serde_json::json!({"na\u{202E}me": "a\u{85}b\nc", "n": 1});
        let mut out = Vec::new();
        write_json(&mut out, &value).expect("writes");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(!text.chars().any(is_unsafe), "{text}");
        assert!(
            text.contains("\\u202e") && text.contains("\\u0085"),
            "{text}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).expect("JSON"),
            value
        );
        let raw =
            serde_json::value::RawValue::from_string("{\"k\":\"x\u{2067}\"}".into()).expect("raw");
        let mut out = Vec::new();
        write_json(&mut out, &raw).expect("writes");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "{\"k\":\"x\\u2067\"}"
        );
    }

    #[test]
    fn long_text_is_cut_and_says_how_long_it_was() {
        let long = "k".repeat(10_000);
        let cut = shown(&long, 40);
        assert_eq!(cut, format!("{}… (10000 characters)", "k".repeat(40)));
        assert_eq!(shown("é".repeat(5).as_str(), 5), "ééééé");
    }
}
