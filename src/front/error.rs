//! Every way the front turns a request down, as one type: each variant
//! knows its status, its headers and its body, so a handler says what went
//! wrong and nothing else. MCP clients read a JSON-RPC error (id `null`)
//! from the body where the protocol has one; the rest get a short text.

use super::guard::Refusal;
use super::reply::{self, Answer};
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, ALLOW, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::StatusCode;
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message, RequestId};

/// A request the front does not serve, and why.
#[derive(Debug, thiserror::Error)]
pub(super) enum FrontError {
    #[error("no MCP endpoint here")]
    NoEndpoint,
    #[error("a bearer token is required")]
    Unauthorized,
    /// OAuth: no token, or not one for this server; the challenge names
    /// the resource metadata (and why, for a bad token).
    #[error("{why}")]
    TokenRefused {
        why: &'static str,
        challenge: HeaderValue,
    },
    /// OAuth: a good token without the scopes needed.
    #[error("the token lacks the scope this server needs")]
    InsufficientScope { challenge: HeaderValue },
    #[error(
        "access tokens are not accepted in the query string; send them in the Authorization header"
    )]
    TokenInQuery,
    /// OAuth: the issuer's keys or its introspection cannot be had now.
    #[error("{0}")]
    AuthUnavailable(&'static str),
    /// A `Host` or `Origin` that is not allowed.
    #[error("{0}")]
    Forbidden(&'static str),
    /// An ambiguous or malformed request head.
    #[error("{0}")]
    BadHead(&'static str),
    #[error("unsupported MCP-Protocol-Version")]
    UnsupportedVersion,
    #[error("{0}")]
    NotAcceptable(&'static str),
    /// GET or DELETE without a session: there is nothing to open or end
    /// (what a 2026-07-28 server answers: it has neither).
    #[error("GET and DELETE need an Mcp-Session-Id")]
    NeedsSession,
    #[error("POST, GET or DELETE")]
    MethodNotAllowed,
    #[error("Mcp-Session-Id is required")]
    NoSessionId,
    /// No such session, or another caller's (which is not told).
    #[error("session not found")]
    SessionNotFound,
    #[error("no such legacy session")]
    NoLegacySession,
    #[error("too many sessions (front.max_sessions)")]
    TooManySessions,
    #[error("this caller holds as many sessions as it may (front.max_sessions_per_principal); end one first")]
    TooManyForCaller,
    /// `[state]` cannot count a caller's sessions, and fails closed.
    #[cfg_attr(not(feature = "state"), allow(dead_code))]
    #[error(
        "this caller's sessions cannot be counted now ([state] is unavailable); try again later"
    )]
    StateUnavailable,
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    #[error("the message is over proxy.max_message_bytes")]
    BodyTooLarge,
    #[error("the request body could not be read")]
    BodyUnreadable,
    #[error("{0}")]
    OverBudget(String),
    #[error("the message is too long")]
    MessageTooLong,
    #[error("parse error: {0}")]
    Parse(String),
    #[error("invalid JSON-RPC message: {0}")]
    InvalidMessage(String),
    #[error("a batch holds an invalid message")]
    InvalidBatch,
    #[error("one request or notification a POST")]
    NotOneMessage,
    #[error("a client sends no answers without a session")]
    AnswerWithoutSession,
    #[error("this session is initialized already")]
    AlreadyInitialized,
    #[error("Mcp-Session-Id is required (initialize first)")]
    InitializeFirst,
    #[error("request id {0} is already in use by a request of this session still waiting for its answer")]
    IdInUse(RequestId),
    #[error("the session has ended")]
    SessionEnded,
    #[error("the session ended before the server answered")]
    NoAnswer,
    /// 2026-07-28: routing headers that say something else than the body;
    /// answered as an error of the request itself (its id).
    #[error("Header mismatch: {why}")]
    Routing {
        id: Option<RequestId>,
        why: crate::mcp_http::routing::Mismatch,
    },
}

/// -32020: the routing headers do not say what the body says (2026-07-28).
const HEADER_MISMATCH: i64 = -32020;

impl FrontError {
    fn status(&self) -> StatusCode {
        match self {
            Self::NoEndpoint | Self::SessionNotFound | Self::NoLegacySession => {
                StatusCode::NOT_FOUND
            }
            Self::SessionEnded => StatusCode::NOT_FOUND,
            Self::Unauthorized | Self::TokenRefused { .. } => StatusCode::UNAUTHORIZED,
            Self::InsufficientScope { .. } => StatusCode::FORBIDDEN,
            Self::TokenInQuery => StatusCode::BAD_REQUEST,
            Self::AuthUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::NeedsSession | Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::TooManySessions | Self::OverBudget(_) | Self::StateUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::TooManyForCaller => StatusCode::TOO_MANY_REQUESTS,
            Self::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::BodyTooLarge | Self::MessageTooLong => StatusCode::PAYLOAD_TOO_LARGE,
            Self::NoAnswer => StatusCode::INTERNAL_SERVER_ERROR,
            Self::BadHead(_)
            | Self::UnsupportedVersion
            | Self::NoSessionId
            | Self::BodyUnreadable
            | Self::Parse(_)
            | Self::InvalidMessage(_)
            | Self::InvalidBatch
            | Self::NotOneMessage
            | Self::AnswerWithoutSession
            | Self::AlreadyInitialized
            | Self::InitializeFirst
            | Self::IdInUse(_)
            | Self::Routing { .. } => StatusCode::BAD_REQUEST,
        }
    }

    /// The JSON-RPC error code of a body MCP clients read, or `None` for a
    /// text body.
    fn rpc_code(&self) -> Option<ErrorCode> {
        match self {
            Self::Parse(_) => Some(ErrorCode::PARSE_ERROR),
            Self::OverBudget(_) => Some(ErrorCode::OVER_BUDGET),
            Self::NoAnswer => Some(ErrorCode::CONNECTION_CLOSED),
            Self::UnsupportedVersion
            | Self::NoSessionId
            | Self::SessionNotFound
            | Self::InvalidMessage(_)
            | Self::InvalidBatch
            | Self::NotOneMessage
            | Self::AnswerWithoutSession
            | Self::AlreadyInitialized
            | Self::InitializeFirst
            | Self::IdInUse(_) => Some(ErrorCode::INVALID_REQUEST),
            _ => None,
        }
    }

    /// Headers the answer needs beyond its body's.
    fn header(&self) -> Option<(HeaderName, HeaderValue)> {
        let value = HeaderValue::from_static;
        match self {
            Self::Unauthorized => Some((WWW_AUTHENTICATE, value("Bearer"))),
            Self::TokenRefused { challenge, .. } | Self::InsufficientScope { challenge } => {
                Some((WWW_AUTHENTICATE, challenge.clone()))
            }
            Self::AuthUnavailable(_) => Some((RETRY_AFTER, value("5"))),
            Self::NeedsSession => Some((ALLOW, value("POST"))),
            Self::MethodNotAllowed => Some((ALLOW, value("POST, GET, DELETE"))),
            Self::TooManySessions
            | Self::TooManyForCaller
            | Self::StateUnavailable
            | Self::OverBudget(_) => Some((RETRY_AFTER, value("5"))),
            _ => None,
        }
    }
}

impl From<Refusal> for FrontError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Unauthorized => Self::Unauthorized,
            Refusal::Forbidden(why) => Self::Forbidden(why),
            Refusal::BadRequest(why) => Self::BadHead(why),
        }
    }
}

impl FrontError {
    /// The HTTP answer that tells the client.
    pub(super) fn into_answer(self) -> Answer {
        let status = self.status();
        if let Self::Routing { id, .. } = &self {
            let error = ErrorObject::new(ErrorCode(HEADER_MISMATCH), self.to_string());
            let mut line = Vec::new();
            Message::error(id.clone(), error).write_line(&mut line);
            return reply::json(status, Bytes::from(line));
        }
        let mut answer = match self.rpc_code() {
            Some(code) => reply::rpc_error(status, code, &self.to_string()),
            None => reply::text(status, self.to_string()),
        };
        if let Some((name, value)) = self.header() {
            answer.headers_mut().insert(name, value);
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_carries_its_status_headers_and_body() {
        let answer = FrontError::Unauthorized.into_answer();
        assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(answer.headers()[WWW_AUTHENTICATE], "Bearer");
        let answer = FrontError::NeedsSession.into_answer();
        assert_eq!(answer.headers()[ALLOW], "POST");
        let answer = FrontError::SessionNotFound.into_answer();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND);
        assert_eq!(answer.headers()["content-type"], "application/json");
        let answer = FrontError::TooManySessions.into_answer();
        assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(answer.headers()[RETRY_AFTER], "5");
        assert_eq!(
            answer.headers()["content-type"],
            "text/plain; charset=utf-8"
        );
    }
}
