//! Who a request comes from, once its token is checked: what the layers,
//! the audit and session ownership see. Never the token.

use std::fmt;

/// The caller of a request let in by an access token.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Principal {
    /// `sub`, else the client id.
    pub(crate) subject: String,
    pub(crate) client_id: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) issuer: String,
    /// `exp`, seconds since the epoch.
    pub(crate) expires_at: Option<u64>,
}

impl Principal {
    /// What a session is owned by: the same subject of the same issuer,
    /// whichever of its tokens it presents.
    pub(crate) fn owner_key(&self) -> String {
        format!("{}\u{0}{}", self.issuer, self.subject)
    }

    pub(crate) fn has_scopes(&self, needed: &[String]) -> bool {
        needed.iter().all(|n| self.scopes.contains(n))
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("subject", &self.subject)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("issuer", &self.issuer)
            .finish()
    }
}
