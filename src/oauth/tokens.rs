//! Token requests, through the oauth2 crate: the authorization code (with
//! the PKCE verifier), a refresh, client credentials. The client
//! authenticates as it is registered (`none`, `client_secret_basic`,
//! `client_secret_post`); `resource` (RFC 8707) goes the same way on every
//! request. The crate builds each request; our [`Fetch`] sends it.

use super::discovery::ServerMetadata;
use super::error::OAuthError;
use super::fetch::Fetch;
use super::register::{Registration, POST};
use super::store::{now_secs, Tokens};
use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken,
    RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use url::Url;

/// The client as the crate knows it: the authorization endpoint may be
/// absent (client credentials), the token endpoint is not.
pub(crate) type Client =
    BasicClient<EndpointMaybeSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// Builds the crate's client for `registration` at `metadata`'s endpoints.
pub(crate) fn client(
    registration: &Registration,
    metadata: &ServerMetadata,
    redirect_uri: Option<&str>,
) -> Result<Client, OAuthError> {
    let bad = |what: &str, e: &dyn std::fmt::Display| OAuthError::BadDocument {
        url: "the authorization server metadata".into(),
        why: format!("{what}: {e}"),
    };
    // Metadata stored by an earlier version is checked as discovery does.
    super::discovery::check_endpoints(metadata)?;
    let token = metadata
        .token_endpoint
        .as_deref()
        .ok_or_else(|| bad("token_endpoint", &"missing"))?;
    let token = TokenUrl::new(token.to_owned()).map_err(|e| bad("token_endpoint", &e))?;
    let auth = match metadata.authorization_endpoint.as_deref() {
        Some(auth) => {
            Some(AuthUrl::new(auth.to_owned()).map_err(|e| bad("authorization_endpoint", &e))?)
        }
        None => None,
    };
    let mut client = BasicClient::new(ClientId::new(registration.client_id.clone()))
        .set_auth_uri_option(auth)
        .set_token_uri(token)
        .set_auth_type(if registration.auth_method == POST {
            AuthType::RequestBody
        } else {
            AuthType::BasicAuth
        });
    if let Some(secret) = &registration.client_secret {
        client = client.set_client_secret(ClientSecret::new(secret.clone()));
    }
    if let Some(uri) = redirect_uri {
        let uri = RedirectUrl::new(uri.to_owned()).map_err(|e| bad("redirect_uri", &e))?;
        client = client.set_redirect_uri(uri);
    }
    Ok(client)
}

/// Where to send the browser to log in at `client`'s authorization
/// endpoint, asking for `scopes` (and `resource`, RFC 8707), with a PKCE
/// S256 challenge and a fresh state: the URL, the state, the verifier.
pub(crate) fn authorization(
    client: &Client,
    scopes: &[String],
    resource: Option<&Url>,
) -> Result<(Url, CsrfToken, PkceCodeVerifier), OAuthError> {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(CsrfToken::new_random)
        .map_err(|_| OAuthError::BadDocument {
            url: "the authorization server metadata".into(),
            why: "no authorization_endpoint".into(),
        })?
        .set_pkce_challenge(challenge)
        .add_scopes(scopes.iter().cloned().map(Scope::new));
    if let Some(resource) = resource {
        request = request.add_extra_param("resource", resource.to_string());
    }
    let (url, state) = request.url();
    Ok((url, state, verifier))
}

/// Trades the code for tokens.
pub(crate) async fn code(
    fetch: &Fetch,
    client: &Client,
    code: String,
    verifier: PkceCodeVerifier,
    resource: Option<&Url>,
    asked: &[String],
) -> Result<Tokens, OAuthError> {
    let mut request = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier);
    if let Some(resource) = resource {
        request = request.add_extra_param("resource", resource.to_string());
    }
    let answer = request.request_async(fetch).await.map_err(refused)?;
    Ok(tokens(&answer, asked, None))
}

/// A new access token from the refresh token; a rotated refresh token is
/// kept, one the server does not rotate stays.
pub(crate) async fn refresh(
    fetch: &Fetch,
    client: &Client,
    old: &Tokens,
    resource: Option<&Url>,
) -> Result<Tokens, OAuthError> {
    let Some(refresh_token) = &old.refresh_token else {
        return Err(OAuthError::Refused {
            error: "no refresh token".into(),
            description: None,
        });
    };
    let refresh_token = RefreshToken::new(refresh_token.clone());
    let mut request = client.exchange_refresh_token(&refresh_token);
    if let Some(resource) = resource {
        request = request.add_extra_param("resource", resource.to_string());
    }
    let answer = request.request_async(fetch).await.map_err(refused)?;
    Ok(tokens(&answer, &old.scopes, old.refresh_token.as_deref()))
}

/// A token for the client itself (a service account).
pub(crate) async fn client_credentials(
    fetch: &Fetch,
    client: &Client,
    scopes: &[String],
    resource: Option<&Url>,
) -> Result<Tokens, OAuthError> {
    let mut request = client
        .exchange_client_credentials()
        .add_scopes(scopes.iter().cloned().map(Scope::new));
    if let Some(resource) = resource {
        request = request.add_extra_param("resource", resource.to_string());
    }
    let answer = request.request_async(fetch).await.map_err(refused)?;
    Ok(tokens(&answer, scopes, None))
}

fn tokens(answer: &BasicTokenResponse, asked: &[String], kept_refresh: Option<&str>) -> Tokens {
    let scopes = match answer.scopes() {
        Some(granted) => granted.iter().map(|s| s.to_string()).collect(),
        None => asked.to_vec(),
    };
    Tokens {
        access_token: answer.access_token().secret().clone(),
        refresh_token: answer
            .refresh_token()
            .map(|r| r.secret().clone())
            .or_else(|| kept_refresh.map(str::to_owned)),
        expires_at: answer
            .expires_in()
            .map(|d| now_secs().saturating_add(d.as_secs())),
        scopes,
    }
}

/// Why a token request failed: the server's own error (escaped, cut), or
/// why it could not be made.
fn refused(e: RequestTokenError<OAuthError, BasicErrorResponse>) -> OAuthError {
    let show = |text: &str| mcp_chain_middleware::shown::shown(text, 200);
    match e {
        RequestTokenError::ServerResponse(answer) => OAuthError::Refused {
            error: show(answer.error().as_ref()),
            description: answer.error_description().map(|d| show(d)),
        },
        RequestTokenError::Request(e) => e,
        RequestTokenError::Parse(e, _) => OAuthError::BadDocument {
            url: "the token endpoint's answer".into(),
            why: e.to_string(),
        },
        RequestTokenError::Other(why) => OAuthError::BadDocument {
            url: "the token endpoint's answer".into(),
            why: show(&why),
        },
    }
}
