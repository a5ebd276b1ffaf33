//! `[[middleware]] type = "approve"` as written in the TOML.

use super::service::{ApproveLayer, Settings, Way};
use crate::config_error::{ConfigError, Key};
use crate::pattern::Pattern;
use crate::units::parse_duration;
use serde::Deserialize;

/// The approve layer's settings, as written.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
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
    /// The ways to ask, in order: `"elicitation"` (the client's own
    /// dialog), `"page"` (mcp-chain's approval page, with `[console]`).
    #[serde(default)]
    pub ask: Option<Vec<String>>,
    /// How long a client that declares elicitation has to answer before
    /// its question is withdrawn and the next way is tried (default 20s;
    /// with no next way, the whole `timeout`).
    #[serde(default)]
    pub elicitation_wait: Option<String>,
    /// With `remember = "always"`: a lasting grant holds for the call's
    /// `"arguments"` (default) or for the `"tool"` with any arguments.
    #[serde(default)]
    pub always: Option<String>,
}

/// `elicitation_wait` when not given.
const DEFAULT_ELICITATION_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

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
        let (remember_session, remember_always) = match self.remember.as_deref() {
            None | Some("once") => (false, false),
            Some("session") => (true, false),
            Some("always") => (true, true),
            Some(other) => {
                return Err(ConfigError::key(
                    "remember",
                    format!("{other:?} is not \"once\", \"session\" or \"always\""),
                ))
            }
        };
        let always_tool = match self.always.as_deref() {
            None | Some("arguments") => false,
            Some("tool") => true,
            Some(other) => {
                return Err(ConfigError::key(
                    "always",
                    format!("{other:?} is not \"arguments\" or \"tool\""),
                ))
            }
        };
        if self.always.is_some() && !remember_always {
            return Err(ConfigError::key(
                "always",
                "goes with remember = \"always\"",
            ));
        }
        let revision = crate::pin::fingerprint::digest(
            &serde_json::to_value(self).unwrap_or(serde_json::Value::Null),
        );
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
        let mut ways = Vec::new();
        for (n, way) in self.ask.iter().flatten().enumerate() {
            let way = match way.as_str() {
                "elicitation" => Way::Elicitation,
                "page" => Way::Page,
                other => {
                    return Err(ConfigError::at(
                        [Key::from("ask"), Key::from(n)],
                        format!("{other:?} is not \"elicitation\" or \"page\""),
                    ))
                }
            };
            if ways.contains(&way) {
                return Err(ConfigError::at(
                    [Key::from("ask"), Key::from(n)],
                    "a way is named twice",
                ));
            }
            ways.push(way);
        }
        if self.ask.is_some() && ways.is_empty() {
            return Err(ConfigError::key("ask", "name at least one way to ask"));
        }
        if ways.is_empty() {
            ways.push(Way::Elicitation);
        }
        let elicitation_wait = match &self.elicitation_wait {
            Some(text) => {
                let wait =
                    parse_duration(text).map_err(|e| ConfigError::key("elicitation_wait", e))?;
                if wait.is_zero() {
                    return Err(ConfigError::key("elicitation_wait", "must be more than 0"));
                }
                wait
            }
            None => DEFAULT_ELICITATION_WAIT,
        };
        Ok(ApproveLayer::new(Settings {
            tools,
            remember_session,
            fallback_allow,
            timeout,
            ways,
            elicitation_wait,
            patterns: self.tools.join(", "),
            remember_always,
            always_tool,
            revision,
        }))
    }
}
