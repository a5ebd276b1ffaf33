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

/// A server of a gateway (`[servers.NAME]`), as the layers of its own
/// chain know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The table's name in the config.
    pub name: String,
    /// The server as grants and switches name it: its program and a
    /// fingerprint of its command line (never its arguments), or its URL
    /// without query or user info; the same as a single-server mcp-chain
    /// in front of it uses.
    pub identity: String,
}

impl fmt::Display for SessionInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "session {} from {}", self.id, self.client)
    }
}
