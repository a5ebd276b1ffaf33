//! `[[middleware]] type = "pin"` as written in the TOML.

use super::service::{OnChange, PinLayer};
use super::store::Store;
use crate::config_error::ConfigError;
use serde::Deserialize;
use std::path::Path;

/// The pin layer's settings, as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinConfig {
    /// The pin file.
    pub path: String,
    /// `"hide"` (default), `"refuse"` or `"warn"`.
    #[serde(default)]
    pub on_change: Option<String>,
}

impl PinConfig {
    /// Checks the settings and opens the pin file (creating it when there
    /// is none), so a file that cannot be read or written is found now.
    pub fn validate(&self) -> Result<PinLayer, ConfigError> {
        if self.path.trim().is_empty() {
            return Err(ConfigError::key("path", "must name the pin file"));
        }
        let on_change = match self.on_change.as_deref() {
            None | Some("hide") => OnChange::Hide,
            Some("refuse") => OnChange::Refuse,
            Some("warn") => OnChange::Warn,
            Some(other) => {
                return Err(ConfigError::key(
                    "on_change",
                    format!("{other:?} is not \"hide\", \"refuse\" or \"warn\""),
                ))
            }
        };
        let store = Store::open(Path::new(&self.path)).map_err(|e| ConfigError::key("path", e))?;
        Ok(PinLayer::new(store, on_change))
    }
}
