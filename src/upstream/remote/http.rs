//! The HTTP side of a URL upstream: one pooled client (connections kept
//! alive and reused, TLS verified against the platform's roots and
//! `ca_file`), the configured headers on every request, the session's
//! headers once there is a session, and redirects followed only within the
//! server's origin, so credentials never reach another host. A failure is a
//! [`Failure`]: what the request it belonged to is answered with.
//!
//! Unless the config sets its own `Authorization` header, a server that
//! answers 401 (or 403 `insufficient_scope`) gets OAuth: the request is
//! sent again once mcp-chain holds a token it accepts (see `oauth::Auth`),
//! and the client never sees the challenge.

use super::failure::chain;
pub(super) use super::failure::Failure;
use super::session::State;
use crate::config::UrlConfig;
use crate::mcp_http::{Routing, EVENT_STREAM, LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
use crate::oauth::{Auth, Challenge};
use crate::upstream::StartError;
use bytes::Bytes;
use reqwest::header::{
    HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONNECTION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use reqwest::{redirect, Certificate, Method, RequestBuilder, Response, StatusCode, Url};
use std::sync::Arc;
use std::time::Duration;

/// Redirects followed at most, all within the origin.
const MAX_REDIRECTS: usize = 5;

/// From this size on, a POST's connection is not kept for reuse: a server
/// that refuses a big body (413, 400) before reading it all closes the
/// connection with bytes unread, and the next request sent on it would be
/// reset.
const LARGE_BODY_BYTES: usize = 1024 * 1024;

/// How long a TCP (and TLS) connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Reaches the server's MCP endpoint.
#[derive(Debug)]
pub(super) struct Http {
    client: reqwest::Client,
    url: Url,
    /// The configured headers, marked sensitive (never in a log).
    headers: HeaderMap,
    /// OAuth, unless the config gives its own `Authorization`.
    pub(super) auth: Option<Arc<Auth>>,
}

/// What one request has had renewed. A refused request gets at most one
/// renewal of its token (a refresh, or a login where there is none to
/// refresh) and one step-up, each followed by one retry: a server that
/// refuses every token cannot make one request refresh or log in again
/// and again.
#[derive(Debug, Default)]
pub(super) struct Renewals {
    token: bool,
    scope: bool,
}

impl Http {
    pub(super) fn new(config: &UrlConfig) -> Result<Self, StartError> {
        // reqwest leaves the choice of rustls' crypto to the binary; a
        // second install (a test) is refused and harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let origin = config.url.origin();
        let redirects = redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else if attempt.url().origin() != origin {
                let to = attempt.url().origin().ascii_serialization();
                attempt.error(format!(
                    "a redirect to another origin ({to}) was not followed"
                ))
            } else {
                attempt.follow()
            }
        });
        let mut builder = reqwest::Client::builder()
            .redirect(redirects)
            .connect_timeout(CONNECT_TIMEOUT)
            .tls_backend_rustls();
        if let Some(path) = &config.ca_file {
            let pem = std::fs::read(path).map_err(|e| StartError::ca_file(path, e))?;
            let certs =
                Certificate::from_pem_bundle(&pem).map_err(|e| StartError::ca_file(path, e))?;
            builder = builder.tls_certs_merge(certs);
        }
        let client = builder.build().map_err(|e| StartError::Client {
            what: "the HTTP client",
            why: chain(&e),
        })?;
        let headers: HeaderMap = config.headers.iter().cloned().collect();
        let auth = match headers.contains_key(AUTHORIZATION) {
            true => None,
            // Without a state directory there is nowhere to keep tokens:
            // the server is reached without OAuth, and a 401 says so.
            false => match Auth::shared(&config.url, &config.oauth, config.ca_file.as_deref()) {
                Ok(auth) => Some(auth),
                Err(e) => {
                    tracing::warn!(error = %e, "OAuth is not available for this server");
                    None
                }
            },
        };
        Ok(Self {
            client,
            url: config.url.clone(),
            headers,
            auth,
        })
    }

    /// Sends what `build` makes, with the OAuth token when there is one;
    /// a request the server refuses for want of one is sent again once
    /// the token is renewed.
    async fn send(&self, build: impl Fn() -> RequestBuilder) -> Result<Response, Failure> {
        let mut renewals = Renewals::default();
        loop {
            let sent = self.authorization().await;
            let mut request = build();
            if let Some(header) = &sent {
                request = request.header(AUTHORIZATION, header.clone());
            }
            let response = request.send().await.map_err(|e| Failure::of(e, self))?;
            if response.status().is_success() {
                if let (Some(auth), Some(sent)) = (&self.auth, &sent) {
                    auth.accepted(sent);
                }
            }
            if !self
                .renewed(
                    response.status(),
                    response.headers(),
                    sent.as_ref(),
                    &mut renewals,
                )
                .await?
            {
                return Ok(response);
            }
        }
    }

    /// The OAuth `Authorization` header for a request now, if any.
    pub(super) async fn authorization(&self) -> Option<HeaderValue> {
        match &self.auth {
            Some(auth) => auth.header().await,
            None => None,
        }
    }

    /// After an answer of `status` to a request sent with `sent`: whether
    /// OAuth renewed the token and the request should be sent again. `Err`
    /// when the server wants a login that could not be had.
    pub(super) async fn renewed(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        sent: Option<&HeaderValue>,
        renewals: &mut Renewals,
    ) -> Result<bool, Failure> {
        let Some(auth) = &self.auth else {
            return Ok(false);
        };
        if !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            return Ok(false);
        }
        let values = headers.get_all(WWW_AUTHENTICATE);
        let challenge = Challenge::bearer(values.iter().filter_map(|v| v.to_str().ok()));
        let step_up = challenge
            .as_ref()
            .is_some_and(Challenge::insufficient_scope);
        if status == StatusCode::FORBIDDEN && !step_up {
            return Ok(false);
        }
        let used = match step_up {
            true => &mut renewals.scope,
            false => &mut renewals.token,
        };
        if std::mem::replace(used, true) {
            return Ok(false);
        }
        auth.refused(step_up, challenge.as_ref(), sent)
            .await
            .map_err(|e| Failure::login(&e, self))?;
        Ok(true)
    }

    /// The endpoint, as logs and errors show it: no user info, no query.
    pub(super) fn shown(&self) -> String {
        format!(
            "{}{}",
            self.url.origin().ascii_serialization(),
            self.url.path()
        )
    }

    fn request(
        &self,
        method: Method,
        session: &State,
        own_version: Option<&HeaderValue>,
    ) -> RequestBuilder {
        let mut request = self
            .client
            .request(method, self.url.clone())
            .headers(self.headers.clone());
        if let Some(id) = &session.id {
            request = request.header(SESSION_ID, id.clone());
        }
        // The session's version, else (no handshake: 2026-07-28) the one
        // the message names for itself.
        if let Some(version) = session.version.as_ref().or(own_version) {
            request = request.header(PROTOCOL_VERSION, version.clone());
        }
        request
    }

    /// POSTs one message, with its routing headers.
    pub(super) async fn post(
        &self,
        body: Bytes,
        session: &State,
        routing: &Routing,
    ) -> Result<Response, Failure> {
        self.send(|| {
            let mut request = self.request(Method::POST, session, routing.version.as_ref());
            for (name, value) in &routing.headers {
                request = request.header(name, value);
            }
            if body.len() >= LARGE_BODY_BYTES {
                request = request.header(CONNECTION, "close");
            }
            request
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone())
        })
        .await
    }

    /// POSTs one message to a legacy server's message endpoint.
    pub(super) async fn post_to(&self, endpoint: &Url, body: Bytes) -> Result<Response, Failure> {
        self.send(|| {
            let mut request = self.client.post(endpoint.clone());
            if body.len() >= LARGE_BODY_BYTES {
                request = request.header(CONNECTION, "close");
            }
            request
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone())
        })
        .await
    }

    /// Where a legacy server's `endpoint` event points, resolved against the
    /// SSE URL: only within its origin (the credentials go there too).
    pub(super) fn endpoint(&self, event: &str) -> Result<Url, Failure> {
        let endpoint = self.url.join(event.trim()).map_err(|e| {
            Failure::new(
                "endpoint",
                format!("the server's endpoint event is not a URL: {e}"),
            )
        })?;
        if endpoint.origin() != self.url.origin() {
            let to = endpoint.origin().ascii_serialization();
            return Err(Failure::new(
                "endpoint",
                format!(
                    "the server's endpoint is on another origin ({to}); not sending messages there"
                ),
            ));
        }
        Ok(endpoint)
    }

    /// Opens (or resumes, after `last_event_id`) an event stream.
    pub(super) async fn get(
        &self,
        session: &State,
        last_event_id: Option<&str>,
    ) -> Result<Response, Failure> {
        let last_event_id = last_event_id.and_then(|id| HeaderValue::from_str(id).ok());
        self.send(|| {
            let request = self
                .request(Method::GET, session, None)
                .header(ACCEPT, EVENT_STREAM);
            match &last_event_id {
                Some(id) => request.header(LAST_EVENT_ID, id.clone()),
                None => request,
            }
        })
        .await
    }

    /// Ends the session (a server may answer 405: it ends sessions itself).
    pub(super) async fn delete(&self, session: &State) -> Result<StatusCode, Failure> {
        let response = self
            .send(|| self.request(Method::DELETE, session, None))
            .await;
        response.map(|r| r.status())
    }
}

/// Whether a response is an event stream.
pub(super) fn is_event_stream(response: &Response) -> bool {
    content_type(response).is_some_and(|t| t.eq_ignore_ascii_case(EVENT_STREAM))
}

/// A response's media type, without parameters.
pub(super) fn content_type(response: &Response) -> Option<&str> {
    let value = response.headers().get(CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next().unwrap_or(value).trim())
}
