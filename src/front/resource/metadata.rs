//! What the front says about itself as a protected resource (RFC 9728):
//! the document at `/.well-known/oauth-protected-resource` (and the form
//! with the endpoint's path after it), and the `WWW-Authenticate` of a
//! refused request, pointing there.
//!
//! The URLs in both are the front's public URL: `[front] public_url`,
//! else built from `X-Forwarded-Proto` and `X-Forwarded-Host` when the
//! request comes from a configured trusted proxy, else from the address
//! listened on. A client's own forwarded headers are never believed: they
//! would let it name the resource it is told about.

use crate::config::FrontConfig;
use hyper::header::HeaderValue;
use hyper::HeaderMap;
use std::net::SocketAddr;

/// The prefix of the metadata's well-known path.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The endpoint's public URL, for a request from `peer` with `headers`.
pub(crate) fn public_url(
    front: &FrontConfig,
    listen: SocketAddr,
    peer: SocketAddr,
    headers: &HeaderMap,
) -> String {
    if let Some(url) = &front.public_url {
        return url.to_string();
    }
    let trusted = front.trusted_proxies.iter().any(|n| n.contains(peer.ip()));
    if trusted {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.split(',').next().unwrap_or(v).trim().to_owned())
        };
        let proto = header("x-forwarded-proto").filter(|p| p == "https" || p == "http");
        let host = header("x-forwarded-host").filter(|h| plain_host(h));
        if let (Some(proto), Some(host)) = (proto, host) {
            return format!("{proto}://{host}{}", front.path);
        }
    }
    format!("http://{listen}{}", front.path)
}

/// `host[:port]` with nothing else in it (no path, user info, spaces).
fn plain_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
}

/// Where the metadata of the endpoint at `public` is.
pub(crate) fn metadata_url(public: &str) -> String {
    match public
        .split_once("://")
        .and_then(|(s, rest)| rest.find('/').map(|i| (s, &rest[..i], &rest[i..])))
    {
        Some((scheme, authority, path)) => format!("{scheme}://{authority}{WELL_KNOWN}{path}"),
        None => format!("{}{WELL_KNOWN}", public.trim_end_matches('/')),
    }
}

/// The metadata document.
pub(crate) fn document(public: &str, oauth: &crate::config::FrontOAuth) -> serde_json::Value {
    let mut doc = serde_json::json!({
        "resource": public,
        "authorization_servers": [oauth.issuer.as_str().trim_end_matches('/')],
        "bearer_methods_supported": ["header"],
    });
    if !oauth.scopes_supported.is_empty() {
        doc["scopes_supported"] = oauth.scopes_supported.clone().into();
    }
    doc
}

/// `Bearer resource_metadata="…"`, with the scopes needed and the error.
pub(crate) fn challenge(
    public: &str,
    scope: &[String],
    error: Option<(&str, &str)>,
) -> HeaderValue {
    let mut value = format!("Bearer resource_metadata=\"{}\"", metadata_url(public));
    if !scope.is_empty() {
        value += &format!(", scope=\"{}\"", scope.join(" "));
    }
    if let Some((error, description)) = error {
        value += &format!(", error=\"{error}\", error_description=\"{description}\"");
    }
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}
