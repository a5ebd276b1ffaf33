//! Patterns that pick tools, prompts, resources and methods by name: globs,
//! or anchored regexes after `re:`, compiled once at load time.
//!
//! A glob knows `*` (any run of characters), `?` (one character), `[abc]`,
//! `[a-z]`, `[!a-z]` / `[^a-z]` (one character in / not in the set), and `\`
//! to take the next character literally. Names (tools, prompts, methods) are
//! flat, so there `*` matches anything, `/` included: `notifications/*` and
//! `*` both work on methods. URIs have paths, so in a URI pattern ([`Pattern::uri`])
//! `*`, `?` and a class stop at `/`, and `**` crosses it:
//! `file:///etc/*` is the files in `/etc`, `file:///etc/**` everything below.
//!
//! `re:^...$`-style anchors are implied: `re:read_.*` must match the whole
//! name, as a glob does, so `re:read` never matches `unread_file`.
//!
//! [`PatternList`] is an allow/deny pair: deny wins over allow, and an allow
//! list (even an empty one) means everything it does not name is denied.

use regex::{Regex, RegexSet};
use serde::Deserialize;
use std::fmt;
use std::fmt::Write as _;

/// The prefix that makes a pattern a regex instead of a glob.
pub const REGEX_PREFIX: &str = "re:";

/// What a pattern matches: flat names or `/`-separated URIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Tool, prompt and method names: `*` matches any run, `/` included.
    Name,
    /// URIs and URI templates: `*`, `?` and classes stop at `/`; `**` crosses it.
    Uri,
}

/// One compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    regex: Regex,
}

// === impl Pattern ===

impl Pattern {
    /// A pattern over names (tools, prompts, methods).
    pub fn new(source: &str) -> Result<Self, String> {
        Self::with_syntax(source, Syntax::Name)
    }

    /// A pattern over URIs, where `*` stops at `/` and `**` does not.
    pub fn uri(source: &str) -> Result<Self, String> {
        Self::with_syntax(source, Syntax::Uri)
    }

    pub fn with_syntax(source: &str, syntax: Syntax) -> Result<Self, String> {
        let body = match source.strip_prefix(REGEX_PREFIX) {
            Some(re) => re.to_owned(),
            None => glob_to_regex(source, syntax)?,
        };
        let regex = Regex::new(&format!("^(?:{body})$"))
            .map_err(|e| format!("bad pattern {source:?}: {e}"))?;
        Ok(Self {
            source: source.to_owned(),
            regex,
        })
    }

    /// Whether the whole of `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }

    /// The pattern as written in the config.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The anchored regex the pattern compiled to.
    pub fn regex(&self) -> &Regex {
        &self.regex
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.regex.as_str() == other.regex.as_str()
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Translates a glob into the body of a regex (anchors added by the caller).
fn glob_to_regex(glob: &str, syntax: Syntax) -> Result<String, String> {
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

/// `{ allow = [...], deny = [...] }` as written in the TOML.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowDenyConfig {
    /// When present, only what matches is allowed (an empty list allows nothing).
    #[serde(default)]
    pub allow: Option<Vec<String>>,
    #[serde(default)]
    pub deny: Vec<String>,
}

impl AllowDenyConfig {
    /// Compiles both lists. `path` is where the table sits in the config
    /// (`tools`), so an error reads `tools.deny[1]: bad glob ...`.
    pub fn validate(&self, syntax: Syntax, path: &str) -> Result<PatternList, String> {
        let compile = |list: &[String], key: &str| -> Result<Vec<Pattern>, String> {
            list.iter()
                .enumerate()
                .map(|(i, s)| {
                    Pattern::with_syntax(s, syntax).map_err(|e| format!("{path}.{key}[{i}]: {e}"))
                })
                .collect()
        };
        let allow = self
            .allow
            .as_deref()
            .map(|a| compile(a, "allow"))
            .transpose()?;
        let deny = compile(&self.deny, "deny")?;
        PatternList::new(allow, deny).map_err(|e| format!("{path}: {e}"))
    }
}

/// An allow/deny pair. Deny wins; an allow list means default-deny.
#[derive(Debug, Clone, Default)]
pub struct PatternList {
    allow: Option<PatternSet>,
    deny: Option<PatternSet>,
}

/// Patterns matched in one pass (a `RegexSet`), so checking a name against
/// many patterns costs one scan, which matters on 1,000-tool lists.
#[derive(Debug, Clone)]
struct PatternSet {
    patterns: Vec<Pattern>,
    set: RegexSet,
}

impl PatternSet {
    fn new(patterns: Vec<Pattern>) -> Result<Self, String> {
        let set = RegexSet::new(patterns.iter().map(|p| p.regex.as_str()))
            .map_err(|e| format!("patterns too large to combine: {e}"))?;
        Ok(Self { patterns, set })
    }

    fn is_match(&self, text: &str) -> bool {
        self.set.is_match(text)
    }
}

// === impl PatternList ===

impl PatternList {
    /// `allow = None` allows everything the deny list does not name.
    pub fn new(allow: Option<Vec<Pattern>>, deny: Vec<Pattern>) -> Result<Self, String> {
        Ok(Self {
            allow: allow.map(PatternSet::new).transpose()?,
            deny: match deny.is_empty() {
                true => None,
                false => Some(PatternSet::new(deny)?),
            },
        })
    }

    /// Whether `name` passes: not denied, and allowed when there is an allow list.
    pub fn allows(&self, name: &str) -> bool {
        if self.deny.as_ref().is_some_and(|d| d.is_match(name)) {
            return false;
        }
        self.allow.as_ref().map_or(true, |a| a.is_match(name))
    }

    /// True when the list lets everything through, so callers may skip work.
    pub fn allows_all(&self) -> bool {
        self.allow.is_none() && self.deny.is_none()
    }

    pub fn allow_patterns(&self) -> Option<&[Pattern]> {
        self.allow.as_ref().map(|a| a.patterns.as_slice())
    }

    pub fn deny_patterns(&self) -> &[Pattern] {
        self.deny.as_ref().map_or(&[], |d| d.patterns.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(p: &str) -> Pattern {
        Pattern::new(p).expect(p)
    }

    fn uri(p: &str) -> Pattern {
        Pattern::uri(p).expect(p)
    }

    #[test]
    fn name_globs_match_whole_names() {
        let p = name("read_*");
        assert!(p.is_match("read_file") && p.is_match("read_"));
        assert!(!p.is_match("unread_file") && !p.is_match("read"));
        assert!(name("*secret*").is_match("get_secret_key"));
        assert!(name("file?").is_match("files") && !name("file?").is_match("file"));
        assert!(name("a.b").is_match("a.b") && !name("a.b").is_match("axb"));
    }

    #[test]
    fn star_crosses_slash_in_names() {
        assert!(name("*").is_match("tools/call"));
        assert!(name("notifications/*").is_match("notifications/tools/list_changed"));
        assert!(name("sampling/createMessage").is_match("sampling/createMessage"));
    }

    #[test]
    fn star_stops_at_slash_in_uris_and_double_star_crosses() {
        assert!(uri("file:///etc/*").is_match("file:///etc/passwd"));
        assert!(!uri("file:///etc/*").is_match("file:///etc/ssl/cert.pem"));
        assert!(uri("file:///etc/**").is_match("file:///etc/ssl/cert.pem"));
        assert!(uri("file:///etc/**").is_match("file:///etc/"));
        assert!(!uri("file:///etc/**").is_match("file:///etcetera"));
        assert!(!uri("file:///tmp/?").is_match("file:///tmp//"));
        assert!(uri("**/.env").is_match("file:///srv/app/.env"));
    }

    #[test]
    fn classes_ranges_and_negation() {
        let p = name("v[0-9]");
        assert!(p.is_match("v1") && !p.is_match("vx"));
        assert!(name("[!a]b").is_match("xb") && !name("[!a]b").is_match("ab"));
        assert!(name("[^a]b").is_match("xb"));
        assert!(name("[]]").is_match("]"));
        assert!(name("[a-]").is_match("-"));
        assert!(name("[&&]").is_match("&"));
        assert!(!uri("a[!x]b").is_match("a/b"));
    }

    #[test]
    fn backslash_escapes_and_regex_metacharacters_are_literal() {
        assert!(name("a\\*").is_match("a*") && !name("a\\*").is_match("ab"));
        assert!(name("a+(b)").is_match("a+(b)"));
        assert!(name("$^|{}").is_match("$^|{}"));
    }

    #[test]
    fn regex_patterns_are_anchored() {
        let p = name("re:read_.*|list_.*");
        assert!(p.is_match("read_file") && p.is_match("list_dir"));
        assert!(!p.is_match("unread_file") && !p.is_match("xlist_dir"));
        assert!(!name("re:read").is_match("reader"));
        assert_eq!(p.as_str(), "re:read_.*|list_.*");
    }

    #[test]
    fn bad_patterns_are_errors() {
        assert!(Pattern::new("[abc")
            .expect_err("must fail")
            .contains("unclosed ["));
        assert!(Pattern::new("[z-a]")
            .expect_err("must fail")
            .contains("backwards"));
        assert!(Pattern::new("abc\\").is_err());
        assert!(Pattern::new("re:(")
            .expect_err("must fail")
            .contains("re:("));
    }

    fn list(allow: Option<&[&str]>, deny: &[&str]) -> PatternList {
        AllowDenyConfig {
            allow: allow.map(|a| a.iter().map(|s| s.to_string()).collect()),
            deny: deny.iter().map(|s| s.to_string()).collect(),
        }
        .validate(Syntax::Name, "tools")
        .expect("valid")
    }

    #[test]
    fn deny_wins_and_allow_means_default_deny() {
        let l = list(Some(&["read_*", "list_*"]), &["*secret*"]);
        assert!(l.allows("read_file") && l.allows("list_dir"));
        assert!(!l.allows("read_secret") && !l.allows("write_file"));
        let deny_only = list(None, &["rm"]);
        assert!(deny_only.allows("anything") && !deny_only.allows("rm"));
        assert!(!list(Some(&[]), &[]).allows("x"));
        assert!(list(None, &[]).allows_all());
    }

    #[test]
    fn list_errors_name_the_key_path() {
        let err = AllowDenyConfig {
            allow: Some(vec!["ok".into(), "re:(".into()]),
            deny: vec![],
        }
        .validate(Syntax::Name, "tools")
        .expect_err("must fail");
        assert!(err.starts_with("tools.allow[1]: "), "{err}");
    }
}
