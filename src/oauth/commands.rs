//! `mcp-chain login URL`, `logout URL` and `auth status`: the tokens a
//! person manages by hand. What they print goes to stdout (it is the
//! command's output, not the protocol channel); the tokens themselves are
//! never printed.
//!
//! With `[state]` and its `key` in the config, they work on the tokens
//! every replica shares in Redis (a login there is every replica's, a
//! logout ends it for all); Redis out of reach is then an error, whatever
//! `on_unavailable` says: a person asked to change the shared tokens, and
//! this machine's file is not them.

use super::challenge::Challenge;
use super::error::{shown, OAuthError};
use super::fetch::Fetch;
use super::kept::Kept;
use super::login::{login, Ask};
use super::store::{self, now_secs, Entry};
use crate::config::{Config, OAuthConfig, UpstreamConfig};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use url::Url;

/// `[upstream.oauth]` and `ca_file` of the config, when its upstream is
/// the server named; else the defaults.
fn settings(config: &Config, server: &Url) -> (OAuthConfig, Option<std::path::PathBuf>) {
    match &config.upstream {
        Some(UpstreamConfig::Url(url))
            if store::server_key(&url.url) == store::server_key(server) =>
        {
            ((*url.oauth).clone(), url.ca_file.clone())
        }
        _ => (OAuthConfig::default(), None),
    }
}

fn parse(url: &str) -> Result<Url, ExitCode> {
    match Url::parse(url) {
        Ok(url) if matches!(url.scheme(), "http" | "https" | "ws" | "wss") => Ok(url),
        _ => {
            eprintln!("mcp-chain: {url:?} is not the URL of a server (http, https, ws or wss)");
            Err(ExitCode::FAILURE)
        }
    }
}

/// Why the tokens every replica shares cannot be worked on.
#[derive(Debug, thiserror::Error)]
enum SharedError {
    #[cfg(feature = "state")]
    #[error("{0}; nothing was changed")]
    Unreachable(crate::state::StateError),
    #[cfg(not(feature = "state"))]
    #[error("[state] {0}: this mcp-chain was built without shared state (the `state` feature)")]
    NotBuilt(String),
}

/// Where the tokens are: `Some` (what to call `[state]`) when every
/// replica shares them in Redis, connected; `None` for this machine's files.
async fn shared(config: &Config) -> Result<Option<String>, SharedError> {
    let Some(state) = config.state.as_ref().filter(|s| s.key.is_some()) else {
        return Ok(None);
    };
    #[cfg(feature = "state")]
    {
        let mut strict = state.clone();
        strict.fallback = mcp_chain_middleware::shared::Fallback::Refuse;
        crate::state::start(&strict)
            .await
            .map_err(SharedError::Unreachable)?;
        Ok(Some(format!("[state] {}", state.shown_url())))
    }
    #[cfg(not(feature = "state"))]
    Err(SharedError::NotBuilt(state.shown_url()))
}

/// `mcp-chain login URL`.
pub(crate) async fn run_login(config: &Config, url: &str) -> ExitCode {
    let server = match parse(url) {
        Ok(server) => server,
        Err(code) => return code,
    };
    let shared = match shared(config).await {
        Ok(shared) => shared,
        Err(e) => {
            eprintln!("mcp-chain: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (oauth, ca_file) = settings(config, &server);
    match login_to(&server, &oauth, ca_file.as_deref()).await {
        Ok(entry) => {
            let kept = shared.map_or(String::new(), |state| {
                format!("  kept in {state}, for every replica\n")
            });
            say(&format!(
                "logged in to {}\n{}{kept}",
                shown(&server),
                describe(&entry)
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp-chain: login to {} failed: {e}", shown(&server));
            ExitCode::FAILURE
        }
    }
}

async fn login_to(
    server: &Url,
    oauth: &OAuthConfig,
    ca_file: Option<&std::path::Path>,
) -> Result<Entry, OAuthError> {
    let fetch = Fetch::new(ca_file)?;
    let kept = Kept::of(server)?;
    let challenge = fetch.probe(server).await?;
    let _lock = kept
        .lock(oauth.login_timeout)
        .await?
        .ok_or(OAuthError::TimedOut(oauth.login_timeout))?;
    let stored = kept.read().await.ok().flatten().unwrap_or_default();
    let ask = Ask {
        server,
        config: oauth,
        challenge: challenge.as_ref(),
        held: &[],
    };
    let entry = login(&fetch, &ask, stored).await?;
    kept.write(&entry).await?;
    Ok(entry)
}

/// `mcp-chain logout URL`.
pub(crate) async fn run_logout(config: &Config, url: &str) -> ExitCode {
    let server = match parse(url) {
        Ok(server) => server,
        Err(code) => return code,
    };
    if let Err(e) = shared(config).await {
        eprintln!("mcp-chain: {e}");
        return ExitCode::FAILURE;
    }
    let removed = match Kept::of(&server) {
        Ok(kept) => kept.remove().await,
        Err(e) => Err(e),
    };
    match removed {
        Ok(true) => {
            say(&format!("logged out of {}\n", shown(&server)));
            ExitCode::SUCCESS
        }
        Ok(false) => {
            say(&format!("no tokens were stored for {}\n", shown(&server)));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp-chain: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `mcp-chain auth status`: the shared tokens first, with `[state]`.
pub(crate) async fn run_status(config: &Config) -> ExitCode {
    let mut out = String::new();
    let mut failed = false;
    match shared(config).await {
        Err(e) => {
            eprintln!("mcp-chain: {e}");
            return ExitCode::FAILURE;
        }
        Ok(None) => {}
        Ok(Some(state)) => match Kept::every_shared().await {
            Ok(entries) => {
                let _ = writeln!(out, "kept in {state}, for every replica:");
                failed |= listed(&mut out, entries, "no server has tokens there\n");
                out += "\nkept in this machine's files:\n";
            }
            Err(e) => {
                eprintln!("mcp-chain: {e}");
                return ExitCode::FAILURE;
            }
        },
    }
    match store::all() {
        Ok(entries) => failed |= listed(&mut out, entries, "no server has stored tokens\n"),
        Err(e) => {
            eprintln!("mcp-chain: {e}");
            return ExitCode::FAILURE;
        }
    }
    say(&out);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Lists `entries` into `out` (`none` when there are none); whether one
/// could not be read.
fn listed(out: &mut String, entries: Vec<Result<Entry, store::StoreError>>, none: &str) -> bool {
    if entries.is_empty() {
        out.push_str(none);
    }
    let mut failed = false;
    for entry in entries {
        match entry {
            Ok(entry) => {
                let server = mcp_chain_middleware::shown::shown(&entry.server, 200);
                let _ = write!(out, "{server}\n{}", describe(&entry));
            }
            Err(e) => {
                failed = true;
                let _ = writeln!(out, "error: {e}");
            }
        }
    }
    failed
}

/// What a person may see of an entry: never a token or a secret.
fn describe(entry: &Entry) -> String {
    let show = |t: &str| mcp_chain_middleware::shown::shown(t, 200);
    let mut out = String::new();
    if let Some(metadata) = &entry.metadata {
        let _ = writeln!(out, "  issuer: {}", show(&metadata.issuer));
    }
    if let Some(reg) = &entry.registration {
        let how = if reg.dynamic {
            "registered by mcp-chain"
        } else {
            "configured"
        };
        let _ = writeln!(out, "  client: {} ({how})", show(&reg.client_id));
    }
    match &entry.tokens {
        None => out += "  tokens: none (run `mcp-chain login` again)\n",
        Some(tokens) => {
            let scopes = if tokens.scopes.is_empty() {
                "(as the server chose)".to_owned()
            } else {
                show(&tokens.scopes.join(" "))
            };
            let _ = writeln!(out, "  scopes: {scopes}");
            let expiry = match tokens.expires_at {
                None => "no expiry given".to_owned(),
                Some(at) if at <= now_secs() => "expired".to_owned(),
                Some(at) => format!("expires in {}", human(at - now_secs())),
            };
            let refresh = if tokens.refresh_token.is_some() {
                "refreshable"
            } else {
                "not refreshable"
            };
            let _ = writeln!(out, "  access token: {expiry}, {refresh}");
        }
    }
    out
}

fn human(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

fn say(text: &str) {
    let _ = std::io::stdout().write_all(text.as_bytes());
}

impl Fetch {
    /// Asks the server without credentials, as a client's first request
    /// would, to read its challenge; `None` when it sends none.
    pub(crate) async fn probe(&self, server: &Url) -> Result<Option<Challenge>, OAuthError> {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "mcp-chain", "version": env!("CARGO_PKG_VERSION")}
            }
        });
        let headers = self.post_for_headers(server, &body).await?;
        Ok(Challenge::bearer(headers.iter().map(String::as_str)))
    }
}
