//! URIs compared as a server compares them. A resource rule names one
//! spelling (`file:///etc/**`), but `FILE:///etc/passwd`,
//! `file:///tmp/../etc/passwd`, `file:///%65tc/passwd` and
//! `file://localhost/etc/passwd` are the same file to the server. So both
//! sides are put in one normal form before a pattern is tried: the URI a
//! message names, and each URI pattern once, when the config is read.
//!
//! The normal form is RFC 3986's syntax-based normalization (§6.2.2):
//! scheme and host in lower case; percent-escapes of unreserved characters
//! decoded, every other escape with upper-case hex digits; `.` and `..`
//! segments removed. Then its scheme-based rules (§6.2.3) for the schemes
//! that have them: `http`/`ws` port 80 and `https`/`wss` port 443 dropped,
//! an empty path as `/`, an empty port dropped. Two rules for `file:`,
//! because file servers map URIs to paths: `localhost` is the empty host
//! (RFC 8089), and a run of `/` is one `/`. Characters a URI may not hold
//! (a space, non-ASCII) are percent-encoded as browsers and URL parsers do.
//!
//! What could be read two ways is not normalized: a URI without a scheme,
//! a `%` not followed by two hex digits, a control character, a `\` (some
//! parsers read it as `/`), and an escaped `/`, `\` or NUL in the path
//! (`%2F`, `%5C`, `%00`: some servers decode them). A filter with resource
//! rules refuses such a URI rather than judging a spelling the server may
//! read differently.

use std::fmt::Write;

/// Why a URI has no normal form.
pub type NotNormal = &'static str;

/// What is being normalized: a URI from a message, or a URI pattern from
/// the config, whose glob characters (`*`, `?`, `[`, `]`, `^`, `\`) stay
/// as written and which is never refused (at worst it matches nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Uri,
    Pattern,
}

/// The normal form of `uri`, or why it has none.
pub fn normalize(uri: &str) -> Result<String, NotNormal> {
    normal(uri, Mode::Uri)
}

/// The normal form of a URI glob's text. Escapes and characters the glob
/// treats specially are kept; the rest is normalized as a URI is.
pub(super) fn normalize_pattern(pattern: &str) -> String {
    normal(pattern, Mode::Pattern).unwrap_or_else(|_| pattern.to_owned())
}

fn normal(uri: &str, mode: Mode) -> Result<String, NotNormal> {
    let Some((scheme, rest)) = uri.split_once(':').filter(|(s, _)| is_scheme(s)) else {
        return match mode {
            Mode::Uri => Err("no scheme"),
            Mode::Pattern => Ok(uri.to_owned()),
        };
    };
    let scheme = scheme.to_ascii_lowercase();
    let (rest, fragment) = split_off(rest, '#');
    let (hier, query) = split_off(rest, '?');
    let mut out = String::with_capacity(uri.len());
    out.push_str(&scheme);
    out.push(':');
    let path = match hier.strip_prefix("//") {
        Some(hier) => {
            let end = hier.find('/').unwrap_or(hier.len());
            out.push_str("//");
            authority(&hier[..end], &scheme, mode, &mut out)?;
            let path = &hier[end..];
            match path {
                "" if default_port(&scheme).is_some() => "/",
                path => path,
            }
        }
        None => hier,
    };
    let mut path = escapes(path, mode)?;
    if mode == Mode::Uri && ["%2F", "%5C", "%00"].iter().any(|e| path.contains(e)) {
        return Err("an escaped /, \\ or NUL in the path");
    }
    if scheme == "file" {
        while path.contains("//") {
            path = path.replace("//", "/");
        }
    }
    out.push_str(&remove_dot_segments(&path));
    if let Some(query) = query {
        out.push('?');
        out.push_str(&escapes(query, mode)?);
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(&escapes(fragment, mode)?);
    }
    Ok(out)
}

/// `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
fn is_scheme(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// `text` up to the first `at`, and what follows it, if it is there.
fn split_off(text: &str, at: char) -> (&str, Option<&str>) {
    match text.split_once(at) {
        Some((before, after)) => (before, Some(after)),
        None => (text, None),
    }
}

fn default_port(scheme: &str) -> Option<&'static str> {
    match scheme {
        "http" | "ws" => Some("80"),
        "https" | "wss" => Some("443"),
        _ => None,
    }
}

/// `[userinfo@]host[:port]`: the host in lower case, a default or empty
/// port dropped, `file://localhost` as `file://`.
fn authority(text: &str, scheme: &str, mode: Mode, out: &mut String) -> Result<(), NotNormal> {
    let (userinfo, host_port) = match text.rsplit_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, text),
    };
    // The port follows the last `:` that is not inside an IPv6 `[...]`.
    let (host, port) = match host_port.rfind(':') {
        Some(at) if !host_port[at..].contains(']') => {
            (&host_port[..at], Some(&host_port[at + 1..]))
        }
        _ => (host_port, None),
    };
    if let Some(userinfo) = userinfo {
        out.push_str(&escapes(userinfo, mode)?);
        out.push('@');
    }
    let host = escapes(host, mode)?.to_ascii_lowercase();
    if !(scheme == "file" && host == "localhost") {
        // Escapes keep upper-case hex digits after the host is lowered.
        out.push_str(&upper_escapes(&host));
    }
    match port {
        None | Some("") => {}
        Some(port) if default_port(scheme) == Some(port) => {}
        Some(port) if mode == Mode::Uri && !port.bytes().all(|b| b.is_ascii_digit()) => {
            return Err("a port that is not a number");
        }
        Some(port) => {
            out.push(':');
            out.push_str(port);
        }
    }
    Ok(())
}

/// `text` with each escape of an unreserved character decoded, every other
/// escape in upper case, and each character a URI may not hold escaped.
fn escapes(text: &str, mode: Mode) -> Result<String, NotNormal> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '%' => match text
                .get(at + 1..at + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            {
                Some(byte) => {
                    chars.nth(1);
                    if is_unreserved(byte) {
                        out.push(char::from(byte));
                    } else {
                        push_escape(&mut out, byte);
                    }
                }
                None if mode == Mode::Pattern => out.push(c),
                None => return Err("a % not followed by two hex digits"),
            },
            '\\' | '^' if mode == Mode::Pattern => out.push(c),
            '\\' => return Err("a \\ (some parsers read it as /)"),
            c if c.is_ascii_control() && mode == Mode::Uri => return Err("a control character"),
            c if c.is_ascii() && (is_unreserved(c as u8) || is_reserved(c)) => out.push(c),
            // `{` and `}` stand for variables in a URI template.
            '{' | '}' => out.push(c),
            c => {
                let mut utf8 = [0; 4];
                for byte in c.encode_utf8(&mut utf8).bytes() {
                    push_escape(&mut out, byte);
                }
            }
        }
    }
    Ok(out)
}

fn push_escape(out: &mut String, byte: u8) {
    // Writing to a String cannot fail.
    let _ = write!(out, "%{byte:02X}");
}

/// `text` with the hex digits of its escapes in upper case.
fn upper_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3).unwrap_or(&rest[at..]);
        out.push_str(&escape.to_ascii_uppercase());
        rest = &rest[at + escape.len()..];
    }
    out.push_str(rest);
    out
}

fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

fn is_reserved(c: char) -> bool {
    ":/?#[]@!$&'()*+,;=".contains(c)
}

/// RFC 3986 §5.2.4: `.` and `..` segments removed from a path.
fn remove_dot_segments(path: &str) -> String {
    if !path.split('/').any(|s| s == "." || s == "..") {
        return path.to_owned();
    }
    let absolute = path.starts_with('/');
    let mut kept: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len() - 1;
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." | ".." => {
                if *segment == ".." && kept.len() > usize::from(absolute) {
                    kept.pop();
                }
                // A path ending in a dot segment ends in `/`.
                if i == last {
                    kept.push("");
                }
            }
            segment => kept.push(segment),
        }
    }
    let joined = kept.join("/");
    match (absolute, joined.starts_with('/')) {
        (true, false) => format!("/{joined}"),
        _ => joined,
    }
}

#[cfg(test)]
mod tests;
