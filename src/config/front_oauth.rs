//! `[front.oauth]` and the keys of `[front]` that go with it: the HTTP
//! front as an OAuth 2.1 resource server. Clients present access tokens the
//! organisation's identity provider issued for this server; the front
//! says where that provider is (protected resource metadata, RFC 9728) and
//! checks each token (a JWT against the issuer's keys, or an opaque token
//! through introspection, RFC 7662).

use super::validate::{parse_duration, Problem};
use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;
use url::Url;

/// How far a token's `exp` and `nbf` may be off the clock by default.
pub(crate) const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// Signature algorithms accepted by default: asymmetric only. HMAC needs
/// a configured secret (a public key must never verify an HMAC token).
pub(crate) const DEFAULT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];
const HMAC_ALGORITHMS: [&str; 3] = ["HS256", "HS384", "HS512"];

/// The size of an HMAC algorithm's hash, in bytes: the least its key may be.
fn hash_bytes(alg: &str) -> usize {
    match alg {
        "HS384" => 48,
        "HS512" => 64,
        _ => 32,
    }
}

fn long_enough(secret: Option<&str>, alg: &str) -> bool {
    secret.is_some_and(|s| s.len() >= hash_bytes(alg))
}

/// `[front.oauth]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FrontOAuthFile {
    issuer: String,
    audience: Option<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
    #[serde(default)]
    required_scopes: Vec<String>,
    introspection: Option<IntrospectionFile>,
    algorithms: Option<Vec<String>>,
    hmac_secret: Option<String>,
    leeway: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IntrospectionFile {
    url: String,
    client_id: String,
    client_secret: Option<String>,
}

/// A checked `[front.oauth]`. Secrets are never shown. Compared whole
/// when the config is reloaded (a change starts a new resource server).
#[derive(Clone, PartialEq)]
pub struct FrontOAuth {
    pub issuer: Url,
    /// What a token's `aud` must name: this server.
    pub audience: String,
    pub scopes_supported: Vec<String>,
    pub required_scopes: Vec<String>,
    pub introspection: Option<Introspection>,
    pub algorithms: Vec<String>,
    pub hmac_secret: Option<String>,
    pub leeway: Duration,
}

/// RFC 7662 introspection for opaque tokens.
#[derive(Clone, PartialEq)]
pub struct Introspection {
    pub url: Url,
    pub client_id: String,
    pub client_secret: Option<String>,
}

impl fmt::Debug for FrontOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrontOAuth")
            .field("issuer", &self.issuer.as_str())
            .field("audience", &self.audience)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .field(
                "introspection",
                &self.introspection.as_ref().map(|i| i.url.as_str()),
            )
            .field("algorithms", &self.algorithms)
            .field("hmac_secret", &self.hmac_secret.as_ref().map(|_| "…"))
            .field("leeway", &self.leeway)
            .finish()
    }
}

/// A network a trusted reverse proxy connects from (`10.0.0.0/8`, an
/// address alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    pub fn parse(text: &str) -> Option<Self> {
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (
                addr.parse::<IpAddr>().ok()?,
                Some(prefix.parse::<u8>().ok()?),
            ),
            None => (text.parse::<IpAddr>().ok()?, None),
        };
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(Self { addr, prefix })
    }

    /// Whether `ip` is in the network (an IPv4-mapped IPv6 address as
    /// its IPv4 one).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            other => other,
        };
        // Both as 128 bits, an IPv4 address in the top 32.
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => same_prefix(
                u128::from(u32::from(net)) << 96,
                u128::from(u32::from(ip)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                same_prefix(u128::from(net), u128::from(ip), self.prefix)
            }
            _ => false,
        }
    }
}

fn same_prefix(a: u128, b: u128, prefix: u8) -> bool {
    let mask = match prefix {
        0 => 0,
        n => u128::MAX << (128 - u32::from(n)),
    };
    a & mask == b & mask
}

pub(super) fn front_oauth(
    file: FrontOAuthFile,
    public_url: Option<&Url>,
    problems: &mut Vec<Problem>,
) -> Option<FrontOAuth> {
    let mut problem = |message: String| problems.push((None, format!("front.oauth.{message}")));
    let issuer = match Url::parse(&file.issuer) {
        Ok(url) if crate::config::is_secure(&url) => Some(url),
        Ok(_) => {
            problem(format!(
                "issuer: {:?} must be https (http only on loopback)",
                file.issuer
            ));
            None
        }
        Err(e) => {
            problem(format!("issuer: {:?} is not a URL: {e}", file.issuer));
            None
        }
    };
    let audience = match (file.audience, public_url) {
        (Some(audience), _) => Some(audience),
        (None, Some(url)) => Some(url.to_string()),
        (None, None) => {
            problem(
                "audience: needed (or front.public_url, its default): tokens must name this server"
                    .into(),
            );
            None
        }
    };
    let plain = |s: &String| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
    };
    if !file
        .scopes_supported
        .iter()
        .chain(&file.required_scopes)
        .all(plain)
    {
        problem("scopes_supported, required_scopes: each scope is one word of visible ASCII, without \" or \\".into());
    }
    let algorithms = file
        .algorithms
        .unwrap_or_else(|| DEFAULT_ALGORITHMS.map(str::to_owned).to_vec());
    for alg in &algorithms {
        let hmac = HMAC_ALGORITHMS.contains(&alg.as_str());
        if !(DEFAULT_ALGORITHMS.contains(&alg.as_str()) || hmac) {
            problem(format!(
                "algorithms: {alg:?} is not a signature algorithm mcp-chain checks"
            ));
        } else if hmac && file.hmac_secret.is_none() {
            problem(format!("algorithms: {alg:?} needs hmac_secret"));
        } else if hmac && !long_enough(file.hmac_secret.as_deref(), alg) {
            problem(format!(
                "algorithms: {alg:?} needs an hmac_secret of at least {} bytes (RFC 7518 §3.2)",
                hash_bytes(alg)
            ));
        }
    }
    if let Some(secret) = &file.hmac_secret {
        if !long_enough(Some(secret), "HS256") {
            problem(format!(
                "hmac_secret: {} bytes is too short; at least 32 (the size of HS256's hash, RFC 7518 §3.2)",
                secret.len()
            ));
        }
    }
    let mut algorithms = algorithms;
    if file.hmac_secret.is_some() {
        // Each HMAC algorithm whose hash the secret is as long as.
        for alg in HMAC_ALGORITHMS {
            if long_enough(file.hmac_secret.as_deref(), alg) && !algorithms.iter().any(|a| a == alg)
            {
                algorithms.push(alg.to_owned());
            }
        }
    }
    let introspection = file.introspection.and_then(|i| match Url::parse(&i.url) {
        Ok(url) if crate::config::is_secure(&url) => Some(Introspection {
            url,
            client_id: i.client_id,
            client_secret: i.client_secret,
        }),
        Ok(_) | Err(_) => {
            problem(format!(
                "introspection.url: {:?} must be an https URL (http only on loopback)",
                i.url
            ));
            None
        }
    });
    let leeway = match file.leeway.as_deref().map(parse_duration) {
        None => DEFAULT_LEEWAY,
        Some(Ok(d)) if d <= Duration::from_secs(300) => d,
        Some(Ok(_)) => {
            problem("leeway: at most 5m".into());
            DEFAULT_LEEWAY
        }
        Some(Err(e)) => {
            problem(format!("leeway: {e}"));
            DEFAULT_LEEWAY
        }
    };
    Some(FrontOAuth {
        issuer: issuer?,
        audience: audience?,
        scopes_supported: file.scopes_supported,
        required_scopes: file.required_scopes,
        introspection,
        algorithms,
        hmac_secret: file.hmac_secret,
        leeway,
    })
}
