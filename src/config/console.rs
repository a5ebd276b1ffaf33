//! `[console]`: mcp-chain's own pages for a person, served by the running
//! process: the approval page where a call waits when the client cannot
//! ask (`approve` with `ask = [..., "page"]`), and the activity. The pages
//! decide which tools run: on loopback they are reached by their secret
//! URL alone; anywhere else only behind a sign-in at the front's
//! authorization server (`client_id`, with `[front.oauth]`) with the scope
//! `mcp-chain:admin`. A config that would serve them off loopback without
//! it is refused at start.

use super::validate::Problem;
use serde::Deserialize;
use std::net::SocketAddr;
use url::Url;

/// `[console]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConsoleFile {
    listen: Option<String>,
    open: Option<String>,
    client_id: Option<String>,
    public_url: Option<String>,
}

/// When the browser is opened at the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAt {
    /// When a call starts waiting while none did (once per burst).
    FirstPending,
    /// Never: the URL is only printed.
    Never,
}

/// `[console]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleConfig {
    pub listen: SocketAddr,
    pub open: OpenAt,
    /// People sign in at the front's authorization server first.
    pub sign_in: Option<SignInConfig>,
}

/// `[console] client_id` (and `public_url`): the console behind a sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInConfig {
    /// The console's client at `[front.oauth] issuer` (a public client).
    pub client_id: String,
    /// Where people reach the console (the sign-in comes back there).
    pub public_url: Url,
}

/// The scope a person's token must hold to use a console behind a sign-in.
pub const ADMIN_SCOPE: &str = "mcp-chain:admin";

pub(super) fn console(
    file: Option<ConsoleFile>,
    front_oauth: bool,
    problems: &mut Vec<Problem>,
) -> Option<ConsoleConfig> {
    let file = file?;
    let mut problem = |message: String| problems.push((None, format!("console.{message}")));
    let listen = file.listen.as_deref().unwrap_or("127.0.0.1:0");
    let sign_in = match (file.client_id, front_oauth) {
        (None, _) => None,
        (Some(_), false) => {
            problem("client_id: people sign in to the console at [front.oauth]'s issuer, and there is no [front.oauth]".to_owned());
            return None;
        }
        (Some(client_id), true) => {
            let public_url = match file.public_url.as_deref().map(Url::parse) {
                Some(Ok(url)) if crate::config::is_secure(&url) => url,
                Some(Ok(url)) => {
                    problem(format!("public_url: {url} is neither https nor http on loopback; a sign-in's cookie would cross the network in the clear"));
                    return None;
                }
                Some(Err(e)) => {
                    problem(format!("public_url: not a URL: {e}"));
                    return None;
                }
                None => match listen.parse::<SocketAddr>() {
                    Ok(addr) if addr.ip().is_loopback() => {
                        Url::parse(&format!("http://{addr}/")).ok()?
                    }
                    _ => {
                        problem("public_url: name where people reach the console (https://…/): the sign-in comes back there".to_owned());
                        return None;
                    }
                },
            };
            Some(SignInConfig {
                client_id,
                public_url,
            })
        }
    };
    if file.public_url.is_some() && sign_in.is_none() {
        problem(
            "public_url: only with client_id (a console reached off loopback needs a sign-in)"
                .to_owned(),
        );
        return None;
    }
    let listen = match listen.parse::<SocketAddr>() {
        Ok(addr) if addr.ip().is_loopback() || sign_in.is_some() => addr,
        Ok(addr) => {
            problem(format!(
                "listen: {addr} is not loopback; the console decides which tools run, so off loopback it is served only behind a sign-in at the front's authorization server (client_id with [front.oauth], and the scope {ADMIN_SCOPE:?})"
            ));
            return None;
        }
        Err(e) => {
            problem(format!("listen: not an address (host:port): {e}"));
            return None;
        }
    };
    let open = match file.open.as_deref() {
        None | Some("first-pending") => OpenAt::FirstPending,
        Some("never") => OpenAt::Never,
        Some(other) => {
            problem(format!(
                "open: {other:?} is not \"first-pending\" or \"never\""
            ));
            OpenAt::FirstPending
        }
    };
    Some(ConsoleConfig {
        listen,
        open,
        sign_in,
    })
}
