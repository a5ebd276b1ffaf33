//! `[[middleware]] type = "filter"` as written in the TOML, and its check.

use super::layer::FilterLayer;
use super::policy::Policy;
use crate::config_error::ConfigError;
use crate::pattern::{AllowDenyConfig, Syntax};
use serde::Deserialize;

/// The filter's TOML table. Each key is an allow/deny pair of patterns; a
/// key left out lets everything of its kind through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// Tools, by name.
    #[serde(default)]
    pub tools: AllowDenyConfig,
    /// Resources, by URI (`*` stops at `/`, `**` crosses it). Also applied
    /// to resource templates' `uriTemplate`, since any URI a template makes
    /// is read through `resources/read` and checked here anyway.
    #[serde(default)]
    pub resources: AllowDenyConfig,
    /// Resource templates, by `uriTemplate` (URI syntax).
    #[serde(default)]
    pub resource_templates: AllowDenyConfig,
    /// Prompts, by name.
    #[serde(default)]
    pub prompts: AllowDenyConfig,
    /// JSON-RPC methods, in either direction (`sampling/createMessage`).
    #[serde(default)]
    pub methods: AllowDenyConfig,
}

impl FilterConfig {
    /// Compiles every pattern once. An error names its key, as in
    /// `tools.allow[1]: bad glob "[a": unclosed [`.
    pub fn validate(&self) -> Result<FilterLayer, ConfigError> {
        let policy = Policy {
            tools: self.tools.validate(Syntax::Name, "tools")?,
            resources: self.resources.validate(Syntax::Uri, "resources")?,
            templates: self
                .resource_templates
                .validate(Syntax::Uri, "resource_templates")?,
            prompts: self.prompts.validate(Syntax::Name, "prompts")?,
            methods: self.methods.validate(Syntax::Name, "methods")?,
        };
        Ok(FilterLayer::new(policy))
    }
}
