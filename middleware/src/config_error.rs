//! What is wrong with a layer's config, and where: the key path inside the
//! layer's `[[middleware]]` table (`tools.deny[0]`) as data, not text, so
//! the config file's reader can point at that key's own line and column,
//! and tests can ask where a problem was found.

use std::fmt;

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Name(String),
    Index(usize),
}

impl From<&str> for Key {
    fn from(name: &str) -> Self {
        Self::Name(name.to_owned())
    }
}

impl From<String> for Key {
    fn from(name: String) -> Self {
        Self::Name(name)
    }
}

impl From<usize> for Key {
    fn from(index: usize) -> Self {
        Self::Index(index)
    }
}

/// A layer config problem: the key it is about (empty: the table as a
/// whole) and what is wrong, as a person reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub at: Vec<Key>,
    pub message: String,
}

impl ConfigError {
    /// A problem with the value at `path`.
    pub fn at<K: Into<Key>>(path: impl IntoIterator<Item = K>, message: impl fmt::Display) -> Self {
        Self {
            at: path.into_iter().map(Into::into).collect(),
            message: message.to_string(),
        }
    }

    /// A problem with the value at `key`.
    pub fn key(key: impl Into<Key>, message: impl fmt::Display) -> Self {
        Self::at([key.into()], message)
    }

    /// A problem with the table as a whole.
    pub fn whole(message: impl fmt::Display) -> Self {
        Self::at(Vec::<Key>::new(), message)
    }

    /// The same problem, found inside the value at `key`.
    #[must_use]
    pub fn within(mut self, key: impl Into<Key>) -> Self {
        self.at.insert(0, key.into());
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, key) in self.at.iter().enumerate() {
            match key {
                Key::Name(name) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    write_key(f, name)?;
                }
                Key::Index(index) => write!(f, "[{index}]")?,
            }
        }
        if !self.at.is_empty() {
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

/// A key as TOML writes it: bare when it can be, else quoted.
fn write_key(f: &mut fmt::Formatter<'_>, key: &str) -> fmt::Result {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        f.write_str(key)
    } else {
        write!(f, "{key:?}")
    }
}

/// A key path written as in a config: `keys!["tools", "deny", 0]`.
#[cfg(test)]
macro_rules! keys {
    ($($key:expr),* $(,)?) => {
        vec![$($crate::config_error::Key::from($key)),*]
    };
}
#[cfg(test)]
pub(crate) use keys;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_reads_as_it_is_written_in_toml() {
        let e = ConfigError::at([Key::from("deny"), Key::from(0)], "bad glob").within("tools");
        assert_eq!(e.to_string(), "tools.deny[0]: bad glob");
        assert_eq!(
            ConfigError::whole("nothing to limit").to_string(),
            "nothing to limit"
        );
        let e = ConfigError::key("tool", "no").within(2).within("rules");
        assert_eq!(e.to_string(), "rules[2].tool: no");
        let e = ConfigError::at(["tools", "a.b", "name"], "bad");
        assert_eq!(e.to_string(), "tools.\"a.b\".name: bad");
    }
}
