//! One login to one server, the same from `mcp-chain login` and from a
//! running mcp-chain whose server asked for one: discovery, registration,
//! then the authorization code with PKCE (S256) through the user's browser
//! and the loopback redirect, or client credentials for a service account.
//! The authorization URL always goes to stderr; with `MCP_CHAIN_OPEN_URL`
//! set, that command is run with the URL as its last argument instead of
//! the browser (machines without a display, tests).

use super::callback::{Callback, Returned};
use super::challenge::Challenge;
use super::discovery::{discover, Discovered};
use super::error::{shown, OAuthError};
use super::fetch::{http_form, Fetch};
use super::register::registration;
use super::store::Entry;
use super::tokens;
use crate::config::{Grant, OAuthConfig, Resource};
use url::Url;

/// What a login starts from.
pub(crate) struct Ask<'a> {
    pub(crate) server: &'a Url,
    pub(crate) config: &'a OAuthConfig,
    /// The server's 401 or 403 challenge, if there was one.
    pub(crate) challenge: Option<&'a Challenge>,
    /// Scopes held before (a step-up asks for these and more).
    pub(crate) held: &'a [String],
}

/// Logs in; the entry to store (its registration and tokens). `stored` is
/// what was kept from before.
pub(crate) async fn login(
    fetch: &Fetch,
    ask: &Ask<'_>,
    stored: Entry,
) -> Result<Entry, OAuthError> {
    let found = discover(fetch, &http_form(ask.server), ask.challenge, ask.config).await?;
    if let Some(configured) = &ask.config.issuer {
        if !super::register::same_issuer(configured.as_str(), &found.metadata.issuer) {
            return Err(OAuthError::NotTheIssuer {
                configured: shown(configured),
                found: mcp_chain_middleware::shown::shown(&found.metadata.issuer, 200),
            });
        }
    }
    let scopes = scopes(ask, &found);
    let resource = match &ask.config.resource {
        Resource::Send => Some(found.resource.clone()),
        Resource::Omit => None,
        Resource::Override(url) => Some(url.clone()),
    };
    let mut entry = Entry {
        server: crate::oauth::store::server_key(ask.server),
        resource: resource.as_ref().map(Url::to_string),
        metadata: Some(found.metadata.clone()),
        ..stored
    };
    let tokens = match ask.config.grant {
        Grant::ClientCredentials => {
            let reg =
                registration(fetch, &found, ask.config, None, entry.registration.as_ref()).await?;
            let client = tokens::client(&reg, &found.metadata, None)?;
            entry.registration = Some(reg);
            tokens::client_credentials(fetch, &client, &scopes, resource.as_ref()).await?
        }
        Grant::AuthorizationCode => {
            let stored_port = entry
                .registration
                .as_ref()
                .and_then(|r| r.redirect_uri.as_deref())
                .and_then(|uri| Url::parse(uri).ok())
                .and_then(|uri| uri.port());
            let callback = match ask.config.callback_port {
                Some(port) => Callback::bind(Some(port)).await?,
                // The port registered before, else (taken now) another.
                None => match Callback::bind(stored_port).await {
                    Ok(callback) => callback,
                    Err(_) if stored_port.is_some() => Callback::bind(None).await?,
                    Err(e) => return Err(e),
                },
            };
            let redirect = callback.redirect_uri();
            let reg = registration(
                fetch,
                &found,
                ask.config,
                Some(&redirect),
                entry.registration.as_ref(),
            )
            .await?;
            let client = tokens::client(&reg, &found.metadata, Some(&redirect))?;
            entry.registration = Some(reg);
            let (url, state, verifier) =
                tokens::authorization(&client, &scopes, resource.as_ref())?;
            open(&url);
            let returned = callback
                .wait(state.secret(), ask.config.login_timeout)
                .await?;
            let code = match returned {
                Returned::Code { code, iss } => {
                    check_iss(&found, iss.as_deref())?;
                    code
                }
                Returned::Error { error, description } => {
                    let show = |t: &str| mcp_chain_middleware::shown::shown(t, 200);
                    return Err(OAuthError::Refused {
                        error: show(&error),
                        description: description.as_deref().map(show),
                    });
                }
            };
            tokens::code(fetch, &client, code, verifier, resource.as_ref(), &scopes).await?
        }
    };
    entry.tokens = Some(tokens);
    Ok(entry)
}

/// The scopes to ask for: the configured ones; else the challenge's (and,
/// for a step-up, those held before); else what the resource metadata
/// lists; else none, and the server decides.
fn scopes(ask: &Ask<'_>, found: &Discovered) -> Vec<String> {
    let mut scopes: Vec<String> = match (&ask.config.scopes, ask.challenge) {
        (Some(configured), _) => configured.clone(),
        (None, Some(challenge)) if challenge.scope.is_some() => challenge.scopes(),
        _ => found.scopes_supported.clone().unwrap_or_default(),
    };
    // A step-up keeps what was held and adds what the server asks for.
    let asked = ask.challenge.map(Challenge::scopes).unwrap_or_default();
    for scope in ask.held.iter().chain(&asked) {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    scopes
}

/// RFC 9207: where the server says it sends `iss`, it must, and where it
/// is sent it must be the issuer.
fn check_iss(found: &Discovered, iss: Option<&str>) -> Result<(), OAuthError> {
    let expected = &found.metadata.issuer;
    let required = found
        .metadata
        .authorization_response_iss_parameter_supported;
    match iss {
        Some(iss) if iss.trim_end_matches('/') == expected.trim_end_matches('/') => Ok(()),
        None if !required => Ok(()),
        found => Err(OAuthError::IssMismatch {
            expected: mcp_chain_middleware::shown::shown(expected, 200),
            found: found.map(|f| mcp_chain_middleware::shown::shown(f, 200)),
        }),
    }
}

/// Shows the authorization URL and opens it (the hook, else the browser).
/// One that cannot be opened is said; the user can open it from stderr.
fn open(url: &Url) {
    eprintln!(
        "mcp-chain: to log in to {}, open:\n  {url}",
        shown_origin(url)
    );
    let opened = crate::platform::browser::show(url)
        .map_err(|(program, why)| OAuthError::Browser { program, why });
    if let Err(e) = opened {
        tracing::warn!(error = %e, "the login page was not opened");
    }
}

fn shown_origin(url: &Url) -> String {
    shown(url).split('/').take(3).collect::<Vec<_>>().join("/")
}
