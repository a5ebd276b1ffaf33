//! Who may talk to the front: checked on every request before anything
//! else reads it. A browser page on another site must not reach a server
//! on loopback (DNS rebinding: `Host` names the attacker's domain; a
//! cross-site fetch: `Origin` names it), and off loopback a request needs
//! one of the configured bearer tokens.

use crate::config::FrontConfig;
use hyper::header::{AUTHORIZATION, HOST, ORIGIN};
use hyper::http::request::Parts;
use std::net::SocketAddr;
use subtle::ConstantTimeEq;

/// Why a request is turned away.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// 401: no token, or not one of ours.
    Unauthorized,
    /// 403: a `Host` or `Origin` that is not allowed.
    Forbidden(&'static str),
}

/// The checks, compiled from `[front]` and the address listened on.
#[derive(Debug)]
pub(super) struct Guard {
    tokens: Vec<Vec<u8>>,
    /// `None`: any host.
    hosts: Option<Vec<String>>,
    origins: Vec<String>,
    /// Loopback origins (any port) are allowed.
    loopback_origins: bool,
}

const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Guard {
    pub(super) fn new(front: &FrontConfig, listen: SocketAddr) -> Self {
        let loopback = listen.ip().is_loopback();
        let hosts = match (front.allowed_hosts.is_empty(), loopback) {
            (false, _) => Some(front.allowed_hosts.clone()),
            (true, true) => Some(LOOPBACK_NAMES.map(str::to_owned).to_vec()),
            (true, false) => None,
        };
        Self {
            tokens: front
                .tokens
                .iter()
                .map(|t| t.secret.as_bytes().to_vec())
                .collect(),
            hosts,
            origins: front.allowed_origins.clone(),
            loopback_origins: loopback,
        }
    }

    /// Checks a request's head. `Ok` carries which token let it in (its
    /// index in `[front] tokens`); never the token itself.
    pub(super) fn check(&self, head: &Parts) -> Result<Option<usize>, Refusal> {
        if let Some(hosts) = &self.hosts {
            let host = head.headers.get(HOST).and_then(|h| h.to_str().ok());
            let name = host.map(host_name).unwrap_or_default().to_ascii_lowercase();
            if !hosts.contains(&name) {
                return Err(Refusal::Forbidden("this Host is not allowed"));
            }
        }
        if let Some(origin) = head.headers.get(ORIGIN) {
            let origin = origin.to_str().unwrap_or_default();
            if !self.origin_allowed(origin) {
                return Err(Refusal::Forbidden("this Origin is not allowed"));
            }
        }
        if self.tokens.is_empty() {
            return Ok(None);
        }
        let given = head
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .ok_or(Refusal::Unauthorized)?;
        // Every token is compared, each in constant time, so the time taken
        // says nothing about which one came close.
        let mut found = None;
        for (n, token) in self.tokens.iter().enumerate() {
            if bool::from(token.as_slice().ct_eq(given)) && found.is_none() {
                found = Some(n);
            }
        }
        found.map(Some).ok_or(Refusal::Unauthorized)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        if self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return true;
        }
        let Some(rest) = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
        else {
            return false;
        };
        self.loopback_origins && LOOPBACK_NAMES.contains(&host_name(rest))
    }
}

/// `host[:port]` without the port (an IPv6 address keeps its brackets).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(headers: &[(&str, &str)]) -> Parts {
        let mut req = hyper::Request::builder().uri("/mcp");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(()).expect("a request").into_parts().0
    }

    fn guard(tokens: &[&str], listen: &str) -> Guard {
        let front = FrontConfig {
            tokens: tokens
                .iter()
                .map(|t| crate::config::Token {
                    name: String::new(),
                    secret: t.to_string(),
                })
                .collect(),
            allowed_origins: vec!["https://app.example.com".into()],
            ..FrontConfig::default()
        };
        Guard::new(&front, listen.parse().expect("an address"))
    }

    #[test]
    fn loopback_takes_loopback_hosts_and_origins_only() {
        let g = guard(&[], "127.0.0.1:8080");
        assert_eq!(g.check(&head(&[("host", "localhost:8080")])), Ok(None));
        assert_eq!(g.check(&head(&[("host", "[::1]:8080")])), Ok(None));
        let rebound = head(&[("host", "evil.example:8080")]);
        assert!(matches!(g.check(&rebound), Err(Refusal::Forbidden(_))));
        assert!(matches!(g.check(&head(&[])), Err(Refusal::Forbidden(_))));
        let cross = head(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://evil.example"),
        ]);
        assert!(matches!(g.check(&cross), Err(Refusal::Forbidden(_))));
        for origin in ["http://localhost:3000", "https://app.example.com"] {
            let ok = head(&[("host", "127.0.0.1:8080"), ("origin", origin)]);
            assert_eq!(g.check(&ok), Ok(None), "{origin}");
        }
        let null = head(&[("host", "127.0.0.1:8080"), ("origin", "null")]);
        assert!(matches!(g.check(&null), Err(Refusal::Forbidden(_))));
    }

    #[test]
    fn tokens_are_required_and_named_by_position() {
        let g = guard(
            &["first-token-0123456789", "second-token-012345678"],
            "0.0.0.0:8080",
        );
        let with = |auth: &str| head(&[("host", "mcp.example.com"), ("authorization", auth)]);
        assert_eq!(g.check(&with("Bearer second-token-012345678")), Ok(Some(1)));
        for wrong in [
            "Bearer second-token-01234567",
            "Bearer ",
            "Basic x",
            "second-token-012345678",
        ] {
            assert_eq!(g.check(&with(wrong)), Err(Refusal::Unauthorized), "{wrong}");
        }
        assert_eq!(
            g.check(&head(&[("host", "mcp.example.com")])),
            Err(Refusal::Unauthorized)
        );
        // Off loopback, a browser origin still has to be allowed.
        let cross = head(&[
            ("authorization", "Bearer first-token-0123456789"),
            ("origin", "http://localhost:1"),
        ]);
        assert!(matches!(g.check(&cross), Err(Refusal::Forbidden(_))));
    }
}
