//! Allow/deny pairs of patterns: deny wins, an allow list means default-deny.

use super::{uri, Pattern, Syntax};
use crate::config_error::{ConfigError, Key};
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
    /// (`tools`), so an error is about `tools.deny[1]`.
    pub fn validate(&self, syntax: Syntax, path: &str) -> Result<PatternList, ConfigError> {
        let compile = |list: &[String], key: &str| -> Result<Vec<Pattern>, ConfigError> {
            list.iter()
                .enumerate()
                .map(|(i, s)| {
                    Pattern::with_syntax(s, syntax)
                        .map_err(|e| ConfigError::at([Key::from(path), key.into(), i.into()], e))
                })
                .collect()
        };
        let allow = self
            .allow
            .as_deref()
            .map(|a| compile(a, "allow"))
            .transpose()?;
        let deny = compile(&self.deny, "deny")?;
        Ok(PatternList::new(allow, deny))
    }
}

/// An allow/deny pair. Deny wins; an allow list means default-deny.
#[derive(Debug, Clone, Default)]
pub struct PatternList {
    allow: Option<PatternSet>,
    deny: Option<PatternSet>,
    /// URI patterns: a name is normalized before it is tried.
    uris: bool,
}

/// One side of the pair. Each pattern is tried in turn; a glob without a
/// wildcard is a string comparison, and a glob a pass over the name.
#[derive(Debug, Clone)]
struct PatternSet {
    patterns: Vec<Pattern>,
    /// One of them matches everything (`allow = ["*"]`), so no name is
    /// tried against them.
    all: bool,
}

impl PatternSet {
    fn new(patterns: Vec<Pattern>) -> Self {
        let all = patterns.iter().any(Pattern::matches_all);
        Self { patterns, all }
    }

    fn is_match(&self, text: &str) -> bool {
        self.all || self.patterns.iter().any(|p| p.is_match(text))
    }
}

// === impl PatternList ===

impl PatternList {
    /// `allow = None` allows everything the deny list does not name.
    pub fn new(allow: Option<Vec<Pattern>>, deny: Vec<Pattern>) -> Self {
        let uris = allow
            .iter()
            .flatten()
            .chain(&deny)
            .any(|p| p.syntax() == Syntax::Uri);
        Self {
            allow: allow.map(PatternSet::new),
            deny: (!deny.is_empty()).then(|| PatternSet::new(deny)),
            uris,
        }
    }

    /// Whether `name` passes: not denied, and allowed when there is an
    /// allow list. A URI is tried in its normal form; one that has none
    /// passes only a list that judges nothing.
    pub fn allows(&self, name: &str) -> bool {
        if self.allows_all() {
            return true;
        }
        if !self.uris {
            return self.allows_normal(name);
        }
        match uri::normalize(name) {
            Ok(normal) => self.allows_normal(&normal),
            Err(why) => {
                tracing::debug!(uri = name, why, "refused a URI with no normal form");
                false
            }
        }
    }

    fn allows_normal(&self, name: &str) -> bool {
        if self.deny.as_ref().is_some_and(|d| d.is_match(name)) {
            return false;
        }
        match &self.allow {
            Some(allow) => allow.is_match(name),
            None => true,
        }
    }

    /// The rule that refuses `name`, as configured (the deny pattern it
    /// matches, or the allow list none of whose patterns does), for a
    /// decision's record; `None` when `name` passes.
    pub fn refusing_rule(&self, name: &str) -> Option<String> {
        if self.allows(name) {
            return None;
        }
        let normal = match self.uris {
            true => uri::normalize(name).ok(),
            false => Some(name.into()),
        };
        let Some(normal) = normal else {
            return Some("uri has no normal form".to_owned());
        };
        let denied = self.deny_patterns().iter().find(|p| p.is_match(&normal));
        Some(match denied {
            Some(pattern) => format!("deny {:?}", pattern.as_str()),
            None => "allow: no pattern matches".to_owned(),
        })
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
