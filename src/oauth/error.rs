//! Why mcp-chain could not log in to a server, or keep its tokens. Each
//! says what a person can do about it; none holds a token or a secret.

use url::Url;

#[derive(Debug, thiserror::Error)]
pub(crate) enum OAuthError {
    /// No stored tokens (or they were refused) and no login can run here.
    #[error("{server} needs a login: run `mcp-chain login {server}`")]
    LoginNeeded { server: String },
    #[error("{url}: {why}")]
    Http { url: String, why: String },
    #[error("{url} must be https (plain http only on loopback)")]
    Insecure { url: String },
    #[error("{url} answered {status}{}", detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        detail: Option<String>,
    },
    #[error("{url}: not the JSON expected ({why})")]
    BadDocument { url: String, why: String },
    #[error("the server's protected resource metadata is at {found}, another origin than the server's; set upstream.oauth.resource_metadata to trust it")]
    OtherOrigin { found: String },
    #[error(
        "the protected resource metadata names {named} as the resource, not this server ({server})"
    )]
    ResourceMismatch { named: String, server: String },
    #[error("the authorization server's metadata says issuer {found}, not {expected}")]
    IssuerMismatch { expected: String, found: String },
    #[error("the server now names authorization server {found}, but the client secret belongs to {bound}; mcp-chain sends it nowhere else (set upstream.oauth.issuer to trust another)")]
    OtherIssuer { bound: String, found: String },
    #[error("the server names authorization server {found}, not {configured} (upstream.oauth.issuer); mcp-chain logs in nowhere else")]
    NotTheIssuer { configured: String, found: String },
    #[error("no authorization server found for {server} (no protected resource metadata, no authorization server metadata)")]
    NoAuthorizationServer { server: String },
    #[error("the authorization server does not offer PKCE with S256; mcp-chain will not log in without it")]
    NoPkce,
    #[error(
        "the authorization server offers no way to register a client; set upstream.oauth.client_id"
    )]
    NoRegistration,
    #[error("the authorization server refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        error: String,
        description: Option<String>,
    },
    #[error("the login answer comes from issuer {found:?}, not {expected}")]
    IssMismatch {
        expected: String,
        found: Option<String>,
    },
    #[error("no login within {0:?} (the browser tab may have been closed); run `mcp-chain login` to try again")]
    TimedOut(std::time::Duration),
    #[error("cannot listen for the login's answer on {addr}: {why}")]
    Callback { addr: String, why: std::io::Error },
    #[error("cannot open the browser ({program}): {why}; open the URL above yourself")]
    Browser {
        program: String,
        why: std::io::Error,
    },
    /// A login is open in the browser; the request could not wait for it.
    #[error("a login to {server} is waiting in the browser; finish it and try again, or run `mcp-chain login {server}`")]
    LoginPending { server: String },
    /// The server refused the token a login got moments ago.
    #[error("the server refused the token a login just obtained")]
    FreshTokenRefused,
    /// A login failed moments ago; this request is not a new one.
    #[error("{why}; a login failed moments ago")]
    FailedJustNow { why: String },
    #[error("the server asked for more scope {0} times; giving up")]
    StepUpLimit(u32),
    #[error(transparent)]
    Store(#[from] super::store::StoreError),
}

impl OAuthError {
    pub(crate) fn http(url: &Url, why: impl std::fmt::Display) -> Self {
        Self::Http {
            url: shown(url),
            why: why.to_string(),
        }
    }
}

/// A URL as messages show it: no user info, no query (a code or a state
/// may be there), no fragment.
pub(crate) fn shown(url: &Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}
