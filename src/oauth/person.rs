//! A person signing in to mcp-chain's console at the front's authorization
//! server: the authorization code with PKCE, the person's own browser
//! sent to the authorization endpoint by the console and brought back to
//! the console's callback. mcp-chain is a public client there (a
//! `client_id` registered for the console, no secret); the access token it
//! gets is checked by the front's resource server like any other, so the
//! console trusts what the front trusts. The authorization server's
//! metadata is fetched once and checked as discovery checks it (its
//! issuer, PKCE S256, every endpoint a web page).

use super::discovery::{authorization_server, ServerMetadata};
use super::error::OAuthError;
use super::fetch::Fetch;
use super::register::{Registration, NONE};
use super::store::Tokens;
use super::tokens::{self, Client};
use oauth2::PkceCodeVerifier;
use tokio::sync::OnceCell;
use url::Url;

/// Signing people in at one authorization server, for one resource.
pub(crate) struct SignIn {
    fetch: Fetch,
    issuer: Url,
    client_id: String,
    redirect_uri: String,
    /// What the token is asked for (RFC 8707): the front's audience.
    resource: Url,
    scopes: Vec<String>,
    server: OnceCell<(ServerMetadata, Client)>,
}

/// A sign-in under way: where to send the person, the state that comes
/// back with them, and the PKCE verifier to trade the code with.
pub(crate) struct Started {
    pub(crate) url: Url,
    pub(crate) state: String,
    pub(crate) verifier: PkceCodeVerifier,
}

impl SignIn {
    pub(crate) fn new(
        issuer: Url,
        client_id: String,
        redirect_uri: String,
        resource: Url,
        scopes: Vec<String>,
    ) -> Result<Self, OAuthError> {
        Ok(Self {
            fetch: Fetch::new(None)?,
            issuer,
            client_id,
            redirect_uri,
            resource,
            scopes,
            server: OnceCell::new(),
        })
    }

    /// The server's metadata and the client there, found once (a failure
    /// is tried again at the next sign-in).
    async fn server(&self) -> Result<&(ServerMetadata, Client), OAuthError> {
        self.server
            .get_or_try_init(|| async {
                let metadata = authorization_server(&self.fetch, &self.issuer).await?;
                let registration = Registration {
                    client_id: self.client_id.clone(),
                    client_secret: None,
                    auth_method: NONE.to_owned(),
                    redirect_uri: Some(self.redirect_uri.clone()),
                    dynamic: false,
                    issuer: Some(self.issuer.to_string()),
                };
                let client = tokens::client(&registration, &metadata, Some(&self.redirect_uri))?;
                Ok((metadata, client))
            })
            .await
    }

    /// Where to send the person to sign in.
    pub(crate) async fn start(&self) -> Result<Started, OAuthError> {
        let (_, client) = self.server().await?;
        let (url, state, verifier) =
            tokens::authorization(client, &self.scopes, Some(&self.resource))?;
        Ok(Started {
            url,
            state: state.secret().clone(),
            verifier,
        })
    }

    /// Trades the code the person came back with for tokens, once its
    /// `iss` (RFC 9207) is known to be this server's.
    pub(crate) async fn finish(
        &self,
        code: String,
        iss: Option<&str>,
        verifier: PkceCodeVerifier,
    ) -> Result<Tokens, OAuthError> {
        let (metadata, client) = self.server().await?;
        let expected = metadata.issuer.trim_end_matches('/');
        let good = match iss {
            Some(iss) => iss.trim_end_matches('/') == expected,
            None => !metadata.authorization_response_iss_parameter_supported,
        };
        if !good {
            return Err(OAuthError::IssMismatch {
                expected: mcp_chain_middleware::shown::shown(expected, 200),
                found: iss.map(|f| mcp_chain_middleware::shown::shown(f, 200)),
            });
        }
        let resource = Some(&self.resource);
        tokens::code(&self.fetch, client, code, verifier, resource, &self.scopes).await
    }
}
