//! `[[middleware]] type = "rewrite"` as written in the TOML, and its check.

use super::layer::RewriteLayer;
use super::names::{Item, Names};
use super::redact::Redactor;
use crate::config_error::{ConfigError, Key};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The rewrite layer's TOML table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewriteConfig {
    /// Put before every tool name the client sees (unless the tool is renamed).
    #[serde(default)]
    pub tool_prefix: String,
    /// Put before every prompt name the client sees (unless renamed).
    #[serde(default)]
    pub prompt_prefix: String,
    /// Per tool, keyed by the upstream name: `[middleware.tools.read_file]`.
    #[serde(default)]
    pub tools: BTreeMap<String, ItemConfig>,
    /// Per prompt, keyed by the upstream name.
    #[serde(default)]
    pub prompts: BTreeMap<String, ItemConfig>,
    /// `[[middleware.redact]]` rules, applied in order.
    #[serde(default)]
    pub redact: Vec<RedactConfig>,
    /// Also redact the arguments of `tools/call` and `prompts/get` on their
    /// way to the server (after overrides and defaults are set).
    #[serde(default)]
    pub redact_arguments: bool,
}

/// What to change about one tool or prompt.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemConfig {
    /// The name the client sees instead (no prefix is added to it).
    #[serde(default)]
    pub name: Option<String>,
    /// Replaces the description in every list.
    #[serde(default)]
    pub description: Option<String>,
    /// Arguments always set, whatever the client sent.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Arguments set only when the client left them out.
    #[serde(default)]
    pub defaults: Map<String, Value>,
}

/// One `[[middleware.redact]]` rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactConfig {
    /// A regex (unanchored), or `@name` for a built-in pattern.
    pub pattern: String,
    /// What a match becomes (`$1`, `${name}` refer to groups); `[REDACTED]`
    /// when left out.
    #[serde(default)]
    pub replacement: Option<String>,
    /// Tools (globs or `re:` patterns, whole names, as `filter` takes
    /// them) whose calls this rule leaves alone: their arguments, results
    /// and errors.
    #[serde(default)]
    pub except_tools: Vec<String>,
}

impl RewriteConfig {
    /// Checks every name the config produces and compiles every pattern.
    /// An error names its key: `tools.read_file.name: ...`, `redact[1].pattern: ...`.
    pub fn validate(&self) -> Result<RewriteLayer, ConfigError> {
        let tools = Names::new("tools", "tool_prefix", &self.tool_prefix, &self.tools)?;
        for (name, item) in &self.prompts {
            for (table, args) in [("arguments", &item.arguments), ("defaults", &item.defaults)] {
                if let Some((arg, _)) = args.iter().find(|(_, v)| !v.is_string()) {
                    let at = [name.as_str(), table, arg.as_str()];
                    let e = ConfigError::at(at, "prompt arguments are strings");
                    return Err(e.within("prompts"));
                }
            }
        }
        let prompts = Names::new(
            "prompts",
            "prompt_prefix",
            &self.prompt_prefix,
            &self.prompts,
        )?;
        let mut redactor = Redactor::default();
        for (i, rule) in self.redact.iter().enumerate() {
            let except = rule
                .except_tools
                .iter()
                .enumerate()
                .map(|(n, p)| {
                    crate::pattern::Pattern::new(p).map_err(|e| {
                        ConfigError::at(
                            [
                                Key::from("redact"),
                                i.into(),
                                "except_tools".into(),
                                n.into(),
                            ],
                            e,
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            redactor
                .push(&rule.pattern, rule.replacement.as_deref(), except)
                .map_err(|e| {
                    ConfigError::at([Key::from("redact"), Key::from(i), Key::from("pattern")], e)
                })?;
        }
        if self.redact_arguments && redactor.is_empty() {
            return Err(ConfigError::key(
                "redact_arguments",
                "true, but there are no [[middleware.redact]] rules",
            ));
        }
        Ok(RewriteLayer::new(
            tools,
            prompts,
            redactor,
            self.redact_arguments,
        ))
    }
}

impl ItemConfig {
    /// Errors name the key inside the item (`defaults.x`).
    pub(super) fn validate(&self) -> Result<Item, ConfigError> {
        if let Some(arg) = self
            .arguments
            .keys()
            .find(|k| self.defaults.contains_key(*k))
        {
            let why = "also in its arguments, which always win";
            return Err(ConfigError::at(["defaults", arg.as_str()], why));
        }
        Ok(Item {
            name: self.name.clone(),
            description: self.description.clone(),
            arguments: self.arguments.clone(),
            defaults: self.defaults.clone(),
        })
    }
}
