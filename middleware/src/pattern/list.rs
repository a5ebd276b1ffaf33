//! Allow/deny pairs of patterns: deny wins, an allow list means default-deny.

use super::{Pattern, Syntax};
use regex::Regex;
use serde::Deserialize;

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

/// Patterns matched in one pass: one regex that is the alternation of them
/// all (each already anchored), so checking a name against many patterns
/// costs one scan, which matters on 1,000-tool lists. A single `Regex` is
/// faster here than a `RegexSet`, which must track which pattern matched.
#[derive(Debug, Clone)]
struct PatternSet {
    patterns: Vec<Pattern>,
    /// `None` for no patterns: an empty alternation would match everything.
    any: Option<Regex>,
}

impl PatternSet {
    fn new(patterns: Vec<Pattern>) -> Result<Self, String> {
        let any = match patterns.is_empty() {
            true => None,
            false => {
                let alternation: Vec<&str> = patterns.iter().map(|p| p.regex().as_str()).collect();
                let any = Regex::new(&alternation.join("|"))
                    .map_err(|e| format!("patterns too large to combine: {e}"))?;
                Some(any)
            }
        };
        Ok(Self { patterns, any })
    }

    fn is_match(&self, text: &str) -> bool {
        self.any.as_ref().is_some_and(|any| any.is_match(text))
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
        match &self.allow {
            Some(allow) => allow.is_match(name),
            None => true,
        }
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
