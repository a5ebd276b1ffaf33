//! `[state]`: where replicas behind one load balancer keep what they must
//! agree on (Redis or Valkey). Without it every process keeps its own, as
//! before. The URL may carry a password (from `${ENV}`): it is never shown,
//! logged or written by `check` ([`StateConfig::shown_url`]).

use super::validate::{parse_duration, Problem};
use mcp_chain_middleware::shared::Fallback;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

/// `[state]` as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StateFile {
    url: Option<String>,
    prefix: Option<String>,
    on_unavailable: Option<String>,
    timeout: Option<String>,
    ca_file: Option<String>,
    key: Option<String>,
}

// Written by hand: the URL and the key are secrets.
impl std::fmt::Debug for StateFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateFile").finish_non_exhaustive()
    }
}

/// How long one ask of the store may take before it counts as unavailable.
pub const DEFAULT_STATE_TIMEOUT: Duration = Duration::from_millis(50);

/// What every key starts with unless `prefix` says otherwise.
pub const DEFAULT_STATE_PREFIX: &str = "mcp-chain:";

/// `[state]`, checked.
#[derive(Clone, PartialEq)]
pub struct StateConfig {
    /// `redis://` or `rediss://` (TLS), credentials and all.
    pub url: Url,
    pub prefix: String,
    pub fallback: Fallback,
    pub timeout: Duration,
    /// PEM CA certificates trusted for `rediss://` instead of the platform's.
    pub ca_file: Option<PathBuf>,
    /// Encrypts secrets kept in the store (at least 32 bytes).
    pub key: Option<String>,
}

impl StateConfig {
    /// The URL as it may be shown: scheme, host, port and database, never
    /// a user name or password.
    pub fn shown_url(&self) -> String {
        let host = self.url.host_str().unwrap_or("");
        let port = self.url.port().map(|p| format!(":{p}")).unwrap_or_default();
        format!("{}://{host}{port}{}", self.url.scheme(), self.url.path())
    }
}

impl std::fmt::Debug for StateConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateConfig")
            .field("url", &self.shown_url())
            .field("prefix", &self.prefix)
            .field("fallback", &self.fallback)
            .field("timeout", &self.timeout)
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

/// A password written into `[state] url` in the config file itself
/// (`raw`, before `${VAR}` is expanded) rather than taken from the
/// environment: refused, so a config can be shared, checked in or shown
/// without giving Redis away. The password is never repeated.
pub(super) fn password_in_file(raw: &str) -> Option<String> {
    let value: toml::Value = toml::from_str(raw).ok()?;
    let url = value.get("state")?.get("url")?.as_str()?;
    let rest = url.split_once("://")?.1;
    let head = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    let password = head.rsplit_once('@')?.0.split_once(':')?.1;
    let name = password
        .strip_prefix("${")
        .and_then(|p| p.strip_suffix('}'));
    let from_environment =
        password.is_empty() || name.is_some_and(|n| !n.is_empty() && !n.contains(['$', '{', '}']));
    (!from_environment).then(|| {
        "state.url: a password is written in the file; take it from the environment instead (redis://:${REDIS_PASSWORD}@host:6379/0)".to_owned()
    })
}

pub(super) fn state(file: Option<StateFile>, problems: &mut Vec<Problem>) -> Option<StateConfig> {
    let file = file?;
    let mut problem = |message: String| problems.push((None, format!("state.{message}")));
    let url = match file.url.as_deref().map(Url::parse) {
        None => {
            problem(
                "url: the Redis to keep the shared state in is needed (redis://host:6379/0)".into(),
            );
            return None;
        }
        // The text is not repeated: it may hold a password.
        Some(Err(e)) => {
            problem(format!("url: not a URL ({e})"));
            return None;
        }
        Some(Ok(url)) if !matches!(url.scheme(), "redis" | "rediss") => {
            problem(format!(
                "url: {}:// is neither redis:// nor rediss://",
                url.scheme()
            ));
            return None;
        }
        Some(Ok(url)) => url,
    };
    let fallback = match file.on_unavailable.as_deref() {
        None | Some("refuse") => Fallback::Refuse,
        Some("local") => Fallback::Local,
        Some(other) => {
            problem(format!(
                "on_unavailable: {other:?} is neither \"refuse\" nor \"local\""
            ));
            return None;
        }
    };
    let timeout = match file.timeout.as_deref().map(parse_duration) {
        None => DEFAULT_STATE_TIMEOUT,
        Some(Ok(t)) if !t.is_zero() => t,
        Some(Ok(_)) => {
            problem("timeout: must be more than zero".into());
            return None;
        }
        Some(Err(e)) => {
            problem(format!("timeout: {e}"));
            return None;
        }
    };
    let prefix = file
        .prefix
        .unwrap_or_else(|| DEFAULT_STATE_PREFIX.to_owned());
    if prefix.is_empty() {
        problem("prefix: an empty prefix would let mcp-chain's keys meet anyone's".into());
        return None;
    }
    if file.ca_file.is_some() && url.scheme() != "rediss" {
        problem("ca_file: only a rediss:// (TLS) url uses it".into());
        return None;
    }
    if file.key.as_ref().is_some_and(|k| k.len() < 32) {
        problem("key: at least 32 bytes (a random one: openssl rand -base64 32)".into());
        return None;
    }
    Some(StateConfig {
        url,
        prefix,
        fallback,
        timeout,
        ca_file: file.ca_file.map(PathBuf::from),
        key: file.key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<StateConfig, Vec<Problem>> {
        let file: StateFile = toml::from_str(text).expect("toml");
        let mut problems = Vec::new();
        state(Some(file), &mut problems).ok_or(problems)
    }

    #[test]
    fn the_url_is_shown_without_its_password() {
        let config = parsed("url = \"redis://:hunter2@cache:6380/1\"").expect("valid");
        assert_eq!(config.shown_url(), "redis://cache:6380/1");
        assert!(!format!("{config:?}").contains("hunter2"));
        assert_eq!(
            (config.fallback, config.timeout),
            (Fallback::Refuse, DEFAULT_STATE_TIMEOUT)
        );
    }

    #[test]
    fn a_password_is_taken_from_the_environment_only() {
        let config = |url: &str| format!("[state]\nurl = \"{url}\"\n");
        for from_env in [
            "redis://cache:6379/0",
            "redis://:${REDIS_PASSWORD}@cache:6379/0",
            "rediss://app:${PW}@cache/0",
            "redis://app@cache/0",
        ] {
            assert_eq!(password_in_file(&config(from_env)), None, "{from_env}");
        }
        for written in [
            "redis://:hunter2@cache:6379/0",
            "redis://app:hunter2@cache/0",
            "redis://:${PW}x@cache/0",
            "redis://:pre${PW}@cache/0",
        ] {
            let problem = password_in_file(&config(written)).expect(written);
            assert!(problem.starts_with("state.url:") && !problem.contains("hunter2"));
        }
    }

    #[test]
    fn problems_name_the_key_and_never_repeat_the_url() {
        let problems = parsed("url = \"http://:hunter2@cache\"").unwrap_err();
        assert!(
            problems[0].1.starts_with("state.url: http://"),
            "{problems:?}"
        );
        assert!(!problems[0].1.contains("hunter2"));
        let problems = parsed("url = \"redis://cache\"\non_unavailable = \"maybe\"").unwrap_err();
        assert!(
            problems[0].1.starts_with("state.on_unavailable"),
            "{problems:?}"
        );
        let problems = parsed("url = \"redis://cache\"\nkey = \"short\"").unwrap_err();
        assert!(problems[0].1.starts_with("state.key"), "{problems:?}");
        let problems = parsed("url = \"redis://cache\"\nca_file = \"ca.pem\"").unwrap_err();
        assert!(problems[0].1.starts_with("state.ca_file"), "{problems:?}");
    }
}
