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
    /// What a session is owned by: the same subject of the same issuer
    /// holding the same scopes, whichever of its tokens it presents. The
    /// scopes are part of it because a session's layers were chosen for
    /// them (`when`, `unless`): a token with other scopes is served by
    /// sessions of its own (a 2026-07-28 pool of its own; a 2025-era
    /// session it did not open is unknown to it, 404, and the client
    /// starts another), so no request is judged by another token's scopes.
    pub(crate) fn owner_key(&self) -> String {
        let mut scopes: Vec<&str> = self.scopes.iter().map(String::as_str).collect();
        scopes.sort_unstable();
        scopes.dedup();
        format!(
            "{}\u{0}{}\u{0}{}",
            self.issuer,
            self.subject,
            scopes.join(" ")
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(subject: &str, scopes: &[&str]) -> Principal {
        Principal {
            subject: subject.into(),
            client_id: None,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            issuer: "https://as.example.com".into(),
            expires_at: None,
        }
    }

    #[test]
    fn an_owner_is_a_subject_with_its_scopes_in_any_order() {
        let admin = principal("alice", &["mcp:read", "mcp:admin"]);
        let same = principal("alice", &["mcp:admin", "mcp:read", "mcp:read"]);
        let reader = principal("alice", &["mcp:read"]);
        let bob = principal("bob", &["mcp:read", "mcp:admin"]);
        assert_eq!(admin.owner_key(), same.owner_key());
        assert_ne!(admin.owner_key(), reader.owner_key());
        assert_ne!(admin.owner_key(), bob.owner_key());
        // A subject cannot forge another's key with separators in its name.
        let forged = principal("alice\u{0}mcp:admin", &[]);
        assert_ne!(
            forged.owner_key(),
            principal("alice", &["mcp:admin"]).owner_key()
        );
    }
}
