//! `[[middleware]] type = "search"` as written in the TOML, and its check.

use super::service::SearchLayer;
use crate::config_error::ConfigError;
use crate::pattern::Pattern;
use serde::Deserialize;

/// How many results a search gives at most, unless the table says.
const MAX_RESULTS: usize = 8;
/// The most a table may ask for (a result carries a schema).
const MOST_RESULTS: usize = 50;

/// The search layer's TOML table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    /// Tools listed as usual beside the search tools: globs or `re:`
    /// patterns matching whole names, as in `filter`.
    #[serde(default)]
    pub always: Vec<String>,
    /// Results of one search, at most (default 8, at most 50).
    pub max_results: Option<usize>,
    /// Whether a result carries the tool's `inputSchema` (default true);
    /// when false, `describe_tool` gives a tool's whole definition.
    pub describe: Option<bool>,
}

impl SearchConfig {
    /// Compiles the patterns; an error names its key (`always[1]: …`).
    pub fn validate(&self) -> Result<SearchLayer, ConfigError> {
        let always = self
            .always
            .iter()
            .enumerate()
            .map(|(n, p)| Pattern::new(p).map_err(|e| ConfigError::key(format!("always[{n}]"), e)))
            .collect::<Result<Vec<_>, _>>()?;
        let max_results = self.max_results.unwrap_or(MAX_RESULTS);
        if !(1..=MOST_RESULTS).contains(&max_results) {
            return Err(ConfigError::key(
                "max_results",
                format!("{max_results} is not between 1 and {MOST_RESULTS}"),
            ));
        }
        Ok(SearchLayer::new(
            always,
            max_results,
            self.describe.unwrap_or(true),
        ))
    }
}
