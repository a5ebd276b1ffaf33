//! How mcp-chain is known to the authorization server, in the order the
//! MCP authorization specification gives: a client registered beforehand
//! (`client_id` in `[upstream.oauth]`), else a Client ID Metadata
//! Document (a `client_id` that is an https URL, where the server says it
//! supports them), else Dynamic Client Registration (RFC 7591). A dynamic
//! registration is stored with the redirect URI it used and reused while
//! that stays the same; a changed callback port registers again.
//!
//! A registration, and a configured secret, belong to one authorization
//! server (RFC 9700's mix-up defence): a dynamic one is reused only at the
//! issuer that made it, and `client_secret` goes only to `issuer` in
//! `[upstream.oauth]`, else to the issuer it was first used with. A server
//! that later names another authorization server gets a new registration
//! there, or (a configured secret) a clear refusal; never the old secret.

use super::discovery::Discovered;
use super::error::OAuthError;
use super::fetch::{self, Fetch};
use crate::config::{ClientId, OAuthConfig};
use serde::{Deserialize, Serialize};
use std::fmt;
use url::Url;

/// How the client authenticates at the token endpoint.
pub(crate) const NONE: &str = "none";
pub(crate) const BASIC: &str = "client_secret_basic";
pub(crate) const POST: &str = "client_secret_post";

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Registration {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub(crate) auth_method: String,
    /// The redirect URI it was registered with (dynamic registrations).
    pub(crate) redirect_uri: Option<String>,
    /// Made by mcp-chain (and so made again when the redirect changes).
    pub(crate) dynamic: bool,
    /// The issuer it was made at, or its secret first used with.
    #[serde(default)]
    pub(crate) issuer: Option<String>,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("auth_method", &self.auth_method)
            .field("redirect_uri", &self.redirect_uri)
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// What the registration endpoint answers (RFC 7591 §3.2.1).
#[derive(Deserialize)]
struct Registered {
    client_id: String,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

/// The registration to use; `stored` is the one kept from before.
pub(crate) async fn registration(
    fetch: &Fetch,
    found: &Discovered,
    config: &OAuthConfig,
    redirect_uri: Option<&str>,
    stored: Option<&Registration>,
) -> Result<Registration, OAuthError> {
    let supported = found
        .metadata
        .token_endpoint_auth_methods_supported
        .clone()
        // RFC 8414: the default is client_secret_basic.
        .unwrap_or_else(|| vec![BASIC.into()]);
    let issuer = &found.metadata.issuer;
    match &config.client_id {
        Some(ClientId::Registered(id)) => {
            if config.client_secret.is_some() {
                secret_may_go_to(issuer, config, stored)?;
            }
            let auth_method = match &config.client_secret {
                None => NONE,
                Some(_) if supported.iter().any(|m| m == BASIC) => BASIC,
                Some(_) if supported.iter().any(|m| m == POST) => POST,
                Some(_) => BASIC,
            };
            return Ok(Registration {
                client_id: id.clone(),
                client_secret: config.client_secret.clone(),
                auth_method: auth_method.into(),
                redirect_uri: redirect_uri.map(str::to_owned),
                dynamic: false,
                issuer: Some(issuer.clone()),
            });
        }
        Some(ClientId::Document(url)) if found.metadata.client_id_metadata_document_supported => {
            return Ok(Registration {
                client_id: url.to_string(),
                client_secret: None,
                auth_method: NONE.into(),
                redirect_uri: redirect_uri.map(str::to_owned),
                dynamic: false,
                issuer: Some(issuer.clone()),
            });
        }
        _ => {}
    }
    let reusable = |s: &&Registration| {
        s.dynamic
            && s.redirect_uri.as_deref() == redirect_uri
            && s.issuer
                .as_deref()
                .is_some_and(|made| same_issuer(made, issuer))
    };
    if let Some(stored) = stored.filter(reusable) {
        return Ok(stored.clone());
    }
    let endpoint = found
        .metadata
        .registration_endpoint
        .as_deref()
        .ok_or(OAuthError::NoRegistration)?;
    let endpoint = Url::parse(endpoint).map_err(|e| OAuthError::BadDocument {
        url: "the authorization server metadata".into(),
        why: format!("registration_endpoint is not a URL: {e}"),
    })?;
    let asked = [NONE, BASIC, POST]
        .into_iter()
        .find(|m| supported.iter().any(|s| s == m))
        .unwrap_or(NONE);
    let (grant_types, redirect_uris) = match redirect_uri {
        Some(uri) => (
            serde_json::json!(["authorization_code", "refresh_token"]),
            serde_json::json!([uri]),
        ),
        None => (
            serde_json::json!(["client_credentials"]),
            serde_json::json!([]),
        ),
    };
    let body = serde_json::json!({
        "client_name": "mcp-chain",
        "redirect_uris": redirect_uris,
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": asked,
    });
    let answer = fetch.post_json(&endpoint, &body).await?;
    if !(200..300).contains(&answer.status) {
        return Err(fetch::status(&endpoint, &answer));
    }
    let registered: Registered = fetch::parse(&endpoint, &answer.body)?;
    let auth_method = registered
        .token_endpoint_auth_method
        .filter(|m| [NONE, BASIC, POST].contains(&m.as_str()))
        .unwrap_or_else(|| {
            if registered.client_secret.is_some() && asked == NONE {
                BASIC.into()
            } else {
                asked.into()
            }
        });
    tracing::info!(client_id = %registered.client_id, "registered with the authorization server");
    Ok(Registration {
        client_id: registered.client_id,
        client_secret: registered.client_secret,
        auth_method,
        redirect_uri: redirect_uri.map(str::to_owned),
        dynamic: true,
        issuer: Some(issuer.clone()),
    })
}

/// Whether the configured secret may go to `issuer`: the one it was
/// first used with (none yet: this one). `issuer` in `[upstream.oauth]`
/// was checked at discovery.
fn secret_may_go_to(
    issuer: &str,
    config: &OAuthConfig,
    stored: Option<&Registration>,
) -> Result<(), OAuthError> {
    if config.issuer.is_some() {
        return Ok(());
    }
    let bound = stored
        .filter(|s| !s.dynamic && s.client_secret.is_some())
        .and_then(|s| s.issuer.as_deref());
    match bound {
        Some(bound) if !same_issuer(bound, issuer) => Err(OAuthError::OtherIssuer {
            bound: mcp_chain_middleware::shown::shown(bound, 200),
            found: mcp_chain_middleware::shown::shown(issuer, 200),
        }),
        _ => Ok(()),
    }
}

pub(crate) fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}
