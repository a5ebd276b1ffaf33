//! The issuer's signing keys: its metadata (RFC 8414, then OpenID
//! discovery) names its `jwks_uri`; the key set is fetched once and kept.
//! A token naming a key id the set lacks makes one refetch (a rotated key),
//! at most once per [`REFETCH_EVERY`], so a client sending made-up key ids
//! cannot make the front hammer the identity provider; the bound holds
//! while fetches fail too (a failed try counts as a fetch, and until the
//! next try tokens are refused as the issuer unreachable).

use super::Rejection;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::DecodingKey;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;
use url::Url;

/// Least time between two fetches of the key set.
const REFETCH_EVERY: Duration = Duration::from_secs(60);

/// The most of a metadata or key set document read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

#[derive(Deserialize)]
struct IssuerMetadata {
    issuer: String,
    jwks_uri: Option<String>,
}

pub(super) struct Keys {
    issuer: Url,
    http: reqwest::Client,
    held: Mutex<Held>,
    /// One fetch at a time; when the last one was tried (done or failed).
    fetching: tokio::sync::Mutex<Option<Instant>>,
}

#[derive(Default)]
struct Held {
    by_kid: HashMap<String, Arc<DecodingKey>>,
    /// Keys without a `kid` (a set of one, usually).
    unnamed: Vec<Arc<DecodingKey>>,
    fetched: Option<Instant>,
}

impl Keys {
    pub(super) fn new(issuer: Url, http: reqwest::Client) -> Self {
        Self {
            issuer,
            http,
            held: Mutex::new(Held::default()),
            fetching: tokio::sync::Mutex::new(None),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key a token names (`kid`), fetching the set when it is not
    /// known (and not fetched within [`REFETCH_EVERY`]).
    pub(super) async fn find(&self, kid: Option<&str>) -> Result<Arc<DecodingKey>, Rejection> {
        if let Some(key) = self.lookup(kid) {
            return Ok(key);
        }
        let mut tried = self.fetching.lock().await;
        if let Some(key) = self.lookup(kid) {
            return Ok(key);
        }
        let recent = tried.is_some_and(|at| at.elapsed() < REFETCH_EVERY);
        if !recent {
            *tried = Some(Instant::now());
            self.fetch().await?;
        } else if self.held().fetched.is_none() {
            return Err(Rejection::Unavailable(
                "the issuer's keys could not be fetched; the next try is within a minute",
            ));
        }
        self.lookup(kid)
            .ok_or(Rejection::Invalid("the token's key is not the issuer's"))
    }

    fn lookup(&self, kid: Option<&str>) -> Option<Arc<DecodingKey>> {
        let held = self.held();
        match kid {
            Some(kid) => held.by_kid.get(kid).cloned(),
            None if held.unnamed.len() + held.by_kid.len() == 1 => held
                .unnamed
                .first()
                .or_else(|| held.by_kid.values().next())
                .cloned(),
            None => None,
        }
    }

    async fn fetch(&self) -> Result<(), Rejection> {
        let jwks_uri = self.jwks_uri().await?;
        let set: JwkSet = self.document(&jwks_uri).await?;
        let mut held = Held {
            fetched: Some(Instant::now()),
            ..Held::default()
        };
        for jwk in &set.keys {
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            match &jwk.common.key_id {
                Some(kid) => {
                    held.by_kid.insert(kid.clone(), Arc::new(key));
                }
                None => held.unnamed.push(Arc::new(key)),
            }
        }
        tracing::info!(keys = set.keys.len(), "fetched the issuer's signing keys");
        *self.held() = held;
        Ok(())
    }

    async fn jwks_uri(&self) -> Result<Url, Rejection> {
        let path = self.issuer.path().trim_end_matches('/');
        let mut places = Vec::new();
        for name in ["oauth-authorization-server", "openid-configuration"] {
            let mut url = self.issuer.clone();
            url.set_path(&format!("/.well-known/{name}{path}"));
            places.push(url);
        }
        let mut appended = self.issuer.clone();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        places.push(appended);
        for place in places {
            let Ok(metadata) = self.document::<IssuerMetadata>(&place).await else {
                continue;
            };
            if metadata.issuer.trim_end_matches('/') != self.issuer.as_str().trim_end_matches('/') {
                tracing::warn!("the issuer's metadata names another issuer; not used");
                continue;
            }
            if let Some(uri) = metadata.jwks_uri.and_then(|u| Url::parse(&u).ok()) {
                if crate::config::is_secure(&uri) {
                    return Ok(uri);
                }
            }
        }
        Err(Rejection::Unavailable("the issuer's keys cannot be found"))
    }

    async fn document<T: for<'de> Deserialize<'de>>(&self, url: &Url) -> Result<T, Rejection> {
        let unavailable = || Rejection::Unavailable("the issuer cannot be reached");
        let response = self
            .http
            .get(url.clone())
            .send()
            .await
            .map_err(|_| unavailable())?;
        if !response.status().is_success() {
            return Err(unavailable());
        }
        let body = super::capped(response, MAX_DOCUMENT_BYTES)
            .await
            .ok_or_else(unavailable)?;
        serde_json::from_slice(&body).map_err(|_| unavailable())
    }
}
