//! `[[middleware]] type = "timeout"` as written in the TOML, and its checks.

use super::layer::{Deadline, Rules, TimeoutLayer};
use crate::config_error::ConfigError;
use crate::pattern::Table;
use crate::units::{parse_duration, BadUnit};
use serde::Deserialize;
use std::time::Duration;

/// The word that turns a deadline off for the tools or methods it names.
const NO_DEADLINE: &str = "none";

/// The timeout layer's settings, as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutConfig {
    /// Deadline for every client request no `tools` or `methods` entry names.
    #[serde(default)]
    pub default: Option<String>,
    /// Tool-name pattern → deadline for `tools/call`, first match wins.
    #[serde(default)]
    pub tools: Table<String>,
    /// Method pattern → deadline, first match wins; checked after `tools`.
    #[serde(default)]
    pub methods: Table<String>,
    /// Each `notifications/progress` for the request starts its deadline over.
    #[serde(default)]
    pub reset_on_progress: bool,
    /// With `reset_on_progress`, the most a request may run however much
    /// progress it reports.
    #[serde(default)]
    pub max_total: Option<String>,
}

// === impl TimeoutConfig ===

impl TimeoutConfig {
    /// Checks every value and compiles every pattern. Errors name the key:
    /// `tools."slow_*": bad duration ...`.
    pub fn validate(&self) -> Result<TimeoutLayer, ConfigError> {
        let default = match &self.default {
            Some(text) => deadline(text).map_err(|e| ConfigError::key("default", e))?,
            None => None,
        };
        let tools = self.tools.compile("tools", |text| deadline(text))?;
        let methods = self.methods.compile("methods", |text| deadline(text))?;
        if default.is_none() && tools.iter().chain(&methods).all(|(_, d)| d.is_none()) {
            return Err(ConfigError::whole(
                "nothing to time out: set default, or a deadline under tools or methods",
            ));
        }
        let max_total = match &self.max_total {
            Some(_) if !self.reset_on_progress => {
                return Err(ConfigError::key(
                    "max_total",
                    "only used with reset_on_progress = true",
                ))
            }
            Some(text) => Some(positive(text).map_err(|e| ConfigError::key("max_total", e))?),
            None => None,
        };
        Ok(TimeoutLayer::new(Rules {
            default,
            tools,
            methods,
            reset_on_progress: self.reset_on_progress,
            max_total,
        }))
    }
}

/// Why a deadline cannot be used.
#[derive(Debug, thiserror::Error)]
enum BadDeadline {
    #[error(transparent)]
    Unit(#[from] BadUnit),
    #[error("{0:?} is zero; a deadline must be positive")]
    Zero(String),
}

/// A positive duration, or `"none"` for no deadline.
fn deadline(text: &str) -> Result<Deadline, BadDeadline> {
    if text.trim() == NO_DEADLINE {
        return Ok(None);
    }
    positive(text).map(Some)
}

fn positive(text: &str) -> Result<Duration, BadDeadline> {
    match parse_duration(text)? {
        d if d.is_zero() => Err(BadDeadline::Zero(text.to_owned())),
        d => Ok(d),
    }
}
