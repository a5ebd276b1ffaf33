//! `[[middleware]] type = "limit"` as written in the TOML, and its checks.

use super::service::{Action, LimitLayer, Rules};
use crate::config_error::ConfigError;
use crate::pattern::Table;
use serde::Deserialize;

/// The word that lifts the limit for the tools or methods it names.
const NO_LIMIT: &str = "none";

/// The limit layer's settings, as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitConfig {
    /// The most bytes a result may have when no `tools` or `methods` entry
    /// names its request.
    #[serde(default)]
    pub max_result_bytes: Option<Size>,
    /// Tool-name pattern → limit for `tools/call`, first match wins.
    #[serde(default)]
    pub tools: Table<Size>,
    /// Method pattern → limit, first match wins; checked after `tools`.
    #[serde(default)]
    pub methods: Table<Size>,
    /// `"refuse"` (default) or `"truncate"`.
    #[serde(default)]
    pub action: Option<String>,
    /// The most items a listing keeps.
    #[serde(default)]
    pub max_list_items: Option<usize>,
}

/// A size as written: bytes, or a string with a unit, or `"none"`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Size {
    Bytes(u64),
    Text(String),
}

// === impl LimitConfig ===

impl LimitConfig {
    /// Checks every value and compiles every pattern.
    pub fn validate(&self) -> Result<LimitLayer, ConfigError> {
        let default = match &self.max_result_bytes {
            Some(size) => size
                .bytes()
                .map_err(|e| ConfigError::key("max_result_bytes", e))?,
            None => None,
        };
        let tools = self.tools.compile("tools", Size::bytes)?;
        let methods = self.methods.compile("methods", Size::bytes)?;
        let action = match self.action.as_deref() {
            None | Some("refuse") => Action::Refuse,
            Some("truncate") => Action::Truncate,
            Some(other) => {
                return Err(ConfigError::key(
                    "action",
                    format!("{other:?} is not \"refuse\" or \"truncate\""),
                ))
            }
        };
        if self.max_list_items == Some(0) {
            return Err(ConfigError::key(
                "max_list_items",
                "0 would empty every listing",
            ));
        }
        let sizes = || tools.iter().chain(&methods).map(|(_, s)| s);
        if default.is_none() && sizes().all(Option::is_none) && self.max_list_items.is_none() {
            return Err(ConfigError::whole("nothing to limit: set max_result_bytes, a size under tools or methods, or max_list_items"));
        }
        Ok(LimitLayer::new(Rules {
            default,
            tools,
            methods,
            action,
            max_list_items: self.max_list_items,
        }))
    }
}

/// Why a size cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSize {
    #[error("a limit of 0 bytes refuses every result; say \"none\" for no limit")]
    Zero,
    #[error("{0} bytes is more than this machine can hold")]
    TooBigForThisMachine(u64),
    #[error("{0:?} is not a size (bytes, or a number with B, KB, KiB, MB, MiB, GB, GiB)")]
    NotASize(String),
    #[error("{text:?}: unknown unit {unit:?} (B, KB, KiB, MB, MiB, GB, GiB)")]
    UnknownUnit { text: String, unit: String },
    #[error("{0:?} is too big")]
    TooBig(String),
}

// === impl Size ===

impl Size {
    /// The size in bytes; `None` for `"none"`.
    pub fn bytes(&self) -> Result<Option<usize>, BadSize> {
        let bytes = match self {
            Self::Bytes(n) => *n,
            Self::Text(text) if text.trim() == NO_LIMIT => return Ok(None),
            Self::Text(text) => parse(text)?,
        };
        match usize::try_from(bytes) {
            Ok(0) => Err(BadSize::Zero),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(BadSize::TooBigForThisMachine(bytes)),
        }
    }
}

/// `"512KiB"`, `"1MiB"`, `"2MB"`, `"100"`: bytes.
fn parse(text: &str) -> Result<u64, BadSize> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| BadSize::NotASize(text.to_owned()))?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" => 1_000,
        "KiB" => 1 << 10,
        "MB" => 1_000_000,
        "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "GiB" => 1 << 30,
        other => {
            return Err(BadSize::UnknownUnit {
                text: text.to_owned(),
                unit: other.to_owned(),
            })
        }
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| BadSize::TooBig(text.to_owned()))
}
