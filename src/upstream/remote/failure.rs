//! Why a message could not be exchanged with a URL upstream, and the
//! error the request it belonged to is answered with: its `data.reason`
//! for programs, a sentence for people (never a token: URLs are shown
//! without their query, challenges as the server sent them).

use super::http::Http;
use crate::oauth::{Challenge, OAuthError};
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message, RequestId};
use reqwest::header::WWW_AUTHENTICATE;
use reqwest::{Response, StatusCode};
use std::error::Error as _;

/// Why a message could not be exchanged with the server.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    /// For programs, in the error's `data.reason`.
    pub(super) reason: &'static str,
    pub(super) status: Option<StatusCode>,
    /// For people: what happened, in a sentence.
    pub(super) detail: String,
}

impl Failure {
    pub(super) fn new(reason: &'static str, detail: impl Into<String>) -> Self {
        Self {
            reason,
            status: None,
            detail: detail.into(),
        }
    }

    /// A request that got no HTTP answer: connect, DNS, TLS, redirect, or
    /// the connection lost mid-body.
    pub(super) fn of(e: reqwest::Error, http: &Http) -> Self {
        // Its URL may carry a token in the query: the endpoint is shown
        // without it.
        let e = e.without_url();
        let reason = if e.is_connect() {
            "connect"
        } else if e.is_redirect() {
            "redirect"
        } else if e.is_timeout() {
            "timeout"
        } else {
            "transport"
        };
        Self::new(
            reason,
            format!("cannot reach {}: {}", http.shown(), chain(&e)),
        )
    }

    /// A request that could not be authorized: a login is needed (and how
    /// to do it), or the login failed.
    pub(super) fn login(e: &OAuthError, http: &Http) -> Self {
        let detail = match e {
            OAuthError::FreshTokenRefused => {
                let detail = format!(
                    "the server at {} refused the token a login just obtained; no new login within the quiet period",
                    http.shown()
                );
                return Self::new("unauthorized", detail);
            }
            OAuthError::LoginNeeded { .. } | OAuthError::LoginPending { .. } => e.to_string(),
            other => format!(
                "{} needs a login ({other}): run `mcp-chain login {}`",
                http.shown(),
                http.shown()
            ),
        };
        Self::new("login_needed", detail)
    }

    /// A response with a status that is not the answer.
    pub(super) fn status(response: &Response, http: &Http) -> Self {
        let status = response.status();
        let challenge = Challenge::bearer(
            response
                .headers()
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        );
        let wants_scope = challenge
            .as_ref()
            .is_some_and(Challenge::insufficient_scope);
        let (reason, what) = match status {
            StatusCode::UNAUTHORIZED if http.auth.is_some() => (
                "unauthorized",
                "refused every token mcp-chain obtained".to_owned(),
            ),
            StatusCode::UNAUTHORIZED => (
                "unauthorized",
                "refused the configured Authorization header".to_owned(),
            ),
            StatusCode::FORBIDDEN if wants_scope && http.auth.is_some() => {
                let scope = challenge
                    .as_ref()
                    .and_then(|c| c.scope.as_deref())
                    .unwrap_or("");
                let scope = mcp_chain_middleware::shown::shown(scope, 200);
                (
                    "insufficient_scope",
                    format!("still asks for more scope ({scope}) after mcp-chain authorized again"),
                )
            }
            StatusCode::FORBIDDEN => ("forbidden", "refused the credentials".to_owned()),
            s if s.is_server_error() => ("server_error", "failed".to_owned()),
            _ => ("http_status", "refused the message".to_owned()),
        };
        if let Some(challenge) = response.headers().get(WWW_AUTHENTICATE) {
            tracing::warn!(
                challenge = %String::from_utf8_lossy(challenge.as_bytes()),
                "the server asks for credentials"
            );
        }
        Self {
            reason,
            status: Some(status),
            detail: format!("the server at {} {what} (HTTP {status})", http.shown()),
        }
    }

    /// The error the request `id` is answered with.
    pub(super) fn answer(&self, id: RequestId) -> Message {
        let mut data = serde_json::json!({"layer": "upstream", "reason": self.reason});
        if let Some(status) = self.status {
            data["status"] = status.as_u16().into();
        }
        let error = ErrorObject::new(
            ErrorCode::CONNECTION_CLOSED,
            format!("mcp-chain: {}", self.detail),
        )
        .with_data(data);
        Message::error(Some(id), error)
    }
}

/// An error and its causes, in one line ("error sending request: tcp
/// connect error: Connection refused").
pub(super) fn chain(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause = cause.to_string();
        if !out.contains(&cause) {
            out += ": ";
            out += &cause;
        }
        source = source.and_then(|s| s.source());
    }
    out
}
