//! Loading the TOML configuration: read, expand `${VAR}`, parse (unknown
//! keys are errors), validate, and report every problem as
//! `file:line:col: message`.

mod console;
mod error;
mod expand;
mod file;
mod front;
mod front_oauth;
mod oauth;
mod place;
mod servers;
mod state;
mod telemetry;
mod upstream;
mod validate;

pub use console::{ConsoleConfig, OpenAt, SignInConfig, ADMIN_SCOPE};
pub use error::ConfigError;
pub use front::{parse_listen, BadListen, FrontConfig, Token};
pub use front_oauth::{FrontOAuth, Introspection, Network};
pub use oauth::{is_secure, ClientId, Grant, OAuthConfig, Resource};
pub(crate) use servers::{name_chars, MAX_NAME_LEN};
pub use servers::{GatewayConfig, ServerConfig};
pub use state::{StateConfig, DEFAULT_STATE_PREFIX, DEFAULT_STATE_TIMEOUT};
pub use telemetry::{shown_endpoint, Otlp, Telemetry, TelemetryConfig};
pub use upstream::{
    is_url, BadUrlUpstream, CommandConfig, Envelope, RestartPolicy, Transport, UpstreamConfig,
    UrlConfig,
};
pub(crate) use validate::{
    parse_duration, DEFAULT_MAX_BYTES_IN_FLIGHT, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_RESTARTS,
    DEFAULT_RESTART_BACKOFF, DEFAULT_SHUTDOWN_GRACE,
};

use crate::layers::Entry;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A checked configuration.
#[derive(Debug)]
pub struct Config {
    /// From `[upstream]`; the command line after `--` replaces it.
    pub upstream: Option<UpstreamConfig>,
    pub max_message_bytes: usize,
    /// Bytes of big messages in flight the whole process may hold (see
    /// `transport::budget`); at least `max_message_bytes`.
    pub max_bytes_in_flight: usize,
    pub shutdown_grace: Duration,
    /// `[front]`: serving the chain over HTTP.
    pub front: FrontConfig,
    /// `[telemetry]`: traces and metrics (off unless configured).
    pub telemetry: TelemetryConfig,
    /// `[console]`: the approval page (off unless configured).
    pub console: Option<ConsoleConfig>,
    /// `[state]`: what replicas share, on Redis (each process its own
    /// without it).
    pub state: Option<StateConfig>,
    /// `[servers.*]` and `[gateway]`: many servers behind one (instead of
    /// `[upstream]`).
    pub gateway: Option<GatewayConfig>,
    /// The layers, in file order: the first is outermost.
    pub(crate) chain: Vec<Entry>,
    /// The file this came from, for messages.
    pub path: Option<PathBuf>,
    /// `[proxy] watch_config`: reload when the file changes (SIGHUP
    /// reloads either way).
    pub watch_config: bool,
    /// Each table as written (variables expanded): what a reload compares.
    pub(crate) sources: Sources,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            upstream: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_bytes_in_flight: DEFAULT_MAX_BYTES_IN_FLIGHT,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            front: FrontConfig::default(),
            telemetry: TelemetryConfig::default(),
            console: None,
            state: None,
            gateway: None,
            chain: Vec::new(),
            path: None,
            watch_config: false,
            sources: Sources::default(),
        }
    }
}

impl Config {
    /// Reads and checks a config file, expanding `${VAR}` from our environment
    /// (and `${MCP_CHAIN_STATE_DIR}`, unset there, to the state directory).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_with(path, |_| None)
    }

    /// [`Config::load`], `unset` answering a variable our environment does
    /// not have (a check of a config that will run where it is set).
    pub fn load_with(
        path: &Path,
        unset: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut config = Self::from_toml_str(&text, &path.display().to_string(), |name| {
            use crate::platform::dirs;
            // The state directory is found in one place (which reads the
            // variable itself, an empty one as unset).
            if name == dirs::STATE_DIR_VAR {
                let dir = dirs::state_dir().ok()?;
                return dir.to_str().map(str::to_owned);
            }
            std::env::var(name).ok().or_else(|| unset(name))
        })?;
        config.path = Some(path.to_owned());
        Ok(config)
    }

    /// Checks config text; `origin` names it in messages, `env` answers `${VAR}`.
    pub fn from_toml_str(
        text: &str,
        origin: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let at = |offset: Option<usize>, text: &str, message: &str| match offset {
            Some(offset) => {
                let (line, col) = line_col(text, offset);
                format!("{origin}:{line}:{col}: {message}")
            }
            None => format!("{origin}: {message}"),
        };
        if let Some(message) = state::password_in_file(text) {
            return Err(ConfigError::Invalid {
                problems: vec![at(None, text, &message)],
            });
        }
        let expanded = expand::expand(text, env).map_err(|errors| ConfigError::Invalid {
            problems: errors
                .iter()
                .map(|(offset, message)| at(Some(*offset), text, message))
                .collect(),
        })?;
        let file: file::ConfigFile =
            toml::from_str(&expanded).map_err(|e| ConfigError::Invalid {
                problems: vec![at(e.span().map(|s| s.start), &expanded, e.message())],
            })?;
        let mut config =
            validate::validate(file, &expanded).map_err(|problems| ConfigError::Invalid {
                problems: problems
                    .iter()
                    .map(|(offset, message)| at(*offset, &expanded, message))
                    .collect(),
            })?;
        config.sources = Sources::of(&expanded);
        Ok(config)
    }

    /// Names of the layers, outermost first.
    pub fn layer_names(&self) -> Vec<&'static str> {
        self.chain.iter().map(|e| e.layer.name()).collect()
    }
}

/// 1-based line and column (in characters) of a byte offset.
/// The tables of a config as written, variables expanded: what a reload
/// compares to tell what changed (a layer whose table is the same keeps
/// its state; a changed `[upstream]` needs a restart).
#[derive(Clone, Default, PartialEq)]
pub(crate) struct Sources {
    pub(crate) upstream: Option<toml::Value>,
    pub(crate) proxy: Option<toml::Value>,
    pub(crate) front: Option<toml::Value>,
    pub(crate) telemetry: Option<toml::Value>,
    pub(crate) console: Option<toml::Value>,
    pub(crate) state: Option<toml::Value>,
    pub(crate) servers: Option<toml::Value>,
    pub(crate) gateway: Option<toml::Value>,
    /// One per `[[middleware]]` entry, in order.
    pub(crate) middleware: Vec<toml::Value>,
}

/// Not shown: the tables hold the config's secrets as written.
impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sources { .. }")
    }
}

impl Sources {
    /// Read from text that has already parsed and validated.
    fn of(expanded: &str) -> Self {
        let Ok(toml::Value::Table(mut table)) = expanded.parse::<toml::Value>() else {
            return Self::default();
        };
        let middleware = match table.remove("middleware") {
            Some(toml::Value::Array(entries)) => entries,
            _ => Vec::new(),
        };
        Self {
            upstream: table.remove("upstream"),
            proxy: table.remove("proxy"),
            front: table.remove("front"),
            telemetry: table.remove("telemetry"),
            console: table.remove("console"),
            state: table.remove("state"),
            servers: table.remove("servers"),
            gateway: table.remove("gateway"),
            middleware,
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests;
