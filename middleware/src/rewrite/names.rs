//! The names the client sees for tools and prompts, and the way back: a
//! rename per item, else a prefix, checked at load time so every name we
//! produce from the config is one clients accept.

use super::config::ItemConfig;
use crate::config_error::ConfigError;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// The longest name mcp-chain produces. The 2025-11-25 specification says
/// tool names SHOULD be 1 to 128 characters
/// (<https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names>),
/// but clients that hand tools to a model cap them at 64 (docs/layers/rewrite.md),
/// so 64 is the limit that keeps a renamed tool usable everywhere.
pub(super) const MAX_NAME_CHARS: usize = 64;

/// Whether byte `c` may appear in a name: ASCII letters, digits, `_`, `-`
/// and `.`, the only characters the 2025-11-25 specification allows in tool
/// names. A table: every produced name of a listing is checked.
fn name_byte(c: u8) -> bool {
    const ALLOWED: [bool; 256] = {
        let mut table = [false; 256];
        let mut c = 0;
        while c < 256 {
            let b = c as u8;
            table[c] = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
            c += 1;
        }
        table
    };
    ALLOWED[usize::from(c)]
}

/// Checks a name mcp-chain would produce.
pub(super) fn check_name(name: &str) -> Result<(), BadName> {
    if name.is_empty() {
        return Err(BadName::Empty);
    }
    // Every allowed character is ASCII, so names are checked byte by byte:
    // the first byte that is not allowed starts the first character that
    // is not, and in a name that passes, bytes are characters.
    if let Some(at) = name.bytes().position(|b| !name_byte(b)) {
        let c = name[at..]
            .chars()
            .next()
            .expect("after ASCII, a char boundary");
        return Err(BadName::Character {
            name: shown_name(name),
            c,
        });
    }
    let len = name.len();
    if len > MAX_NAME_CHARS {
        return Err(BadName::TooLong {
            name: shown_name(name),
            len,
        });
    }
    Ok(())
}

/// A name mcp-chain would not produce. The name may be a server's (a
/// prefix on what it lists): it is held escaped and cut.
#[derive(Debug, thiserror::Error)]
pub(super) enum BadName {
    #[error("a name must not be empty")]
    Empty,
    #[error("\"{name}\" contains {c:?}; names may use only A-Z a-z 0-9 _ - .")]
    Character { name: String, c: char },
    #[error("\"{name}\" is {len} characters, more than {MAX_NAME_CHARS}")]
    TooLong { name: String, len: usize },
}

/// `name` as an error shows it.
fn shown_name(name: &str) -> String {
    crate::shown::shown(name, 2 * MAX_NAME_CHARS)
}

/// A TOML key as it would appear in a dotted path: bare when it can be.
pub(super) fn key(k: &str) -> Cow<'_, str> {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Cow::Borrowed(k)
    } else {
        Cow::Owned(format!("{k:?}"))
    }
}

/// What the config says about one upstream tool or prompt.
#[derive(Debug, Clone, Default)]
pub(super) struct Item {
    /// The name the client sees, when renamed.
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    /// Always set (override whatever the client sent).
    pub(super) arguments: Map<String, Value>,
    /// Set only when the client left them out.
    pub(super) defaults: Map<String, Value>,
}

/// Names for one kind (tools or prompts): upstream → client and back.
#[derive(Debug, Default)]
pub(super) struct Names {
    prefix: String,
    /// Keyed by the upstream name.
    items: HashMap<String, Item>,
    /// Client name → upstream name, for renamed items only.
    back: HashMap<String, String>,
}

// === impl Names ===

impl Names {
    /// Checks and indexes one kind's settings. `kind` (`tools`) and
    /// `prefix_key` (`tool_prefix`) name the config keys in errors.
    pub(super) fn new(
        kind: &str,
        prefix_key: &str,
        prefix: &str,
        config: &BTreeMap<String, ItemConfig>,
    ) -> Result<Self, ConfigError> {
        if let Some(c) = prefix
            .chars()
            .find(|&c| !u8::try_from(c).is_ok_and(name_byte))
        {
            return Err(ConfigError::key(
                prefix_key,
                format!("{prefix:?} contains {c:?}; names may use only A-Z a-z 0-9 _ - ."),
            ));
        }
        if prefix.chars().count() >= MAX_NAME_CHARS {
            return Err(ConfigError::key(
                prefix_key,
                format!(
                    "a prefix of {MAX_NAME_CHARS} characters or more leaves no room for a name"
                ),
            ));
        }
        let mut names = Self {
            prefix: prefix.to_owned(),
            ..Self::default()
        };
        // Produced name → the key that produced it, to report collisions.
        let mut produced: BTreeMap<String, &str> = BTreeMap::new();
        for (upstream, item) in config {
            let at = |message: String| ConfigError::key(upstream.as_str(), message).within(kind);
            let client = match &item.name {
                Some(name) => {
                    check_name(name).map_err(|e| ConfigError::at([kind, upstream, "name"], e))?;
                    names.back.insert(name.clone(), upstream.clone());
                    name.clone()
                }
                None => {
                    let name = format!("{prefix}{upstream}");
                    check_name(&name).map_err(|e| at(format!("with {prefix_key}, {e}")))?;
                    name
                }
            };
            if let Some(other) = produced.insert(client.clone(), upstream) {
                return Err(at(format!(
                    "the client would see {client:?} for both {kind}.{} and {kind}.{}",
                    key(other),
                    key(upstream)
                )));
            }
            let item = item
                .validate()
                .map_err(|e| e.within(upstream.as_str()).within(kind))?;
            names.items.insert(upstream.clone(), item);
        }
        Ok(names)
    }

    /// True when nothing is renamed, prefixed or changed.
    pub(super) fn is_identity(&self) -> bool {
        self.prefix.is_empty() && self.items.is_empty()
    }

    pub(super) fn item(&self, upstream: &str) -> Option<&Item> {
        self.items.get(upstream)
    }

    /// The name the client sees for an upstream item.
    pub(super) fn client_name<'a>(&'a self, upstream: &'a str) -> Cow<'a, str> {
        match self.items.get(upstream).and_then(|i| i.name.as_deref()) {
            Some(name) => Cow::Borrowed(name),
            None if self.prefix.is_empty() => Cow::Borrowed(upstream),
            // Not format! or concat: this runs for each of 1,000 listed
            // tools, and both go through generic machinery.
            None => {
                let mut name = String::with_capacity(self.prefix.len() + upstream.len());
                name.push_str(&self.prefix);
                name.push_str(upstream);
                Cow::Owned(name)
            }
        }
    }

    /// The upstream name behind a client name, or `None` when the client
    /// used a name this layer never shows (an upstream name that is renamed
    /// or lacks the prefix): that item is unknown to the client.
    pub(super) fn upstream_name<'a>(&'a self, client: &'a str) -> Option<&'a str> {
        if let Some(upstream) = self.back.get(client) {
            return Some(upstream);
        }
        // Not `strip_prefix("")`: an empty `String`'s pointer is dangling,
        // which glibc's `memcmp` handles slowly (see `pattern::glob`).
        let rest = if self.prefix.is_empty() {
            client
        } else {
            client.strip_prefix(self.prefix.as_str())?
        };
        match self.items.get(rest) {
            Some(item) if item.name.is_some() => None,
            _ => Some(rest),
        }
    }

    /// True when an upstream item's produced name (`client`, from
    /// [`Names::client_name`]) is taken by a rename of another item: it is
    /// left out of lists, since calls by that name go to the renamed item.
    pub(super) fn shadowed(&self, upstream: &str, client: &str) -> bool {
        let renamed = self.items.get(upstream).is_some_and(|i| i.name.is_some());
        !renamed && self.back.contains_key(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_name_is_named_escaped_and_cut() {
        assert!(check_name("ok_name-1.2").is_ok());
        assert_eq!(
            check_name("").expect_err("empty").to_string(),
            "a name must not be empty"
        );
        let forged = "x\u{1b}[2J\ninfo: pinned";
        let err = check_name(forged)
            .expect_err("control characters")
            .to_string();
        assert_eq!(
            err,
            "\"x\\u{001b}[2J\\ninfo: pinned\" contains '\\u{1b}'; names may use only A-Z a-z 0-9 _ - ."
        );
        // A server's name of any length is shown no longer than twice the
        // longest name, then how long it was.
        let long = "n".repeat(100_000);
        let err = check_name(&long).expect_err("too long").to_string();
        assert!(err.ends_with("is 100000 characters, more than 64"), "{err}");
        assert!(err.len() < 300, "{} bytes", err.len());
    }
}
