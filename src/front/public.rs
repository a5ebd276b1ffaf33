//! What the front answers anyone, before any check: whether it is alive
//! and ready (for a load balancer, a Kubernetes probe, nginx), and its
//! Server Card (pre-connection discovery). None of it reveals more than
//! that: no upstream, no command, no session, no token.
//!
//! - `GET /healthz`: 200 while the process serves.
//! - `GET /readyz`: 200 when a new client would be served now: below
//!   `max_sessions`, and in shared mode with a server of the pool up;
//!   503 otherwise.
//! - The Server Card, as the Server Card extension's draft
//!   (modelcontextprotocol/experimental-ext-server-card, schema v2) names
//!   its place: `GET <endpoint>/server-card` (`/mcp/server-card`), also
//!   at `/server-card`; and its MCP Catalog at
//!   `/.well-known/mcp/catalog.json`, whose one entry is that card. The
//!   earlier drafts' `/.well-known/mcp/server-card.json` answers the same
//!   card. The card describes this front (mcp-chain's name and version,
//!   the endpoint a client connects to, the revisions it serves), never
//!   the upstream's card, whose URLs would point past the proxy.

use super::reply::{self, Answer};
use super::resource::metadata;
use super::Front;
use crate::mcp_http::REVISIONS;
use bytes::Bytes;
use hyper::header::{HeaderValue, ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{HeaderMap, Method, StatusCode};
use serde_json::{json, Value};
use std::net::SocketAddr;

/// The Server Card schema followed.
const CARD_SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json";
/// The Server Card's media type.
const CARD_TYPE: &str = "application/mcp-server-card+json";

/// The answer to a public path, if `path` is one.
pub(super) fn answer(
    front: &Front,
    peer: SocketAddr,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Option<Answer> {
    let endpoint = &front.settings.path;
    let card_at = format!("{}/server-card", endpoint.trim_end_matches('/'));
    let which = match path {
        "/healthz" => Public::Health,
        "/readyz" => Public::Ready,
        "/.well-known/mcp/catalog.json" => Public::Catalog,
        "/server-card" | "/.well-known/mcp/server-card.json" => Public::Card,
        _ if path == card_at => Public::Card,
        _ => return None,
    };
    if method != Method::GET && method != Method::HEAD {
        return Some(super::error::FrontError::MethodNotAllowed.into_answer());
    }
    Some(match which {
        Public::Health => plain(StatusCode::OK, "ok\n"),
        Public::Ready => match ready(front) {
            true => plain(StatusCode::OK, "ready\n"),
            false => plain(StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
        },
        Public::Card | Public::Catalog => {
            let url = metadata::public_url(&front.settings, front.listen, peer, headers);
            let document = match which {
                Public::Card => card(front, &url),
                _ => catalog(&url),
            };
            let kind = match which {
                Public::Card => CARD_TYPE,
                _ => "application/json",
            };
            discovery(document, kind)
        }
    })
}

enum Public {
    Health,
    Ready,
    Card,
    Catalog,
}

/// Whether a new client would be served now.
fn ready(front: &Front) -> bool {
    let room = front.sessions.len() < front.settings.max_sessions;
    let pool_up = front.shared.as_ref().is_none_or(|pool| pool.is_up());
    room && pool_up
}

/// The front's Server Card; `url` is its endpoint as clients reach it.
fn card(front: &Front, url: &str) -> Value {
    let mut remote = json!({
        "type": "streamable-http",
        "url": url,
        "supportedProtocolVersions": REVISIONS,
    });
    let checks = front.checks();
    if checks.asks_for_a_token() {
        remote["headers"] = json!([{
            "name": "Authorization",
            "description": "Bearer token (a token of the front's, or an OAuth access token: see the protected resource metadata)",
            "isRequired": true,
            "isSecret": true,
        }]);
    }
    let mut remotes = vec![remote];
    if front.settings.legacy_sse {
        let base = url
            .strip_suffix(front.settings.path.as_str())
            .unwrap_or(url);
        remotes.push(json!({"type": "sse", "url": format!("{base}/sse")}));
    }
    json!({
        "$schema": CARD_SCHEMA,
        "name": card_name(url),
        "title": "mcp-chain",
        "description": "An MCP server behind mcp-chain, a guarding proxy",
        "version": env!("CARGO_PKG_VERSION"),
        "remotes": remotes,
    })
}

/// The card's reverse-DNS name: the endpoint's host reversed, then
/// `/mcp-chain` (`mcp.example.com` → `com.example.mcp/mcp-chain`).
fn card_name(url: &str) -> String {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "localhost".to_owned());
    let host: String = host
        .trim_matches(['[', ']'])
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '.'
            }
        })
        .collect();
    let reversed: Vec<&str> = host.split('.').filter(|s| !s.is_empty()).rev().collect();
    format!("{}/mcp-chain", reversed.join("."))
}

/// The MCP Catalog: this one server.
fn catalog(url: &str) -> Value {
    let name = card_name(url);
    let host = name.split('/').next().unwrap_or("localhost");
    let forward: Vec<&str> = host.split('.').rev().collect();
    json!({
        "specVersion": "draft",
        "entries": [{
            "identifier": format!("urn:air:{}:mcp-chain", forward.join(".")),
            "displayName": "mcp-chain",
            "type": CARD_TYPE,
            "url": format!("{}/server-card", url.trim_end_matches('/')),
        }],
    })
}

fn plain(code: StatusCode, text: &'static str) -> Answer {
    let mut answer = reply::text(code, text.to_owned());
    answer
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    answer
}

/// A discovery document: public, read-only, cacheable (as the draft asks).
fn discovery(document: Value, kind: &'static str) -> Answer {
    let mut answer = reply::json(StatusCode::OK, Bytes::from(document.to_string()));
    let headers = answer.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    answer
}

#[cfg(test)]
mod tests {
    use super::card_name;

    #[test]
    fn the_card_is_named_by_its_host_reversed() {
        assert_eq!(
            card_name("https://mcp.example.com/mcp"),
            "com.example.mcp/mcp-chain"
        );
        assert_eq!(
            card_name("http://127.0.0.1:8080/mcp"),
            "1.0.0.127/mcp-chain"
        );
        assert_eq!(card_name("http://[::1]:8080/mcp"), "1/mcp-chain");
        assert_eq!(card_name("not a url"), "localhost/mcp-chain");
    }
}
