//! `[[middleware]] type = "audit"` as written in the TOML, and its checks.

use super::layer::{AuditLayer, Shared};
use super::sink::Sink;
use crate::config_error::ConfigError;
use serde::Deserialize;

/// The audit layer's settings, as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// The file lines are appended to (created 0600), or `"-"` for stderr.
    pub path: String,
    /// Also record `params`, `result` and `error` (they may hold secrets).
    #[serde(default)]
    pub payloads: bool,
    /// What to do with a request whose line cannot be written.
    #[serde(default)]
    pub on_write_error: OnWriteError,
}

/// `on_write_error`: no record, no request (the default); or carry on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnWriteError {
    /// Answer the request with an error and do not forward it.
    #[default]
    Refuse,
    /// Forward it anyway and log the failure to stderr.
    Forward,
}

impl AuditConfig {
    /// Opens the log now, so a path that cannot be written is a load-time
    /// error (`path: cannot open ...`), not a refusal of the first request.
    pub fn validate(&self) -> Result<AuditLayer, ConfigError> {
        if self.path.trim().is_empty() {
            return Err(ConfigError::key(
                "path",
                "must name a file, or \"-\" for stderr",
            ));
        }
        let sink = Sink::open(&self.path).map_err(|e| {
            let why = format!("cannot open {:?} for appending: {e}", self.path);
            ConfigError::key("path", why)
        })?;
        Ok(AuditLayer::new(Shared {
            sink,
            payloads: self.payloads,
            on_write_error: self.on_write_error,
        }))
    }
}
