//! `[[middleware]] type = "approve"` as written in the TOML.

use super::service::{ApproveLayer, Settings};
use crate::config_error::{ConfigError, Key};
use crate::pattern::Pattern;
use crate::units::parse_duration;
use serde::Deserialize;

/// The approve layer's settings, as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproveConfig {
    /// Tool-name patterns (globs or `re:` regexes) whose calls wait for
    /// the user.
    pub tools: Vec<String>,
    /// `"once"` (default): every call asks. `"session"`: the user may also
    /// allow a tool for the rest of the session.
    #[serde(default)]
    pub remember: Option<String>,
    /// `"refuse"` (default) or `"allow"`: what happens to a call when the
    /// client cannot ask its user (no elicitation capability).
    #[serde(default)]
    pub fallback: Option<String>,
    /// How long the user has to answer (default "2m").
    #[serde(default)]
    pub timeout: Option<String>,
}

impl ApproveConfig {
    pub fn validate(&self) -> Result<ApproveLayer, ConfigError> {
        if self.tools.is_empty() {
            return Err(ConfigError::key(
                "tools",
                "name at least one tool pattern whose calls need approval",
            ));
        }
        let tools = self
            .tools
            .iter()
            .enumerate()
            .map(|(n, p)| {
                Pattern::new(p).map_err(|e| ConfigError::at([Key::from("tools"), Key::from(n)], e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let remember_session = match self.remember.as_deref() {
            None | Some("once") => false,
            Some("session") => true,
            Some(other) => {
                return Err(ConfigError::key(
                    "remember",
                    format!("{other:?} is not \"once\" or \"session\""),
                ))
            }
        };
        let fallback_allow = match self.fallback.as_deref() {
            None | Some("refuse") => false,
            Some("allow") => true,
            Some(other) => {
                return Err(ConfigError::key(
                    "fallback",
                    format!("{other:?} is not \"refuse\" or \"allow\""),
                ))
            }
        };
        let timeout = match &self.timeout {
            Some(text) => parse_duration(text).map_err(|e| ConfigError::key("timeout", e))?,
            None => std::time::Duration::from_secs(120),
        };
        if timeout.is_zero() {
            return Err(ConfigError::key("timeout", "must be more than 0"));
        }
        Ok(ApproveLayer::new(Settings {
            tools,
            remember_session,
            fallback_allow,
            timeout,
        }))
    }
}
