//! The HTTP front as an OAuth 2.1 resource server (`[front.oauth]`): it
//! publishes where its authorization server is (protected resource
//! metadata, RFC 9728: `metadata.rs`) and checks the access token of every
//! request before anything else reads it. A JWT is checked against the
//! issuer's published keys (`keys.rs`): an allowed algorithm (never
//! `none`; HMAC only with a configured secret), signature, `iss`, `aud`
//! naming this server (a token for another resource is refused), `exp` and
//! `nbf` within the leeway, the required scopes. An opaque token is asked
//! about at the introspection endpoint (RFC 7662: `introspect.rs`), its
//! answer kept no longer than the token lives. The static `[front] tokens`
//! keep working beside OAuth.
//!
//! The caller's token is never passed on: the server gets mcp-chain's own
//! credentials (its headers, or the OAuth client of its upstream).

#[cfg(feature = "remote")]
mod checked;
#[cfg(feature = "remote")]
mod introspect;
#[cfg(feature = "remote")]
mod keys;
pub(super) mod metadata;
mod principal;

pub(crate) use principal::Principal;
#[cfg(feature = "remote")]
pub(crate) use server::ResourceServer;

/// A body read to `cap` bytes and no further: `None` past the cap or on a
/// read error. The issuer decides how much it sends; the front reads only
/// what it would accept, whatever the answer's length says.
#[cfg(feature = "remote")]
async fn capped(mut response: reqwest::Response, cap: usize) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > cap {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}

/// Why a token is not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// Not a token this server accepts: the reason, for the client.
    Invalid(&'static str),
    /// A good token without the scopes needed.
    InsufficientScope,
    /// The issuer's keys or the introspection endpoint cannot be reached.
    Unavailable(&'static str),
}

/// Why the resource server cannot be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    /// The HTTP client that fetches the issuer's keys (its TLS, mostly).
    #[error("cannot set up the HTTP client for the issuer: {0}")]
    Client(String),
    #[cfg(not(feature = "remote"))]
    #[error("this mcp-chain was built without the `remote` feature, which [front.oauth] needs")]
    NoRemote,
}

/// Without the `remote` feature there is no HTTP client to fetch keys
/// with, and so no resource server: one cannot be made (`new` says why),
/// and nothing that holds one can be reached.
#[cfg(not(feature = "remote"))]
pub(crate) enum ResourceServer {}

#[cfg(not(feature = "remote"))]
impl ResourceServer {
    pub(crate) fn new(_: crate::config::FrontOAuth) -> Result<Self, SetupError> {
        Err(SetupError::NoRemote)
    }

    pub(crate) fn config(&self) -> &crate::config::FrontOAuth {
        match *self {}
    }

    pub(crate) async fn check(&self, _: &str) -> Result<std::sync::Arc<Principal>, Rejection> {
        match *self {}
    }
}

#[cfg(feature = "remote")]
mod server;
