//! `mcp-chain login URL`, `logout URL` and `auth status`: the tokens a
//! person manages by hand. What they print goes to stdout (it is the
//! command's output, not the protocol channel); the tokens themselves are
//! never printed.

use super::challenge::Challenge;
use super::error::{shown, OAuthError};
use super::fetch::Fetch;
use super::login::{login, Ask};
use super::store::{self, now_secs, Entry, LoginLock};
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

/// `mcp-chain login URL`.
pub(crate) async fn run_login(config: &Config, url: &str) -> ExitCode {
    let server = match parse(url) {
        Ok(server) => server,
        Err(code) => return code,
    };
    let (oauth, ca_file) = settings(config, &server);
    match login_to(&server, &oauth, ca_file.as_deref()).await {
        Ok(entry) => {
            say(&format!(
                "logged in to {}\n{}",
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
    let path = store::path(server)?;
    let challenge = fetch.probe(server).await?;
    let _lock = LoginLock::take(&path, oauth.login_timeout)
        .await?
        .ok_or(OAuthError::TimedOut(oauth.login_timeout))?;
    let stored = store::read(&path).ok().flatten().unwrap_or_default();
    let ask = Ask {
        server,
        config: oauth,
        challenge: challenge.as_ref(),
        held: &[],
    };
    let entry = login(&fetch, &ask, stored).await?;
    store::write(&path, &entry)?;
    Ok(entry)
}

/// `mcp-chain logout URL`.
pub(crate) fn run_logout(url: &str) -> ExitCode {
    let server = match parse(url) {
        Ok(server) => server,
        Err(code) => return code,
    };
    match store::path(&server).map(|p| store::remove(&p)) {
        Ok(Ok(true)) => {
            say(&format!("logged out of {}\n", shown(&server)));
            ExitCode::SUCCESS
        }
        Ok(Ok(false)) => {
            say(&format!("no tokens were stored for {}\n", shown(&server)));
            ExitCode::SUCCESS
        }
        Ok(Err(e)) | Err(e) => {
            eprintln!("mcp-chain: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `mcp-chain auth status`.
pub(crate) fn run_status() -> ExitCode {
    let entries = match store::all() {
        Ok(entries) => entries,
        Err(e) => {
            eprintln!("mcp-chain: {e}");
            return ExitCode::FAILURE;
        }
    };
    if entries.is_empty() {
        say("no server has stored tokens\n");
        return ExitCode::SUCCESS;
    }
    let mut out = String::new();
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
    say(&out);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
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
