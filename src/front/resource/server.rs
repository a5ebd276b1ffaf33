//! The resource server itself (see the module above): the issuer's keys,
//! the checks of a JWT, introspection for opaque tokens, and the tokens
//! checked already.

use super::checked::Checked;
use super::introspect;
use super::introspect::Introspector;
use super::keys::Keys;
use super::{Principal, Rejection, SetupError};
use crate::config::FrontOAuth;
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// How long the issuer and the introspection endpoint get to answer.
const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct ResourceServer {
    config: FrontOAuth,
    keys: Keys,
    hmac: Option<DecodingKey>,
    introspector: Option<Introspector>,
    /// Tokens checked already, by hash, until they expire.
    checked: Checked,
}

/// The claims of an access token mcp-chain reads.
#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: Option<String>,
    exp: Option<u64>,
    scope: Option<String>,
    scp: Option<Scp>,
    client_id: Option<String>,
    azp: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Scp {
    One(String),
    Many(Vec<String>),
}

impl ResourceServer {
    pub(crate) fn new(config: FrontOAuth) -> Result<Self, SetupError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(ISSUER_TIMEOUT)
            .tls_backend_rustls()
            .build()
            .map_err(|e| SetupError::Client(e.to_string()))?;
        let hmac = config
            .hmac_secret
            .as_deref()
            .map(|s| DecodingKey::from_secret(s.as_bytes()));
        let introspector = config
            .introspection
            .clone()
            .map(|i| Introspector::new(i, http.clone()));
        Ok(Self {
            keys: Keys::new(config.issuer.clone(), http),
            hmac,
            introspector,
            config,
            checked: Checked::default(),
        })
    }

    pub(crate) fn config(&self) -> &FrontOAuth {
        &self.config
    }

    /// Who `token` belongs to, if it is good for this server. A token
    /// checked before is found by its hash until it expires (a JWT's
    /// signature is checked once, not on every request).
    pub(crate) async fn check(&self, token: &str) -> Result<Arc<Principal>, Rejection> {
        let key = Checked::key(token);
        let principal = match self.checked.recall(&key) {
            Some(principal) => principal,
            None => {
                let (principal, at_most) = match decode_header(token) {
                    Ok(header) => (self.jwt(token, header).await?, None),
                    Err(_) => match &self.introspector {
                        // An introspection answer is believed briefly.
                        Some(introspector) => (
                            introspector.check(token, &self.config).await?,
                            Some(introspect::KEEP_AT_MOST),
                        ),
                        None => return Err(Rejection::Invalid("not a token this server accepts")),
                    },
                };
                self.checked.remember(key, principal, at_most)
            }
        };
        if principal.has_scopes(&self.config.required_scopes) {
            Ok(principal)
        } else {
            Err(Rejection::InsufficientScope)
        }
    }

    async fn jwt(&self, token: &str, header: jsonwebtoken::Header) -> Result<Principal, Rejection> {
        // RFC 7515 §4.1.11: a token whose `crit` names an extension the
        // recipient does not understand is invalid; mcp-chain understands
        // none (and an empty `crit` is not allowed at all).
        if header.crit.is_some() {
            return Err(Rejection::Invalid(
                "the token names critical extensions this server does not understand",
            ));
        }
        let alg = header.alg;
        let allowed = self
            .config
            .algorithms
            .iter()
            .any(|a| Algorithm::from_str(a).is_ok_and(|a| a == alg));
        if !allowed {
            return Err(Rejection::Invalid("the token's algorithm is not accepted"));
        }
        let hmac = matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512);
        let key = match (&self.hmac, hmac) {
            (Some(secret), true) => std::sync::Arc::new(secret.clone()),
            (None, true) => {
                return Err(Rejection::Invalid("the token's algorithm is not accepted"))
            }
            (_, false) => self.keys.find(header.kid.as_deref()).await?,
        };
        let mut validation = Validation::new(alg);
        let issuer = self.config.issuer.as_str().trim_end_matches('/');
        validation.set_issuer(&[issuer.to_owned(), format!("{issuer}/")]);
        let audience = self.config.audience.trim_end_matches('/');
        validation.set_audience(&[audience.to_owned(), format!("{audience}/")]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = self.config.leeway.as_secs();
        let data = decode::<Claims>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            Rejection::Invalid(match e.kind() {
                ErrorKind::ExpiredSignature => "the token has expired",
                ErrorKind::ImmatureSignature => "the token is not valid yet",
                ErrorKind::InvalidIssuer => "the token is from another issuer",
                ErrorKind::InvalidAudience => "the token is for another resource",
                ErrorKind::InvalidSignature => "the token's signature does not verify",
                ErrorKind::MissingRequiredClaim(_) => "the token lacks exp, iss or aud",
                _ => "the token cannot be read",
            })
        })?;
        let claims = data.claims;
        let scopes = match (claims.scope, claims.scp) {
            (Some(scope), _) => scope.split_ascii_whitespace().map(str::to_owned).collect(),
            (None, Some(Scp::One(s))) => s.split_ascii_whitespace().map(str::to_owned).collect(),
            (None, Some(Scp::Many(v))) => v,
            (None, None) => Vec::new(),
        };
        let client_id = claims.client_id.or(claims.azp);
        let subject = claims
            .sub
            .or_else(|| client_id.clone())
            .ok_or(Rejection::Invalid("the token names no subject"))?;
        Ok(Principal {
            subject,
            client_id,
            scopes,
            issuer: claims.iss,
            expires_at: claims.exp,
        })
    }
}
