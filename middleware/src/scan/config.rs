//! `[[middleware]] type = "scan"` as written in the TOML, and its check.

use super::rules::{Place, Rule, BUILT_IN, INVISIBLE, OVERSIZED};
use super::scanner::Scanner;
use super::service::{Actions, ListingAction, ResultAction, ScanLayer};
use crate::config_error::{ConfigError, Key};
use serde::Deserialize;

/// The scan layer's TOML table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanConfig {
    /// What a flagged tool, prompt, resource or template does to a
    /// listing: `"audit"` (flagged only), `"hide"` (the default: it leaves
    /// the list and its calls are refused), `"refuse"` (the listing answer
    /// becomes an error).
    pub listings: Option<String>,
    /// What a flagged result becomes: `"audit"`, `"redact"` (the default:
    /// the sentence found replaced), `"refuse"` (the answer an error).
    pub results: Option<String>,
    /// The server's `initialize` instructions: `"audit"` (the default) or
    /// `"redact"`.
    pub instructions: Option<String>,
    /// A user's own rules, besides the built-in ones.
    #[serde(default)]
    pub rule: Vec<RuleConfig>,
}

/// One `[[middleware.rule]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Its name in findings (the audit, telemetry).
    pub id: String,
    /// `re:` and a regex, or words matched as written (case ignored, any
    /// run of white space for a space); read in the normal text.
    pub pattern: String,
    /// Where it reads: `"descriptions"`, `"results"`, `"instructions"`
    /// (default: all three).
    #[serde(default, rename = "where")]
    pub places: Option<Vec<String>>,
}

impl ScanConfig {
    /// Checks the actions and compiles the rules. An error names its key
    /// (`rule[0].pattern: …`).
    pub fn validate(&self) -> Result<ScanLayer, ConfigError> {
        let listings = match self.listings.as_deref() {
            None | Some("hide") => ListingAction::Hide,
            Some("audit") => ListingAction::Audit,
            Some("refuse") => ListingAction::Refuse,
            Some(other) => {
                return Err(ConfigError::key(
                    "listings",
                    format!("{other:?} is not \"audit\", \"hide\" or \"refuse\""),
                ))
            }
        };
        let results = match self.results.as_deref() {
            None | Some("redact") => ResultAction::Redact,
            Some("audit") => ResultAction::Audit,
            Some("refuse") => ResultAction::Refuse,
            Some(other) => {
                return Err(ConfigError::key(
                    "results",
                    format!("{other:?} is not \"audit\", \"redact\" or \"refuse\""),
                ))
            }
        };
        let instructions = match self.instructions.as_deref() {
            None | Some("audit") => false,
            Some("redact") => true,
            Some(other) => {
                return Err(ConfigError::key(
                    "instructions",
                    format!("{other:?} is not \"audit\" or \"redact\""),
                ))
            }
        };
        let mut rules = Rule::built_in();
        for (i, rule) in self.rule.iter().enumerate() {
            rules.push(own_rule(rule, &rules).map_err(|e| e.within(i).within("rule"))?);
        }
        let actions = Actions {
            listings,
            results,
            instructions,
        };
        Ok(ScanLayer::new(Scanner::new(rules), actions))
    }
}

fn own_rule(rule: &RuleConfig, known: &[Rule]) -> Result<Rule, ConfigError> {
    let id = rule.id.trim();
    let taken = BUILT_IN.iter().map(|b| b.id).chain([INVISIBLE, OVERSIZED]);
    if id.is_empty() {
        return Err(ConfigError::key("id", "must name the rule"));
    }
    if taken.clone().any(|t| t == id) || known.iter().any(|r| r.id == id) {
        return Err(ConfigError::key(
            "id",
            format!("{id:?} is taken (by a built-in rule or another rule)"),
        ));
    }
    let places = match &rule.places {
        None => vec![Place::Descriptions, Place::Results, Place::Instructions],
        Some(words) if words.is_empty() => return Err(ConfigError::key("where", "names no place")),
        Some(words) => words
            .iter()
            .enumerate()
            .map(|(n, w)| {
                Place::parse(w).ok_or_else(|| {
                    ConfigError::at(
                        [Key::from("where"), n.into()],
                        format!("{w:?} is not \"descriptions\", \"results\" or \"instructions\""),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let pattern = match rule.pattern.strip_prefix("re:") {
        Some(re) => re.to_owned(),
        None if rule.pattern.trim().is_empty() => {
            return Err(ConfigError::key("pattern", "is empty"))
        }
        None => rule
            .pattern
            .split_whitespace()
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(r"\s+"),
    };
    let compiled =
        Rule::new(id, &places, &[pattern]).map_err(|e| ConfigError::key("pattern", e))?;
    if compiled.find("").is_some() {
        return Err(ConfigError::key("pattern", "matches the empty string"));
    }
    Ok(compiled)
}
