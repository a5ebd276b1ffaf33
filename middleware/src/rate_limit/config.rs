//! `[[middleware]] type = "rate_limit"` as written in the TOML, and its checks.

use super::bucket::Bucket;
use super::layer::{Matcher, RateLimitLayer, Rule, Settings};
use crate::config_error::ConfigError;
use crate::pattern::Pattern;
use crate::units::{parse_duration, Rate};
use serde::Deserialize;
use std::sync::Mutex;
use std::time::Duration;

/// How long a request may be held in `wait` mode when `max_wait` is not set.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);

/// The rate limit layer's settings, as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// What happens to a request over the limit.
    #[serde(default)]
    pub on_limit: OnLimit,
    /// In `wait` mode, the longest a request is held before it is refused.
    #[serde(default)]
    pub max_wait: Option<String>,
    /// Checked in order; the first rule that matches a request limits it.
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
    /// Served over HTTP to several clients: one set of buckets for all
    /// sessions (`global`, the default), or one per session.
    #[serde(default)]
    pub scope: Scope,
}

/// `scope`: whose requests share the buckets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    #[default]
    Global,
    Session,
    /// Per caller of the HTTP front: every session of one principal (one
    /// subject of one issuer, or one static token) shares its buckets.
    /// Without a caller (stdio, an unauthenticated front) one set for all.
    Principal,
    /// Per server of a gateway (`[servers.NAME]`): in the shared chain,
    /// each server's requests (by the prefix of the tool they name) have
    /// buckets of their own, shared by every session; in a server's own
    /// chain, and in front of one server, the same as `global`.
    Server,
}

/// `on_limit`: refuse at once, or hold the request for a token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnLimit {
    #[default]
    Reject,
    Wait,
}

/// One `rules` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Matches `tools/call` for tools whose name matches this pattern.
    #[serde(default)]
    pub tool: Option<String>,
    /// Matches requests whose method matches this pattern.
    #[serde(default)]
    pub method: Option<String>,
    /// `"5/s"`, `"100/min"`, `"10/30s"`.
    pub rate: String,
    /// Tokens the bucket holds when full: how many requests may come at
    /// once after a quiet spell. Defaults to the rate's count.
    #[serde(default)]
    pub burst: Option<u32>,
    /// Which requests the rule applies to.
    #[serde(default)]
    pub direction: RuleDirection,
}

/// Whose requests a rule limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleDirection {
    /// The client's requests (the usual case).
    #[default]
    ClientToServer,
    /// The server's requests (sampling, elicitation, roots).
    ServerToClient,
    Both,
}

// === impl RateLimitConfig ===

impl RateLimitConfig {
    /// Compiles the patterns and parses the rates. Errors name the key:
    /// `rules[1].rate: bad rate ...`.
    pub fn validate(&self) -> Result<RateLimitLayer, ConfigError> {
        if self.rules.is_empty() {
            return Err(ConfigError::key("rules", "at least one rule is needed"));
        }
        let max_wait = match &self.max_wait {
            Some(text) => parse_duration(text).map_err(|e| ConfigError::key("max_wait", e))?,
            None => DEFAULT_MAX_WAIT,
        };
        let rules = self
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| rule.validate().map_err(|e| e.within(i).within("rules")))
            .collect::<Result<_, _>>()?;
        let mut settings = Settings {
            on_limit: self.on_limit,
            max_wait,
            rules,
            scope: self.scope,
            shared_key: None,
        };
        // The layer's name in the shared state: what it limits, so
        // replicas running the same config meet in the same buckets.
        let identity = crate::shared::digest(&settings.describe());
        settings.shared_key = match self.scope {
            Scope::Session => None,
            Scope::Global | Scope::Server => Some(format!("rl:{identity}:all")),
            Scope::Principal => Some(format!("rl:{identity}:caller:")),
        };
        Ok(RateLimitLayer::new(settings))
    }
}

impl RuleConfig {
    /// Errors name the key inside the rule (`rate`).
    fn validate(&self) -> Result<Rule, ConfigError> {
        let matcher = match (&self.tool, &self.method) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::key(
                    "tool",
                    "a rule matches a tool or a method, not both \
                     (a tool rule already means method tools/call)",
                ))
            }
            (Some(p), None) => {
                Matcher::Tool(Pattern::new(p).map_err(|e| ConfigError::key("tool", e))?)
            }
            (None, Some(p)) => {
                Matcher::Method(Pattern::new(p).map_err(|e| ConfigError::key("method", e))?)
            }
            (None, None) => Matcher::Any,
        };
        let rate = Rate::parse(&self.rate).map_err(|e| ConfigError::key("rate", e))?;
        let burst = match self.burst {
            Some(0) => return Err(ConfigError::key("burst", "must be at least 1")),
            Some(b) => b,
            None => rate.count(),
        };
        Ok(Rule {
            matcher,
            direction: self.direction,
            rate,
            burst,
            bucket: Mutex::new(Bucket::new(rate, burst)),
        })
    }
}
