//! Changing the policy without restarting: on SIGHUP (or, with `[proxy]
//! watch_config = true`, when the file changes) the config is read and
//! checked exactly as `mcp-chain check` does, and only then taken up.
//!
//! - Invalid: nothing changes; the problems (file:line:col) go to stderr
//!   and, as an event line, to every audit file the running chain writes.
//!   The next valid save applies.
//! - Something that needs a restart changed (`[upstream]`, `[proxy]`
//!   limits, `[front]` but its tokens, allowed hosts and origins,
//!   `[telemetry]`, `[state]`): refused the same way, saying what; nothing is
//!   applied, so what runs is always one config. So is a change that
//!   would leave a front off loopback open to anyone (fail closed).
//! - Valid: the front's checks are published (they apply to the requests
//!   after), and a new [`Policy`]. An entry whose table is the
//!   same, at the same place, is the running one (its state kept); any
//!   other starts fresh. Every session takes it up between messages (see
//!   the relay's `build.rs`); requests in flight finish in the chain they
//!   started in; clients are told to list again when a layer that shapes
//!   listings changed.
//!
//! - `triggers`: SIGHUP and the file watcher, debounced.

mod triggers;

pub(crate) use triggers::Triggers;

use crate::config::{Config, ConfigError, FrontConfig, Sources};
use crate::layers::Policy;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;

/// The running config's tables and the policy every session follows.
pub(crate) struct Reloader {
    path: PathBuf,
    running: Sources,
    policy: watch::Sender<Arc<Policy>>,
    front: watch::Sender<Arc<FrontConfig>>,
    /// Where the front listens (the file's, or `--listen`'s), if it does.
    listen: Option<SocketAddr>,
}

/// What the running parts follow: the layers, and the front's checks.
pub(crate) struct Followed {
    pub(crate) policy: watch::Receiver<Arc<Policy>>,
    pub(crate) front: watch::Receiver<Arc<FrontConfig>>,
}

/// The `[front]` keys a reload applies live.
const LIVE_FRONT_KEYS: [&str; 4] = ["tokens", "allowed_hosts", "allowed_origins", "oauth"];

/// Why a reload changed nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    #[error("{0}")]
    Invalid(#[from] ConfigError),
    #[error("{0} changed; restart mcp-chain to apply it (nothing was applied)")]
    NeedsRestart(&'static str),
    /// Reading the config stopped short (a panic): said without its
    /// message, which could quote the file, on its way to the audit.
    #[error("reading the config stopped unexpectedly; nothing was applied")]
    Failed,
    #[error("front.tokens: the front listens on {0}, off loopback, and would be open to anyone without a token; nothing was applied (restart with --allow-unauthenticated to mean it)")]
    Exposed(SocketAddr),
}

/// What a reload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Applied {
    /// Layers that kept their state.
    pub(crate) kept: usize,
    /// Layers new or changed: fresh state.
    pub(crate) fresh: usize,
}

impl Reloader {
    /// For a config read from a file; `None` without one (nothing to read
    /// again).
    pub(crate) fn new(config: &Config) -> Option<(Self, Followed)> {
        let path = config.path.clone()?;
        let (policy, followed) = watch::channel(Arc::new(Policy::of(&config.chain)));
        let (front, front_followed) = watch::channel(Arc::new(config.front.clone()));
        let reloader = Self {
            path,
            running: config.sources.clone(),
            policy,
            front,
            listen: config.front.listen,
        };
        let followed = Followed {
            policy: followed,
            front: front_followed,
        };
        Some((reloader, followed))
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Reads the file again and, if it is valid and changes only what can
    /// change live, publishes the policy it names (what [`Self::run`] does
    /// on each trigger, the reading on a thread of its own).
    #[cfg(test)]
    pub(crate) fn reload(&mut self) -> Result<Applied, Refused> {
        let config = Config::load(&self.path)?;
        self.apply(config)
    }

    /// Publishes what `config` names, if it changes only what can change
    /// live.
    fn apply(&mut self, config: Config) -> Result<Applied, Refused> {
        if let Some(what) = needs_restart(&self.running, &config.sources) {
            return Err(Refused::NeedsRestart(what));
        }
        let mut front = config.front.clone();
        front.listen = self.listen;
        let open = front.tokens.is_empty() && front.oauth.is_none();
        if let Some(listen) = self.listen.filter(|l| open && !l.ip().is_loopback()) {
            if self.running.front != config.sources.front {
                return Err(Refused::Exposed(listen));
            }
        }
        let running = self.policy.borrow().clone();
        let mut applied = Applied { kept: 0, fresh: 0 };
        let entries = config
            .chain
            .into_iter()
            .enumerate()
            .map(|(n, entry)| {
                let same = self.running.middleware.get(n) == config.sources.middleware.get(n);
                match running.entries.get(n).filter(|_| same) {
                    Some(kept) => {
                        applied.kept += 1;
                        kept.clone()
                    }
                    None => {
                        applied.fresh += 1;
                        Arc::new(entry)
                    }
                }
            })
            .collect();
        if self.running.front != config.sources.front {
            self.front.send_replace(Arc::new(front));
        }
        self.running = config.sources;
        self.policy.send_replace(Arc::new(Policy { entries }));
        Ok(applied)
    }

    /// Writes `fields` as an event line to every audit file the running
    /// chain writes.
    fn audit(&self, fields: &[(&str, &str)]) {
        for entry in &self.policy.borrow().entries {
            if let crate::chain::AnyLayer::Audit(audit) = &entry.layer {
                if let Err(e) = audit.event("config_reload", fields) {
                    tracing::warn!(error = %e, "the reload's audit line was not written");
                }
            }
        }
    }

    /// Reloads on every trigger, as long as mcp-chain runs.
    pub(crate) async fn run(mut self, mut triggers: Triggers) {
        let file = self.path.display().to_string();
        loop {
            triggers.next().await;
            // Read and checked on a thread of its own: compiling a chain
            // (scan's rules, schemas) takes tens of milliseconds, and the
            // sessions' one thread keeps relaying meanwhile.
            let path = self.path.clone();
            let loaded = match tokio::task::spawn_blocking(move || Config::load(&path)).await {
                Ok(loaded) => loaded.map_err(Refused::from),
                Err(_) => Err(Refused::Failed),
            };
            match loaded.and_then(|config| self.apply(config)) {
                Ok(Applied { kept, fresh }) => {
                    tracing::warn!(config = %file, kept, fresh, "config reloaded: {fresh} layers new or changed, {kept} kept with their state");
                    let (kept, fresh) = (kept.to_string(), fresh.to_string());
                    self.audit(&[("outcome", "applied"), ("kept", &kept), ("fresh", &fresh)]);
                }
                Err(why) => {
                    // Each problem with its place in the file.
                    tracing::error!(config = %file, "config not reloaded: {why}");
                    self.audit(&[("outcome", "refused"), ("error", &why.to_string())]);
                }
            }
        }
    }
}

/// What changed that needs a restart, if anything: the server, the relay's
/// limits, the front, telemetry. `watch_config` may change live.
fn needs_restart(running: &Sources, next: &Sources) -> Option<&'static str> {
    if running.upstream != next.upstream {
        Some("[upstream]")
    } else if running.servers != next.servers || running.gateway != next.gateway {
        Some("[servers] or [gateway]")
    } else if without(&running.proxy, &["watch_config"]) != without(&next.proxy, &["watch_config"])
    {
        Some("[proxy]")
    } else if without(&running.front, &LIVE_FRONT_KEYS) != without(&next.front, &LIVE_FRONT_KEYS) {
        Some("[front]")
    } else if running.telemetry != next.telemetry {
        Some("[telemetry]")
    } else if running.console != next.console {
        Some("[console]")
    } else if running.state != next.state {
        Some("[state]")
    } else {
        None
    }
}

/// `table` without `keys` (an empty table is none).
fn without(table: &Option<toml::Value>, keys: &[&str]) -> Option<toml::Value> {
    let mut table = table.clone();
    if let Some(toml::Value::Table(t)) = &mut table {
        for key in keys {
            t.remove(*key);
        }
    }
    table.filter(|t| t.as_table().is_none_or(|t| !t.is_empty()))
}

#[cfg(test)]
mod tests;
