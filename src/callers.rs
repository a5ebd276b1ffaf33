//! `when` and `unless` on a `[[middleware]]` entry: a layer for some
//! callers of the HTTP front only. One shape for every layer:
//!
//! ```toml
//! [[middleware]]
//! type = "filter"
//! tools = { deny = ["delete_*"] }
//! unless = { scopes = ["mcp:admin"] }   # or subjects = ["alice"]; or when = {…}
//! ```
//!
//! A caller matches a table when it holds any of its `scopes` (if given)
//! and is one of its `subjects` (if given). The caller is a session's: the
//! principal an OAuth access token names (its `sub` and scopes), or a
//! static token (its name is the subject; it holds no scopes). Over stdio,
//! and behind a front without authentication, there is no caller: a
//! layer with `when` does not apply, one with `unless` does, so a rule
//! that exempts some callers never exempts an unknown one.
//!
//! Which layers apply is decided once per session, when its chain is
//! built: a layer that does not apply is not in that session's chain.

use mcp_chain_middleware::config_error::ConfigError;
use mcp_chain_middleware::session::SessionInfo;
use serde::Deserialize;
use std::fmt;

/// One `when` or `unless` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Callers {
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
    #[serde(default)]
    pub(crate) subjects: Vec<String>,
}

/// A session's caller, as `when` and `unless` judge it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Who<'a> {
    pub(crate) subject: &'a str,
    pub(crate) scopes: &'a [String],
}

impl<'a> Who<'a> {
    /// The caller of `session`, if it has one.
    pub(crate) fn of(session: &'a SessionInfo) -> Option<Self> {
        match (&session.principal, &session.token) {
            (Some(p), _) => Some(Self {
                subject: &p.subject,
                scopes: &p.scopes,
            }),
            (None, Some(token)) => Some(Self {
                subject: token,
                scopes: &[],
            }),
            (None, None) => None,
        }
    }
}

impl Callers {
    fn matches(&self, who: Option<Who<'_>>) -> bool {
        let Some(who) = who else {
            return false;
        };
        let scoped = self.scopes.is_empty() || self.scopes.iter().any(|s| who.scopes.contains(s));
        let named = self.subjects.is_empty() || self.subjects.iter().any(|s| s == who.subject);
        scoped && named
    }
}

/// Whom a layer applies to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Applies {
    pub(crate) when: Option<Callers>,
    pub(crate) unless: Option<Callers>,
}

impl Applies {
    /// Whether the layer is in the chain of a session whose caller is `who`.
    pub(crate) fn to(&self, who: Option<Who<'_>>) -> bool {
        self.when.as_ref().is_none_or(|w| w.matches(who))
            && !self.unless.as_ref().is_some_and(|u| u.matches(who))
    }

    /// Each table given must name someone.
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        for (key, callers) in [("when", &self.when), ("unless", &self.unless)] {
            if let Some(callers) = callers {
                if callers.scopes.is_empty() && callers.subjects.is_empty() {
                    return Err(ConfigError::key(key, "names no scopes and no subjects"));
                }
                let bad = callers
                    .scopes
                    .iter()
                    .chain(&callers.subjects)
                    .any(|s| s.is_empty());
                if bad {
                    return Err(ConfigError::key(key, "an empty scope or subject"));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn is_everyone(&self) -> bool {
        self.when.is_none() && self.unless.is_none()
    }
}

impl fmt::Display for Applies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |c: &Callers| {
            let mut parts = Vec::new();
            if !c.scopes.is_empty() {
                parts.push(format!("scopes {}", c.scopes.join(", ")));
            }
            if !c.subjects.is_empty() {
                parts.push(format!("subjects {}", c.subjects.join(", ")));
            }
            parts.join(" and ")
        };
        let mut said = Vec::new();
        if let Some(when) = &self.when {
            said.push(format!("only for callers with {}", list(when)));
        }
        if let Some(unless) = &self.unless {
            said.push(format!("not for callers with {}", list(unless)));
        }
        match said.is_empty() {
            true => f.write_str("for every caller"),
            false => f.write_str(&said.join("; ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callers(scopes: &[&str], subjects: &[&str]) -> Option<Callers> {
        Some(Callers {
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            subjects: subjects.iter().map(|s| s.to_string()).collect(),
        })
    }

    #[test]
    fn when_and_unless_pick_callers_and_an_unknown_caller_is_never_exempt() {
        let admin_scopes = ["mcp:read".to_owned(), "mcp:admin".to_owned()];
        let admin = Who {
            subject: "alice",
            scopes: &admin_scopes,
        };
        let reader_scopes = ["mcp:read".to_owned()];
        let reader = Who {
            subject: "bob",
            scopes: &reader_scopes,
        };
        let unless_admin = Applies {
            when: None,
            unless: callers(&["mcp:admin"], &[]),
        };
        assert!(!unless_admin.to(Some(admin)));
        assert!(unless_admin.to(Some(reader)));
        assert!(unless_admin.to(None), "no caller is not exempt");
        let when_bob = Applies {
            when: callers(&[], &["bob"]),
            unless: None,
        };
        assert!(when_bob.to(Some(reader)) && !when_bob.to(Some(admin)) && !when_bob.to(None));
        let both = Applies {
            when: callers(&["mcp:read"], &["alice"]),
            unless: None,
        };
        assert!(both.to(Some(admin)) && !both.to(Some(reader)));
        assert!(Applies::default().to(None));
        assert!(Applies {
            when: callers(&[], &[]),
            unless: None
        }
        .check()
        .is_err());
    }
}
