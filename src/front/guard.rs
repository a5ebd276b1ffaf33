//! Who may talk to the front: checked on every request before anything
//! else reads it. A browser page on another site must not reach a server
//! on loopback (DNS rebinding: `Host` names the attacker's domain; a
//! cross-site fetch: `Origin` names it), and off loopback a request needs
//! one of the configured bearer tokens.

use crate::config::FrontConfig;
use hyper::header::{AUTHORIZATION, HOST, ORIGIN};
use hyper::http::request::Parts;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The static token that let a request in: its name (for the audit and
/// the logs) and its secret, which its sessions belong to, so that a
/// reload that renames, reorders or removes tokens cannot hand a session
/// to another token. Never shown: its `Debug` is the name.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct Pass {
    pub(super) name: Arc<str>,
    secret: Arc<[u8]>,
}

impl fmt::Debug for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pass({})", self.name)
    }
}

/// Why a request is turned away.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 401: no token, or not one of ours.
    Unauthorized,
    /// 403: a `Host` or `Origin` that is not allowed.
    Forbidden(&'static str),
    /// 400: an ambiguous or malformed authority (several `Host`s, one
    /// that is not `host[:port]`, a target naming another authority): a
    /// proxy in front may have read it differently, so none is guessed.
    BadRequest(&'static str),
}

/// The checks, compiled from `[front]` and the address listened on.
#[derive(Debug)]
pub(super) struct Guard {
    tokens: Vec<Pass>,
    /// `None`: any host.
    hosts: Option<Vec<String>>,
    origins: Vec<String>,
    /// Loopback origins (any port) are allowed.
    loopback_origins: bool,
    /// An OAuth resource server stands behind: a bearer that is no
    /// static token is left for it to judge.
    oauth: bool,
}

const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Guard {
    /// Whether a client must send a bearer token (a static one, or an
    /// OAuth access token).
    pub(super) fn asks_for_a_token(&self) -> bool {
        !self.tokens.is_empty() || self.oauth
    }

    pub(super) fn new(front: &FrontConfig, listen: SocketAddr) -> Self {
        let loopback = listen.ip().is_loopback();
        let hosts = answered_hosts(&front.allowed_hosts, listen);
        Self {
            tokens: front
                .tokens
                .iter()
                .map(|t| Pass {
                    name: t.name.as_str().into(),
                    secret: t.secret.as_bytes().into(),
                })
                .collect(),
            hosts,
            origins: front.allowed_origins.clone(),
            loopback_origins: loopback,
            oauth: front.oauth.is_some(),
        }
    }

    /// Checks a request's head. `Ok` carries the token that let it in.
    pub(super) fn check(&self, head: &Parts) -> Result<Option<Pass>, Refusal> {
        check_host(head, self.hosts.as_deref())?;
        let mut origins = head.headers.get_all(ORIGIN).iter();
        if let Some(origin) = origins.next() {
            if origins.next().is_some() {
                return Err(Refusal::BadRequest("several Origin headers"));
            }
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
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
        let Some(given) = given else {
            return if self.oauth {
                Ok(None)
            } else {
                Err(Refusal::Unauthorized)
            };
        };
        // Every token is compared, each in constant time, so the time taken
        // says nothing about which one came close.
        let mut found = None;
        for token in &self.tokens {
            if bool::from(token.secret.as_ref().ct_eq(given)) && found.is_none() {
                found = Some(token);
            }
        }
        match found {
            Some(pass) => Ok(Some(pass.clone())),
            None if self.oauth => Ok(None),
            None => Err(Refusal::Unauthorized),
        }
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
        let name = parse_host(rest).map(|(name, _)| name.to_ascii_lowercase());
        self.loopback_origins && name.is_some_and(|name| LOOPBACK_NAMES.contains(&name.as_str()))
    }
}

/// The hosts a server listening on `listen` answers to: the configured
/// ones; else, on loopback, the loopback names (a page that rebinds its
/// own domain to 127.0.0.1 still sends that domain as `Host`); else any
/// (`None`). The front and `/metrics` both answer so.
pub(crate) fn answered_hosts(configured: &[String], listen: SocketAddr) -> Option<Vec<String>> {
    match (configured.is_empty(), listen.ip().is_loopback()) {
        (false, _) => Some(configured.to_vec()),
        (true, true) => Some(LOOPBACK_NAMES.map(str::to_owned).to_vec()),
        (true, false) => None,
    }
}

/// Whether `head` names one of `hosts` (`None`: any) as its authority,
/// read strictly (one `Host`, agreeing with an absolute-form target).
pub(crate) fn check_host(head: &Parts, hosts: Option<&[String]>) -> Result<(), Refusal> {
    let host = authority(head)?;
    if let Some(hosts) = hosts {
        let name = host.map(|(name, _)| name.to_ascii_lowercase());
        if !name.is_some_and(|name| hosts.contains(&name)) {
            return Err(Refusal::Forbidden("this Host is not allowed"));
        }
    }
    Ok(())
}

/// The request's authority, `(name, port)`: its one `Host`, which an
/// absolute-form target (`POST http://host/mcp`) must agree with. `None`
/// without either.
fn authority(head: &Parts) -> Result<Option<(&str, Option<&str>)>, Refusal> {
    let mut hosts = head.headers.get_all(HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(Refusal::BadRequest("several Host headers"));
    }
    let host = match host {
        None => None,
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| Refusal::BadRequest("a malformed Host"))?;
            Some(parse_host(text).ok_or(Refusal::BadRequest("a malformed Host"))?)
        }
    };
    let Some(target) = head.uri.authority() else {
        return Ok(host);
    };
    let named = parse_host(target.as_str())
        .ok_or(Refusal::BadRequest("a malformed authority in the target"))?;
    match host {
        Some(host) if !same_authority(host, named) => Err(Refusal::BadRequest(
            "the target's authority is not the Host",
        )),
        _ => Ok(Some(named)),
    }
}

fn same_authority(a: (&str, Option<&str>), b: (&str, Option<&str>)) -> bool {
    a.0.eq_ignore_ascii_case(b.0) && a.1 == b.1
}

/// `host[:port]` read strictly: a DNS name or IPv4 address (letters,
/// digits, `-`, `.`), or an IPv6 address in brackets, then nothing or a
/// port of digits. Anything else (`[::1]junk`, `user@host`, spaces) is
/// `None`.
fn parse_host(text: &str) -> Option<(&str, Option<&str>)> {
    let (name, rest) = match text.strip_prefix('[') {
        Some(inner) => {
            let end = inner.find(']')?;
            let address = &inner[..end];
            if address.is_empty()
                || !address
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
            {
                return None;
            }
            (&text[..end + 2], &inner[end + 1..])
        }
        None => {
            let end = text.find(':').unwrap_or(text.len());
            let name = &text[..end];
            let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'.';
            if name.is_empty() || !name.bytes().all(valid) {
                return None;
            }
            (name, &text[end..])
        }
    };
    let port = match rest.strip_prefix(':') {
        None if rest.is_empty() => None,
        Some(port) if (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit()) => {
            Some(port)
        }
        _ => return None,
    };
    Some((name, port))
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
                .enumerate()
                .map(|(n, t)| crate::config::Token {
                    name: (n + 1).to_string(),
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
    fn ambiguous_or_malformed_authorities_are_refused() {
        let g = guard(&[], "127.0.0.1:8080");
        let bad = |headers: &[(&str, &str)]| {
            matches!(g.check(&head(headers)), Err(Refusal::BadRequest(_)))
        };
        let mut two = head(&[("host", "127.0.0.1:8080")]);
        two.headers
            .append(HOST, "evil.example".parse().expect("value"));
        assert!(matches!(g.check(&two), Err(Refusal::BadRequest(_))));
        for host in [
            "[::1]junk",
            "[::1]:80x",
            "user@localhost",
            "localhost:",
            "local host",
            "[]",
            "localhost:123456",
        ] {
            assert!(bad(&[("host", host)]), "{host}");
        }
        for origin in ["http://[::1]junk", "http://localhost@evil.example"] {
            let h = head(&[("host", "127.0.0.1:8080"), ("origin", origin)]);
            assert!(g.check(&h).is_err(), "{origin}");
        }
        // An absolute-form target must name the Host.
        let mut absolute = hyper::Request::builder()
            .uri("http://evil.example/mcp")
            .header("host", "127.0.0.1:8080")
            .body(())
            .expect("a request")
            .into_parts()
            .0;
        assert!(matches!(g.check(&absolute), Err(Refusal::BadRequest(_))));
        absolute.uri = "http://127.0.0.1:8080/mcp".parse().expect("uri");
        assert_eq!(g.check(&absolute), Ok(None));
        assert_eq!(g.check(&head(&[("host", "[::1]:8080")])), Ok(None));
        assert_eq!(g.check(&head(&[("host", "LOCALHOST")])), Ok(None));
    }

    #[test]
    fn tokens_are_required_and_named_by_position() {
        let g = guard(
            &["first-token-0123456789", "second-token-012345678"],
            "0.0.0.0:8080",
        );
        let with = |auth: &str| head(&[("host", "mcp.example.com"), ("authorization", auth)]);
        let pass = g
            .check(&with("Bearer second-token-012345678"))
            .expect("let in")
            .expect("a token");
        assert_eq!(&*pass.name, "2", "named by position");
        assert_eq!(format!("{pass:?}"), "Pass(2)", "never the secret");
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
