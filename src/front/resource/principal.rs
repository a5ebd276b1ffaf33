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
    /// holding the same of the scopes `named` (those some `when` or
    /// `unless` names), whichever of its tokens it presents. Those scopes
    /// are part of it because a session's layers were chosen by them: a
    /// token that would be given other layers is served by sessions of
    /// its own (a 2026-07-28 pool of its own; a 2025-era session it did
    /// not open is unknown to it, 404, and the client starts another), so
    /// no request is judged by another token's scopes. A token with other
    /// scopes that no rule reads (a refresh, a step-up) goes on.
    pub(crate) fn owner_key(&self, named: &std::collections::BTreeSet<String>) -> String {
        let mut held: Vec<&str> = self
            .scopes
            .iter()
            .filter(|s| named.contains(*s))
            .map(String::as_str)
            .collect();
        held.sort_unstable();
        held.dedup();
        format!(
            "{}\u{0}{}\u{0}{}",
            self.issuer,
            self.subject,
            held.join(" ")
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
    use std::collections::BTreeSet;

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
    fn an_owner_is_a_subject_with_the_scopes_rules_read() {
        let named: BTreeSet<String> = ["mcp:admin".to_owned()].into();
        let admin = principal("alice", &["mcp:read", "mcp:admin"]);
        let same = principal("alice", &["mcp:admin", "mcp:write", "mcp:read"]);
        let reader = principal("alice", &["mcp:read"]);
        let bob = principal("bob", &["mcp:read", "mcp:admin"]);
        assert_eq!(
            admin.owner_key(&named),
            same.owner_key(&named),
            "a scope no rule reads"
        );
        assert_ne!(admin.owner_key(&named), reader.owner_key(&named));
        assert_ne!(admin.owner_key(&named), bob.owner_key(&named));
        let none = BTreeSet::new();
        assert_eq!(
            admin.owner_key(&none),
            reader.owner_key(&none),
            "no rule reads scopes"
        );
        // A subject cannot forge another's key with separators in its name.
        let forged = principal("alice\u{0}mcp:admin", &[]);
        assert_ne!(
            forged.owner_key(&named),
            principal("alice", &["mcp:admin"]).owner_key(&named)
        );
    }
}
