//! `[upstream]`: the server mcp-chain relays to, either a command it starts
//! (a child process speaking stdio) or a URL it reaches over HTTP. One or
//! the other, never both, and no key that only the other one reads: a
//! config that says `restart` for a URL, or `headers` for a command, is
//! told so rather than half-obeyed.

use super::file::UpstreamFile;
use super::oauth::{oauth, OAuthConfig};
use super::validate::Problem;
use super::{parse_duration, DEFAULT_MAX_RESTARTS, DEFAULT_RESTART_BACKOFF};
use hyper::header::{HeaderName, HeaderValue};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

/// The server: a command or a URL.
#[derive(Debug, Clone)]
pub enum UpstreamConfig {
    Command(CommandConfig),
    Url(UrlConfig),
}

/// A server mcp-chain starts as its child.
#[derive(Debug, Clone, Default)]
pub struct CommandConfig {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub restart: RestartPolicy,
}

/// What to do when the server dies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Restart after a failure (non-zero exit, signal, closed output).
    pub on_failure: bool,
    pub max_restarts: u32,
    pub backoff: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            on_failure: false,
            max_restarts: DEFAULT_MAX_RESTARTS,
            backoff: DEFAULT_RESTART_BACKOFF,
        }
    }
}

/// A server at a URL.
#[derive(Clone)]
pub struct UrlConfig {
    pub url: Url,
    pub transport: Transport,
    /// Sent with every request (credentials, mostly): never logged.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// A PEM file of CA certificates trusted besides the platform's.
    pub ca_file: Option<PathBuf>,
    /// WebSocket only: how each message is wrapped in a frame.
    pub envelope: Envelope,
    /// How to log in when the server asks for OAuth (boxed: most URL
    /// upstreams never need it).
    pub oauth: Box<OAuthConfig>,
}

/// How a WebSocket frame holds a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Envelope {
    /// The message is the frame's text.
    #[default]
    None,
    /// `{"session_id": …, "type": "mcp", "payload": <message>}`, as device
    /// platforms wrap MCP among their other frames.
    McpPayload,
}

/// How a URL upstream is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP, or legacy HTTP+SSE when the first POST is answered
    /// 400, 404 or 405 (a 2024-era server).
    Auto,
    StreamableHttp,
    /// Legacy HTTP+SSE (2024-11-05): the URL is the SSE stream's.
    Sse,
    /// One message per text frame; what `auto` is for a ws:// URL.
    WebSocket,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::StreamableHttp => "streamable-http",
            Self::Sse => "sse",
            Self::WebSocket => "websocket",
        }
    }
}

/// Header values are credentials: only the names are shown.
impl fmt::Debug for UrlConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("UrlConfig")
            .field("url", &self.url.as_str())
            .field("transport", &self.transport)
            .field("headers", &names)
            .field("ca_file", &self.ca_file)
            .field("envelope", &self.envelope)
            .field("oauth", &self.oauth)
            .finish()
    }
}

/// Why a URL upstream, or one of its headers, cannot be used. A header's
/// value is a credential: no variant holds one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadUrlUpstream {
    #[error("{text:?} is not a URL: {why}")]
    NotAUrl { text: String, why: url::ParseError },
    #[error("{url}: scheme {scheme:?} is not http, https, ws or wss")]
    Scheme { url: String, scheme: String },
    /// A `--header` without a colon: its first characters, the rest hidden.
    #[error("--header {0:?}: expected NAME: VALUE")]
    HeaderLine(String),
    #[error("{0:?} is not a header name")]
    HeaderName(String),
    #[error("the value of header {0} is not a valid header value")]
    HeaderValue(String),
}

impl UrlConfig {
    /// A URL upstream with the defaults, or why `url` cannot be one.
    pub fn new(text: &str) -> Result<Self, BadUrlUpstream> {
        let url = Url::parse(text).map_err(|why| BadUrlUpstream::NotAUrl {
            text: text.to_owned(),
            why,
        })?;
        let transport = match url.scheme() {
            "http" | "https" => Transport::Auto,
            "ws" | "wss" => Transport::WebSocket,
            other => {
                return Err(BadUrlUpstream::Scheme {
                    url: url.to_string(),
                    scheme: other.to_owned(),
                })
            }
        };
        Ok(Self {
            url,
            transport,
            headers: Vec::new(),
            ca_file: None,
            envelope: Envelope::None,
            oauth: Box::default(),
        })
    }

    /// Adds a header given as `NAME: VALUE` (the command line's `--header`).
    pub fn add_header_line(&mut self, line: &str) -> Result<(), BadUrlUpstream> {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| BadUrlUpstream::HeaderLine(redacted(line)))?;
        self.add_header(name.trim(), value.trim())
    }

    pub fn add_header(&mut self, name: &str, value: &str) -> Result<(), BadUrlUpstream> {
        let name =
            HeaderName::try_from(name).map_err(|_| BadUrlUpstream::HeaderName(name.to_owned()))?;
        let mut value = HeaderValue::try_from(value)
            .map_err(|_| BadUrlUpstream::HeaderValue(name.to_string()))?;
        value.set_sensitive(true);
        self.headers.push((name, value));
        Ok(())
    }
}

/// A `NAME: VALUE` line with the value hidden.
fn redacted(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) => format!("{name}: …"),
        None => line.chars().take(16).collect::<String>() + "…",
    }
}

/// Whether a command line's only word names a URL upstream.
pub fn is_url(word: &str) -> bool {
    ["http://", "https://", "ws://", "wss://"]
        .iter()
        .any(|scheme| {
            word.len() > scheme.len() && word[..scheme.len()].eq_ignore_ascii_case(scheme)
        })
}

pub(super) fn upstream(file: UpstreamFile, problems: &mut Vec<Problem>) -> Option<UpstreamConfig> {
    let mut problem = |message: String| problems.push((None, format!("upstream.{message}")));
    match (file.command, file.url) {
        (Some(_), Some(_)) => {
            problem("command, upstream.url: give one or the other (a command to start, or a URL to reach)".into());
            None
        }
        (None, None) => {
            problem(
                "command or upstream.url is needed: the server to start, or the URL to reach"
                    .into(),
            );
            None
        }
        (Some(command), None) => {
            for (key, set) in [
                ("transport", file.transport.is_some()),
                ("headers", !file.headers.is_empty()),
                ("ca_file", file.ca_file.is_some()),
                ("envelope", file.envelope.is_some()),
                ("oauth", file.oauth.is_some()),
            ] {
                if set {
                    problem(format!("{key}: only for a URL upstream (upstream.url)"));
                }
            }
            let mut restart = RestartPolicy::default();
            match file.restart.as_deref() {
                None | Some("never") => {}
                Some("on-failure") => restart.on_failure = true,
                Some(other) => problem(format!(
                    "restart: {other:?} is not \"never\" or \"on-failure\""
                )),
            }
            if let Some(n) = file.max_restarts {
                restart.max_restarts = n;
            }
            match file.restart_backoff.as_deref().map(parse_duration) {
                None => {}
                Some(Ok(d)) => restart.backoff = d,
                Some(Err(e)) => problem(format!("restart_backoff: {e}")),
            }
            Some(UpstreamConfig::Command(CommandConfig {
                command,
                args: file.args.unwrap_or_default(),
                env: file.env.unwrap_or_default(),
                cwd: file.cwd.map(PathBuf::from),
                restart,
            }))
        }
        (None, Some(url)) => {
            for (key, set) in [
                ("args", file.args.is_some()),
                ("env", file.env.is_some()),
                ("cwd", file.cwd.is_some()),
                ("restart", file.restart.is_some()),
                ("max_restarts", file.max_restarts.is_some()),
                ("restart_backoff", file.restart_backoff.is_some()),
            ] {
                if set {
                    problem(format!(
                        "{key}: only for a command upstream (upstream.command)"
                    ));
                }
            }
            let mut config = match UrlConfig::new(&url) {
                Ok(config) => config,
                Err(e) => {
                    problem(format!("url: {e}"));
                    return None;
                }
            };
            let websocket = config.transport == Transport::WebSocket;
            match (file.transport.as_deref(), websocket) {
                (None | Some("auto"), _) | (Some("websocket"), true) => {}
                (Some("streamable-http"), false) => config.transport = Transport::StreamableHttp,
                (Some("sse"), false) => config.transport = Transport::Sse,
                (Some(t @ ("streamable-http" | "sse")), true) => {
                    problem(format!("transport: {t:?} needs an http(s) URL, not {}", config.url.scheme()));
                }
                (Some("websocket"), false) => {
                    problem("transport: \"websocket\" needs a ws:// or wss:// URL".into());
                }
                (Some(other), _) => problem(format!(
                    "transport: {other:?} is not \"auto\", \"streamable-http\", \"sse\" or \"websocket\""
                )),
            }
            match file.envelope.as_deref() {
                None | Some("none") => {}
                Some("mcp-payload") if websocket => config.envelope = Envelope::McpPayload,
                Some("mcp-payload") => problem(
                    "envelope: only for a WebSocket upstream (a ws:// or wss:// URL)".into(),
                ),
                Some(other) => problem(format!(
                    "envelope: {other:?} is not \"none\" or \"mcp-payload\""
                )),
            }
            for (name, value) in &file.headers {
                if let Err(e) = config.add_header(name, value) {
                    problem(format!("headers: {e}"));
                }
            }
            config.ca_file = file.ca_file.map(PathBuf::from);
            if let Some(file) = file.oauth {
                config.oauth = Box::new(oauth(file, problems));
            }
            Some(UpstreamConfig::Url(config))
        }
    }
}
