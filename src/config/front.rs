//! `[front]`: serving the chain over HTTP (`--listen`). Only read when
//! mcp-chain listens; without `listen` (or `--listen`) it speaks stdio.
//!
//! Secure by default: loopback, Host and Origin checked against loopback
//! names, a cap on sessions; off loopback a bearer token is required
//! unless the operator says otherwise on the command line.

use super::front_oauth::{front_oauth, FrontOAuth, Network};
use super::validate::{parse_duration, Problem};
use serde::Deserialize;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// `[front]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FrontFile {
    listen: Option<String>,
    path: Option<String>,
    legacy_sse: Option<bool>,
    #[serde(default)]
    tokens: Vec<TokenFile>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    allowed_origins: Vec<String>,
    max_sessions: Option<usize>,
    max_sessions_per_principal: Option<usize>,
    max_connections: Option<usize>,
    session_idle: Option<String>,
    init_timeout: Option<String>,
    body_timeout: Option<String>,
    replica: Option<String>,
    public_url: Option<String>,
    #[serde(default)]
    trusted_proxies: Vec<String>,
    oauth: Option<super::front_oauth::FrontOAuthFile>,
    upstream_sessions: Option<String>,
    shared_pool: Option<usize>,
}

/// One `tokens` entry: the token, or a table naming it for the audit.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TokenFile {
    Plain(String),
    Named { name: String, token: String },
}

/// A bearer token and the name the audit knows it by.
#[derive(Clone)]
pub struct Token {
    /// As configured, or its position from 1.
    pub name: String,
    pub secret: String,
}

/// A checked `[front]`.
#[derive(Clone)]
pub struct FrontConfig {
    /// Where to listen; `None`: speak stdio.
    pub listen: Option<SocketAddr>,
    /// The Streamable HTTP endpoint.
    pub path: String,
    /// Serve `/sse` and `/messages` for 2024-11-05 clients.
    pub legacy_sse: bool,
    /// Bearer tokens, any of which lets a request in. Never logged.
    pub tokens: Vec<Token>,
    /// Host names (without port) a request may name; empty: loopback
    /// names when listening on loopback, any otherwise.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) a browser request may come from;
    /// loopback origins are allowed when listening on loopback.
    pub allowed_origins: Vec<String>,
    pub max_sessions: usize,
    /// Sessions one caller (an OAuth principal, or a static token) may
    /// hold at once; across every replica with `[state]`.
    pub max_sessions_per_principal: Option<usize>,
    /// HTTP connections open at once; past it a new one is refused (503).
    pub max_connections: usize,
    /// A session with no request and no open stream for this long is ended.
    pub session_idle: Duration,
    /// A session whose client never sends `notifications/initialized`
    /// within this is ended.
    pub init_timeout: Duration,
    /// A request's body must have arrived, all of it, within this.
    pub body_timeout: Duration,
    /// This replica's name, the prefix of its session ids, so that a load
    /// balancer in front of several can send a session's requests to the
    /// replica that holds it.
    pub replica: Option<String>,
    /// The endpoint's URL as clients use it (the resource's identifier).
    pub public_url: Option<url::Url>,
    /// Reverse proxies whose `X-Forwarded-Proto`/`-Host` are believed.
    pub trusted_proxies: Vec<Network>,
    /// The front as an OAuth resource server.
    pub oauth: Option<Box<FrontOAuth>>,
    /// 2025-era sessions share a pool of server connections (`"shared"`)
    /// rather than each starting its own; this many in the pool.
    pub shared_pool: Option<usize>,
}

pub(crate) const DEFAULT_PATH: &str = "/mcp";
/// Server connections in a shared pool unless `shared_pool` says.
pub(crate) const DEFAULT_SHARED_POOL: usize = 2;
pub(crate) const DEFAULT_MAX_SESSIONS: usize = 64;
/// Room for every session's stream and a few requests each, far below
/// what a process's descriptors allow (1024 is a common soft limit).
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 512;
pub(crate) const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
pub(crate) const DEFAULT_INIT_TIMEOUT: Duration = Duration::from_secs(30);
/// Long enough for `max_message_bytes` over a slow link, short enough
/// that a body trickled a byte a minute does not hold a connection.
pub(crate) const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for FrontConfig {
    fn default() -> Self {
        Self {
            listen: None,
            path: DEFAULT_PATH.to_owned(),
            legacy_sse: true,
            tokens: Vec::new(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            session_idle: DEFAULT_SESSION_IDLE,
            init_timeout: DEFAULT_INIT_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            replica: None,
            public_url: None,
            trusted_proxies: Vec::new(),
            oauth: None,
            shared_pool: None,
        }
    }
}

impl fmt::Debug for FrontConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrontConfig")
            .field("listen", &self.listen)
            .field("path", &self.path)
            .field("legacy_sse", &self.legacy_sse)
            .field("tokens", &format_args!("{} (not shown)", self.tokens.len()))
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_sessions", &self.max_sessions)
            .field(
                "max_sessions_per_principal",
                &self.max_sessions_per_principal,
            )
            .field("max_connections", &self.max_connections)
            .field("session_idle", &self.session_idle)
            .field("init_timeout", &self.init_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("replica", &self.replica)
            .field(
                "public_url",
                &self.public_url.as_ref().map(url::Url::as_str),
            )
            .field("trusted_proxies", &self.trusted_proxies)
            .field("oauth", &self.oauth)
            .field("shared_pool", &self.shared_pool)
            .finish()
    }
}

/// An address to listen on that is not one, as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an address to listen on (127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080)")]
pub struct BadListen(pub String);

/// Parses `host:port` (an IPv6 host in brackets).
pub fn parse_listen(text: &str) -> Result<SocketAddr, BadListen> {
    text.parse().map_err(|_| BadListen(text.to_owned()))
}

pub(super) fn front(file: FrontFile, problems: &mut Vec<Problem>) -> FrontConfig {
    let mut front = FrontConfig::default();
    let mut problem = |message: String| problems.push((None, format!("front.{message}")));
    if let Some(listen) = &file.listen {
        match parse_listen(listen) {
            Ok(addr) => front.listen = Some(addr),
            Err(e) => problem(format!("listen: {e}")),
        }
    }
    if let Some(path) = file.path {
        if !path.starts_with('/') || path.contains(['?', '#']) || path == "/sse" {
            problem(format!(
                "path: {path:?} must start with / and name a path other than /sse, without ? or #"
            ));
        }
        front.path = path;
    }
    front.legacy_sse = file.legacy_sse.unwrap_or(true);
    for (n, token) in file.tokens.into_iter().enumerate() {
        let (name, secret) = match token {
            TokenFile::Plain(secret) => ((n + 1).to_string(), secret),
            TokenFile::Named { name, token } => (name, token),
        };
        if secret.len() < 16 || secret.chars().any(|c| !c.is_ascii_graphic()) {
            problem(format!(
                "tokens[{n}]: a token must be at least 16 visible ASCII characters (is ${{VAR}} set?)"
            ));
        }
        front.tokens.push(Token { name, secret });
    }
    front.allowed_hosts = file
        .allowed_hosts
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    for origin in &file.allowed_origins {
        if !(origin.starts_with("http://") || origin.starts_with("https://"))
            || origin.ends_with('/')
        {
            problem(format!(
                "allowed_origins: {origin:?} must be scheme://host[:port], as a browser sends it"
            ));
        }
    }
    front.allowed_origins = file.allowed_origins;
    match file.max_sessions {
        Some(0) => problem("max_sessions: must be at least 1".to_owned()),
        Some(n) => front.max_sessions = n,
        None => {}
    }
    match file.max_sessions_per_principal {
        Some(0) => problem("max_sessions_per_principal: must be at least 1".to_owned()),
        n => front.max_sessions_per_principal = n,
    }
    match file.max_connections {
        Some(0) => problem("max_connections: must be at least 1".to_owned()),
        Some(n) => front.max_connections = n,
        None => {}
    }
    if let Some(replica) = file.replica {
        let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        if replica.is_empty() || replica.len() > 16 || !replica.bytes().all(plain) {
            problem(format!(
                "replica: {replica:?} must be 1 to 16 lowercase letters and digits"
            ));
        }
        front.replica = Some(replica);
    }
    let mut duration = |key: &str, text: Option<String>, into: &mut Duration| match text
        .as_deref()
        .map(parse_duration)
    {
        Some(Ok(d)) if !d.is_zero() => *into = d,
        Some(Ok(_)) => problem(format!("{key}: must be more than zero")),
        Some(Err(e)) => problem(format!("{key}: {e}")),
        None => {}
    };
    duration("session_idle", file.session_idle, &mut front.session_idle);
    duration("init_timeout", file.init_timeout, &mut front.init_timeout);
    duration("body_timeout", file.body_timeout, &mut front.body_timeout);
    if let Some(text) = file.public_url {
        match url::Url::parse(&text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.fragment().is_none() => {
                front.public_url = Some(url);
            }
            _ => problem(format!(
                "public_url: {text:?} must be the endpoint's http(s) URL, as clients use it"
            )),
        }
    }
    for proxy in &file.trusted_proxies {
        match Network::parse(proxy) {
            Some(network) => front.trusted_proxies.push(network),
            None => problem(format!(
                "trusted_proxies: {proxy:?} is not an address or a network (10.0.0.0/8)"
            )),
        }
    }
    match (file.upstream_sessions.as_deref(), file.shared_pool) {
        (None | Some("per-session"), None) => {}
        (None | Some("per-session"), Some(_)) => {
            problem("shared_pool: only with upstream_sessions = \"shared\"".into())
        }
        (Some("shared"), Some(0)) => problem("shared_pool: must be at least 1".into()),
        (Some("shared"), n) => front.shared_pool = Some(n.unwrap_or(DEFAULT_SHARED_POOL)),
        (Some(other), _) => problem(format!(
            "upstream_sessions: {other:?} is not \"per-session\" or \"shared\""
        )),
    }
    if let Some(oauth) = file.oauth {
        front.oauth = front_oauth(oauth, front.public_url.as_ref(), problems).map(Box::new);
    }
    front
}
