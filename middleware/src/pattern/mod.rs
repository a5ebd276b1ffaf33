//! Patterns that pick tools, prompts, resources and methods by name: globs,
//! or anchored regexes after `re:`, read once at load time. Globs are
//! matched by a small NFA of their own (`glob.rs`); only `re:` patterns use
//! the regex engine.
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
//! [`Table`] is a config table of pattern = value, first match wins.
//!
//! [`PatternList`] is an allow/deny pair: deny wins over allow, and an allow
//! list (even an empty one) means everything it does not name is denied.
//!
//! A list of URI patterns compares URIs in a normal form ([`uri`]): a URI
//! that has none matches no pattern and passes no list that judges
//! anything.

mod glob;
mod list;
mod table;
pub mod uri;

pub use glob::GlobFault;
pub use list::{AllowDenyConfig, PatternList};
pub use table::Table;

use regex::Regex;
use std::fmt;

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
    syntax: Syntax,
    matcher: Matcher,
}

#[derive(Debug, Clone)]
enum Matcher {
    Glob(glob::Glob),
    /// `re:`, anchored.
    Regex(Regex),
}

/// Why a pattern cannot be compiled; each variant holds it as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadPattern {
    #[error("bad pattern {pattern:?}: {why}")]
    Regex { pattern: String, why: regex::Error },
    #[error("bad glob {pattern:?}: {why}")]
    Glob { pattern: String, why: GlobFault },
}

impl Pattern {
    /// A pattern over names (tools, prompts, methods).
    pub fn new(source: &str) -> Result<Self, BadPattern> {
        Self::with_syntax(source, Syntax::Name)
    }

    /// A pattern over URIs, where `*` stops at `/` and `**` does not.
    pub fn uri(source: &str) -> Result<Self, BadPattern> {
        Self::with_syntax(source, Syntax::Uri)
    }

    pub fn with_syntax(source: &str, syntax: Syntax) -> Result<Self, BadPattern> {
        let glob = |why| BadPattern::Glob {
            pattern: source.to_owned(),
            why,
        };
        let matcher = match source.strip_prefix(REGEX_PREFIX) {
            Some(re) => Matcher::Regex(Regex::new(&format!("^(?:{re})$")).map_err(|why| {
                BadPattern::Regex {
                    pattern: source.to_owned(),
                    why,
                }
            })?),
            // A URI glob is matched against normalized URIs, so it is
            // normalized too (see `uri`); a regex is taken as written.
            None if syntax == Syntax::Uri => Matcher::Glob(
                glob::Glob::parse(&uri::normalize_pattern(source), syntax).map_err(glob)?,
            ),
            None => Matcher::Glob(glob::Glob::parse(source, syntax).map_err(glob)?),
        };
        Ok(Self {
            source: source.to_owned(),
            syntax,
            matcher,
        })
    }

    /// Whether the whole of `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Matcher::Glob(glob) => glob.is_match(text),
            Matcher::Regex(regex) => regex.is_match(text),
        }
    }

    /// Whether every text matches (`*` over names, `**`): a list holding
    /// such a pattern need not try the others.
    pub fn matches_all(&self) -> bool {
        matches!(&self.matcher, Matcher::Glob(glob) if glob.matches_all())
    }

    pub fn syntax(&self) -> Syntax {
        self.syntax
    }

    /// The pattern as written in the config.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.syntax == other.syntax
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests;
