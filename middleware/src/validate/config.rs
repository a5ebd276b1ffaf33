//! `[[middleware]] type = "validate"` as written in the TOML.

use super::service::ValidateLayer;
use crate::config_error::ConfigError;
use serde::Deserialize;

/// The validate layer's settings, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateConfig {
    /// Also check `structuredContent` against the tool's `outputSchema`.
    #[serde(default)]
    pub output: bool,
    /// Most steps (subschema visits) one check may take: a schema that asks
    /// for more refuses the call. The default is a few milliseconds' work,
    /// thousands of times what a tool's arguments need.
    #[serde(default = "default_steps")]
    pub max_check_steps: u64,
}

/// See [`ValidateConfig::max_check_steps`].
const DEFAULT_CHECK_STEPS: u64 = 200_000;

fn default_steps() -> u64 {
    DEFAULT_CHECK_STEPS
}

impl Default for ValidateConfig {
    fn default() -> Self {
        Self {
            output: false,
            max_check_steps: DEFAULT_CHECK_STEPS,
        }
    }
}

impl ValidateConfig {
    pub fn validate(&self) -> Result<ValidateLayer, ConfigError> {
        if self.max_check_steps == 0 {
            return Err(ConfigError::key("max_check_steps", "must be at least 1"));
        }
        Ok(ValidateLayer::new(self.output, self.max_check_steps))
    }
}
