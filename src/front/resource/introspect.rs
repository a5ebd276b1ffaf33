//! Opaque access tokens, asked about at the authorization server's
//! introspection endpoint (RFC 7662). An answer is kept (see `checked`)
//! for at most [`KEEP_AT_MOST`] and never past the token's `exp`, so a
//! revoked token stops working within that.

use super::{Principal, Rejection};
use crate::config::{FrontOAuth, Introspection};
use serde::Deserialize;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest an introspection answer is believed.
pub(super) const KEEP_AT_MOST: Duration = Duration::from_secs(60);

/// The most of an introspection answer read (a hostile or broken endpoint
/// may send without end: it is read to this and no further).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

#[derive(Deserialize)]
struct Answer {
    active: bool,
    scope: Option<String>,
    sub: Option<String>,
    client_id: Option<String>,
    exp: Option<u64>,
    iss: Option<String>,
    aud: Option<Audience>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

pub(super) struct Introspector {
    endpoint: Introspection,
    http: reqwest::Client,
}

impl Introspector {
    pub(super) fn new(endpoint: Introspection, http: reqwest::Client) -> Self {
        Self { endpoint, http }
    }

    pub(super) async fn check(
        &self,
        token: &str,
        config: &FrontOAuth,
    ) -> Result<Principal, Rejection> {
        self.ask(token, config).await
    }

    async fn ask(&self, token: &str, config: &FrontOAuth) -> Result<Principal, Rejection> {
        let unavailable = Rejection::Unavailable("the introspection endpoint cannot be reached");
        let mut form = vec![("token", token), ("token_type_hint", "access_token")];
        let mut request = self.http.post(self.endpoint.url.clone());
        match &self.endpoint.client_secret {
            Some(secret) => request = request.basic_auth(&self.endpoint.client_id, Some(secret)),
            None => form.push(("client_id", &self.endpoint.client_id)),
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let response = request
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|_| unavailable.clone())?;
        if !response.status().is_success() {
            return Err(unavailable);
        }
        let bytes = super::capped(response, MAX_ANSWER_BYTES)
            .await
            .ok_or_else(|| unavailable.clone())?;
        let answer: Answer = serde_json::from_slice(&bytes).map_err(|_| unavailable.clone())?;
        if !answer.active {
            return Err(Rejection::Invalid("the token is not active"));
        }
        let issuer = config.issuer.as_str().trim_end_matches('/');
        if let Some(iss) = &answer.iss {
            if iss.trim_end_matches('/') != issuer {
                return Err(Rejection::Invalid("the token is from another issuer"));
            }
        }
        let audience = config.audience.trim_end_matches('/');
        let names_us = |a: &String| a.trim_end_matches('/') == audience;
        match &answer.aud {
            None => {}
            Some(Audience::One(a)) if names_us(a) => {}
            Some(Audience::Many(all)) if all.iter().any(names_us) => {}
            Some(_) => return Err(Rejection::Invalid("the token is for another resource")),
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if answer
            .exp
            .is_some_and(|exp| exp.saturating_add(config.leeway.as_secs()) < now)
        {
            return Err(Rejection::Invalid("the token has expired"));
        }
        let subject = answer
            .sub
            .clone()
            .or_else(|| answer.client_id.clone())
            .ok_or(Rejection::Invalid("the token names no subject"))?;
        Ok(Principal {
            subject,
            client_id: answer.client_id,
            scopes: answer
                .scope
                .map(|s| s.split_ascii_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            issuer: answer.iss.unwrap_or_else(|| issuer.to_owned()),
            expires_at: answer.exp,
        })
    }
}
