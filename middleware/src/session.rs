//! Who a session of the HTTP front serves. Over stdio there is one client
//! and nothing to tell apart; served over HTTP, each session gets its own
//! chain instance, and a layer that records what happened (the audit) says
//! which session, which client and which token it was.

use std::fmt;

/// One client session of the HTTP front.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The session id's first 8 hex digits: enough to tell sessions apart
    /// in an audit file and the logs, not enough to use one.
    pub id: String,
    /// The address the session was opened from (`ip:port`).
    pub client: String,
    /// Which configured token let it in: its name, or its position from 1.
    /// Never the token itself.
    pub token: Option<String>,
    /// Who opened it, when an OAuth access token let it in (the front as
    /// a resource server). Never the token itself.
    pub principal: Option<Principal>,
}

/// The caller an access token names, as the layers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub subject: String,
    pub client_id: Option<String>,
    pub issuer: String,
    pub scopes: Vec<String>,
}

impl fmt::Display for SessionInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "session {} from {}", self.id, self.client)
    }
}
