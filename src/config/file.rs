//! The TOML file as written: a serde mirror, checked for unknown keys.
//! Meaning is given to it in `validate.rs`.

pub(crate) use crate::layers::MiddlewareFile;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    pub(crate) upstream: Option<UpstreamFile>,
    #[serde(default)]
    pub(crate) proxy: ProxyFile,
    #[serde(default)]
    pub(crate) front: super::front::FrontFile,
    pub(crate) telemetry: Option<super::telemetry::TelemetryFile>,
    pub(crate) console: Option<super::console::ConsoleFile>,
    pub(crate) state: Option<super::state::StateFile>,
    /// `[servers.NAME]`: each an upstream with its prefix and its chain,
    /// read in `servers.rs` (the keys of `[upstream]` and a few more).
    pub(crate) servers: Option<toml::Table>,
    pub(crate) gateway: Option<super::servers::GatewayFile>,
    #[serde(default)]
    pub(crate) middleware: Vec<toml::Spanned<MiddlewareFile>>,
}

/// `[upstream]`: `command` (and what a child needs) or `url` (and what a
/// request needs); which keys go with which is checked in `upstream.rs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpstreamFile {
    pub(crate) command: Option<String>,
    pub(crate) args: Option<Vec<String>>,
    pub(crate) env: Option<BTreeMap<String, String>>,
    pub(crate) cwd: Option<String>,
    /// "never" (default) or "on-failure".
    pub(crate) restart: Option<String>,
    /// Restarts allowed before giving up (a server that stays up for a
    /// minute earns its count back).
    pub(crate) max_restarts: Option<u32>,
    /// Wait before the first restart; doubles each time, up to 30s.
    pub(crate) restart_backoff: Option<String>,
    /// The server's URL (http or https).
    pub(crate) url: Option<String>,
    /// "auto" (default), "streamable-http", "sse" or "websocket".
    pub(crate) transport: Option<String>,
    /// WebSocket only: "none" (default) or "mcp-payload".
    pub(crate) envelope: Option<String>,
    /// Sent with every request to the URL.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// PEM file of CA certificates to trust besides the platform's.
    pub(crate) ca_file: Option<String>,
    /// `[upstream.oauth]`: how to log in where the server asks for OAuth.
    pub(crate) oauth: Option<super::oauth::OAuthFile>,
}

/// Settings of the relay itself.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProxyFile {
    /// Largest message accepted on either pipe, in bytes.
    pub(crate) max_message_bytes: Option<u64>,
    /// Bytes of big messages the whole process may hold at once.
    pub(crate) max_bytes_in_flight: Option<u64>,
    /// How long to wait at shutdown for answers still owed, then for the
    /// server to exit ("250ms", "5s").
    pub(crate) shutdown_grace: Option<String>,
    /// Reload the config when the file (or one it names) changes.
    pub(crate) watch_config: Option<bool>,
}
