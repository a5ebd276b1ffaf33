//! `[[middleware]] type = "validate"` as written in the TOML.

use super::service::ValidateLayer;
use serde::Deserialize;

/// The validate layer's settings, as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateConfig {
    /// Also check `structuredContent` against the tool's `outputSchema`.
    #[serde(default)]
    pub output: bool,
}

impl ValidateConfig {
    pub fn validate(&self) -> Result<ValidateLayer, String> {
        Ok(ValidateLayer::new(self.output))
    }
}
