//! Globs to regexes: `*`, `**`, `?`, `[..]` and `\\` escapes.

use super::Syntax;
use std::fmt::Write as _;

/// Translates a glob into the body of a regex (anchors added by the caller).
pub(super) fn to_regex(glob: &str, syntax: Syntax) -> Result<String, String> {
    let uri = syntax == Syntax::Uri;
    let any_char = if uri { "[^/]" } else { "(?s:.)" };
    let mut out = String::with_capacity(glob.len() * 2);
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                out.push_str("(?s:.*)");
            }
            '*' if uri => out.push_str("[^/]*"),
            '*' => out.push_str("(?s:.*)"),
            '?' => out.push_str(any_char),
            '[' => {
                class(&mut chars, uri, &mut out).map_err(|e| format!("bad glob {glob:?}: {e}"))?
            }
            '\\' => match chars.next() {
                Some(lit) => push_literal(&mut out, lit),
                None => return Err(format!("bad glob {glob:?}: a trailing \\ escapes nothing")),
            },
            lit => push_literal(&mut out, lit),
        }
    }
    Ok(out)
}

/// Reads a `[...]` class (the `[` already taken) and writes it as a regex
/// class. Every member is written as `\x{..}`, so no character of the glob
/// can mean anything to the regex syntax (`&&`, `--`, `[:alpha:]`).
fn class(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    uri: bool,
    out: &mut String,
) -> Result<(), String> {
    let negated = matches!(chars.peek(), Some('!' | '^'));
    if negated {
        chars.next();
    }
    let mut members: Vec<(char, char)> = Vec::new();
    let mut first = true;
    loop {
        let c = match chars.next() {
            None => return Err("unclosed [".into()),
            // `]` first in the class is a member, as in POSIX: `[]]`.
            Some(']') if !first => break,
            Some('\\') => chars.next().ok_or("a trailing \\ escapes nothing")?,
            Some(c) => c,
        };
        first = false;
        let mut ahead = chars.clone();
        if ahead.next() == Some('-') && !matches!(ahead.peek(), Some(']') | None) {
            chars.next();
            let hi = match chars.next() {
                Some('\\') => chars.next().ok_or("a trailing \\ escapes nothing")?,
                Some(hi) => hi,
                None => return Err("unclosed [".into()),
            };
            if hi < c {
                return Err(format!("range {c}-{hi} is backwards"));
            }
            members.push((c, hi));
        } else {
            members.push((c, c));
        }
    }
    out.push('[');
    if negated {
        out.push('^');
        // A negated class stops at `/` in a URI, as `?` does; a positive
        // class that names `/` may match it, because the user wrote it.
        if uri {
            out.push('/');
        }
    }
    for (lo, hi) in members {
        let _ = write!(out, "\\x{{{:x}}}", lo as u32);
        if hi != lo {
            let _ = write!(out, "-\\x{{{:x}}}", hi as u32);
        }
    }
    out.push(']');
    Ok(())
}

fn push_literal(out: &mut String, c: char) {
    let mut buf = [0u8; 4];
    out.push_str(&regex::escape(c.encode_utf8(&mut buf)));
}
