//! `[upstream.oauth]`: how mcp-chain logs in to a server at a URL that asks
//! for OAuth. Every key is optional: discovery needs nothing from the user
//! (the server's 401 says where its authorization server is), and a URL
//! upstream without the table logs in the same way with the defaults.

use super::validate::Problem;
use serde::Deserialize;
use std::fmt;
use std::time::Duration;
use url::Url;

/// How long a login through the browser may take before the requests
/// waiting for it are answered with an error (the user may close the tab).
pub(crate) const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a request waits for a login before it is answered that one is
/// needed (the login itself stays open for `login_timeout`). Below the
/// minute clients give a request (the TypeScript SDK's default, Claude
/// Desktop's `initialize`), so the person reads what to do, not a timeout.
pub(crate) const DEFAULT_LOGIN_WAIT: Duration = Duration::from_secs(45);

/// `[upstream.oauth]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OAuthFile {
    client_id: Option<String>,
    client_secret: Option<String>,
    scopes: Option<Vec<String>>,
    resource: Option<ResourceFile>,
    callback_port: Option<u16>,
    grant: Option<String>,
    /// Protected resource metadata on another origin than the server's,
    /// trusted because the user says so.
    resource_metadata: Option<String>,
    login_timeout: Option<String>,
    login_wait: Option<String>,
    /// The one authorization server the configured credentials may go to.
    issuer: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ResourceFile {
    Send(bool),
    Override(String),
}

/// How mcp-chain identifies itself to the authorization server.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientId {
    /// Registered beforehand with the authorization server.
    Registered(String),
    /// A Client ID Metadata Document's URL, used where the server supports
    /// them (else mcp-chain registers itself).
    Document(Url),
}

/// The `resource` parameter (RFC 8707) on authorize, token and refresh.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Resource {
    /// The server's resource identifier, as its metadata names it.
    #[default]
    Send,
    /// For servers that reject it.
    Omit,
    Override(Url),
}

/// Which grant gets the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grant {
    /// A person logs in through the browser (PKCE).
    #[default]
    AuthorizationCode,
    /// A service account: the client's own credentials, no person.
    ClientCredentials,
}

/// `[upstream.oauth]`, checked. The secret is never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    pub client_id: Option<ClientId>,
    pub client_secret: Option<String>,
    pub scopes: Option<Vec<String>>,
    pub resource: Resource,
    pub callback_port: Option<u16>,
    pub grant: Grant,
    pub resource_metadata: Option<Url>,
    pub login_timeout: Duration,
    pub login_wait: Duration,
    /// The authorization server `client_secret` belongs to; without it,
    /// the one the secret was first used with.
    pub issuer: Option<Url>,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            client_id: None,
            client_secret: None,
            scopes: None,
            resource: Resource::Send,
            callback_port: None,
            grant: Grant::AuthorizationCode,
            resource_metadata: None,
            login_timeout: DEFAULT_LOGIN_TIMEOUT,
            login_wait: DEFAULT_LOGIN_WAIT,
            issuer: None,
        }
    }
}

impl fmt::Debug for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Registered(id) => write!(f, "{id:?}"),
            Self::Document(url) => write!(f, "{:?}", url.as_str()),
        }
    }
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("scopes", &self.scopes)
            .field("resource", &self.resource)
            .field("callback_port", &self.callback_port)
            .field("grant", &self.grant)
            .field(
                "resource_metadata",
                &self.resource_metadata.as_ref().map(Url::as_str),
            )
            .field("login_timeout", &self.login_timeout)
            .field("login_wait", &self.login_wait)
            .field("issuer", &self.issuer.as_ref().map(Url::as_str))
            .finish()
    }
}

/// Whether `url` may carry OAuth traffic: https, or http on loopback only
/// (tests and servers on this machine).
pub fn is_secure(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

pub(super) fn oauth(file: OAuthFile, problems: &mut Vec<Problem>) -> OAuthConfig {
    let mut problem = |message: String| problems.push((None, format!("upstream.oauth.{message}")));
    let client_id = match file.client_id {
        None => None,
        Some(id) if id.trim().is_empty() => {
            problem("client_id: must not be empty".into());
            None
        }
        Some(id) if id.starts_with("https://") => match Url::parse(&id) {
            Ok(url) => Some(ClientId::Document(url)),
            Err(e) => {
                problem(format!("client_id: {id:?} is not a URL: {e}"));
                None
            }
        },
        Some(id) => Some(ClientId::Registered(id)),
    };
    let client_secret = file.client_secret.filter(|s| !s.is_empty());
    let scopes = file.scopes;
    if scopes
        .iter()
        .flatten()
        .any(|s| s.is_empty() || s.contains(char::is_whitespace))
    {
        problem("scopes: each scope is one word".into());
    }
    let resource = match file.resource {
        None | Some(ResourceFile::Send(true)) => Resource::Send,
        Some(ResourceFile::Send(false)) => Resource::Omit,
        Some(ResourceFile::Override(text)) => match Url::parse(&text) {
            Ok(url) if url.fragment().is_none() => Resource::Override(url),
            Ok(_) => {
                problem(format!(
                    "resource: {text:?} must not have a fragment (RFC 8707)"
                ));
                Resource::Send
            }
            Err(e) => {
                problem(format!("resource: {text:?} is not a URL: {e}"));
                Resource::Send
            }
        },
    };
    let callback_port = match file.callback_port {
        Some(0) => {
            problem("callback_port: 0 is no port; leave it out to have one chosen".into());
            None
        }
        port => port,
    };
    let grant = match file.grant.as_deref() {
        None | Some("authorization_code") => Grant::AuthorizationCode,
        Some("client_credentials") => Grant::ClientCredentials,
        Some(other) => {
            problem(format!(
                "grant: {other:?} is not \"authorization_code\" or \"client_credentials\""
            ));
            Grant::AuthorizationCode
        }
    };
    if grant == Grant::ClientCredentials
        && !(matches!(client_id, Some(ClientId::Registered(_))) && client_secret.is_some())
    {
        problem("grant: \"client_credentials\" needs client_id and client_secret".into());
    }
    let resource_metadata = file
        .resource_metadata
        .and_then(|text| match Url::parse(&text) {
            Ok(url) if is_secure(&url) => Some(url),
            Ok(_) => {
                problem(format!(
                    "resource_metadata: {text:?} must be https (http only on loopback)"
                ));
                None
            }
            Err(e) => {
                problem(format!("resource_metadata: {text:?} is not a URL: {e}"));
                None
            }
        });
    let mut duration = |key: &str, text: Option<String>, default: Duration| match text
        .as_deref()
        .map(super::parse_duration)
    {
        None => default,
        Some(Ok(d)) if !d.is_zero() => d,
        Some(Ok(_)) => {
            problem(format!("{key}: must be more than zero"));
            default
        }
        Some(Err(e)) => {
            problem(format!("{key}: {e}"));
            default
        }
    };
    let login_timeout = duration("login_timeout", file.login_timeout, DEFAULT_LOGIN_TIMEOUT);
    let login_wait = duration("login_wait", file.login_wait, DEFAULT_LOGIN_WAIT);
    let issuer = file.issuer.and_then(|text| match Url::parse(&text) {
        Ok(url) if is_secure(&url) => Some(url),
        Ok(_) => {
            problem(format!(
                "issuer: {text:?} must be https (http only on loopback)"
            ));
            None
        }
        Err(e) => {
            problem(format!("issuer: {text:?} is not a URL: {e}"));
            None
        }
    });
    OAuthConfig {
        client_id,
        client_secret,
        scopes,
        resource,
        callback_port,
        grant,
        resource_metadata,
        login_timeout,
        login_wait,
        issuer,
    }
}
