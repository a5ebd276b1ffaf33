//! What a request is checked by before anything reads it: the guard (Host,
//! Origin, static tokens) and, with `[front.oauth]`, the OAuth resource
//! server. One snapshot, which a reload replaces whole: a request is
//! judged by the checks of one config, never half of each.
//!
//! A reload that leaves `[front.oauth]` as it was keeps the running
//! resource server (the issuer's keys and the introspection answers it
//! holds); a changed one starts a new one. One that cannot be started
//! (its HTTP client) leaves the front refusing every access token with
//! 503 until a reload that works: OAuth that was asked for is never
//! quietly off.

use super::guard::Guard;
use super::resource::ResourceServer;
use crate::config::FrontConfig;
use std::net::SocketAddr;
use std::sync::Arc;

/// The checks of one `[front]`.
pub(super) struct Checks {
    pub(super) guard: Guard,
    pub(super) oauth: OAuth,
}

/// The OAuth resource server, as `[front.oauth]` asks.
pub(super) enum OAuth {
    /// No `[front.oauth]`: static tokens (or nothing, on loopback).
    Off,
    On(Arc<ResourceServer>),
    /// Configured, but a reload could not set it up: every access token
    /// is refused (503), static tokens still let their holders in.
    Unusable,
}

impl Checks {
    /// Whether a client must send a bearer token.
    pub(super) fn asks_for_a_token(&self) -> bool {
        self.guard.asks_for_a_token() || !matches!(self.oauth, OAuth::Off)
    }

    /// The checks at start, with the resource server already made.
    pub(super) fn new(settings: &FrontConfig, listen: SocketAddr, oauth: OAuth) -> Self {
        Self {
            guard: Guard::new(settings, listen),
            oauth,
        }
    }

    /// The checks of `next`, taking what is unchanged from `self`.
    pub(super) fn reloaded(&self, next: &FrontConfig, listen: SocketAddr) -> Self {
        let oauth = match (next.oauth.as_deref(), &self.oauth) {
            (None, _) => OAuth::Off,
            (Some(wanted), OAuth::On(running)) if running.config() == wanted => {
                OAuth::On(running.clone())
            }
            (Some(wanted), _) => match ResourceServer::new(wanted.clone()) {
                Ok(server) => OAuth::On(Arc::new(server)),
                Err(e) => {
                    tracing::error!("front.oauth not applied: {e}; access tokens are refused until a reload applies it");
                    OAuth::Unusable
                }
            },
        };
        Self::new(next, listen, oauth)
    }
}

#[cfg(all(test, feature = "remote"))]
mod tests {
    use super::*;
    use crate::config::Config;

    fn front(oauth: &str) -> FrontConfig {
        let text = format!(
            "[front]\npublic_url = \"https://mcp.example.com/mcp\"\ntokens = [\"static-token-0123456789\"]\n{oauth}"
        );
        Config::from_toml_str(&text, "t.toml", |_| None)
            .expect("valid")
            .front
    }

    const OAUTH: &str =
        "[front.oauth]\nissuer = \"https://login.example.com\"\nrequired_scopes = [\"mcp:read\"]\n";

    fn server(checks: &Checks) -> &Arc<ResourceServer> {
        match &checks.oauth {
            OAuth::On(server) => server,
            OAuth::Off | OAuth::Unusable => panic!("no resource server"),
        }
    }

    #[test]
    fn a_reload_keeps_an_unchanged_resource_server_and_replaces_a_changed_one() {
        let listen = "127.0.0.1:8080".parse().expect("addr");
        let first = front(OAUTH);
        let oauth = ResourceServer::new(first.oauth.as_deref().expect("oauth").clone())
            .expect("a resource server");
        let running = Checks::new(&first, listen, OAuth::On(Arc::new(oauth)));

        // Another token, the same [front.oauth]: the same server, its
        // keys and introspection answers with it.
        let same = running.reloaded(&front(OAUTH), listen);
        assert!(Arc::ptr_eq(server(&running), server(&same)));

        let stricter = OAUTH.replace("mcp:read", "mcp:admin");
        let changed = same.reloaded(&front(&stricter), listen);
        assert!(!Arc::ptr_eq(server(&same), server(&changed)));
        assert_eq!(server(&changed).config().required_scopes, ["mcp:admin"]);

        let off = changed.reloaded(&front(""), listen);
        assert!(matches!(off.oauth, OAuth::Off));
    }
}
