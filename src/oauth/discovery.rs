//! Finding where to log in, as the MCP authorization specification
//! (2025-06-18 and later) says: the server's 401 names its protected
//! resource metadata (RFC 9728), else it is looked for at the well-known
//! places; that names the authorization server, whose metadata (RFC 8414,
//! then OpenID discovery) names its endpoints. A server of the 2025-03-26
//! revision has no resource metadata: its origin is the authorization
//! server, and without metadata the default endpoints are used.
//!
//! Every document is the server's to write, so it is checked: the resource
//! metadata on the server's origin (unless the user configured another),
//! naming this server as the resource; the authorization server metadata
//! naming the issuer it was fetched for; PKCE with S256 offered.

use super::challenge::Challenge;
use super::error::{shown, OAuthError};
use super::fetch::Fetch;
use crate::config::OAuthConfig;
use serde::{Deserialize, Serialize};
use url::Url;

/// RFC 9728 protected resource metadata: what mcp-chain reads of it.
#[derive(Debug, Deserialize)]
struct ResourceMetadata {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization server metadata: what mcp-chain reads of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: Option<String>,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
}

/// Where and how to log in to one server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The server's resource identifier: the `resource` sent (RFC 8707).
    pub(crate) resource: Url,
    /// The scopes the resource metadata lists.
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) metadata: ServerMetadata,
}

/// Discovers the authorization server for `server`; `challenge` is its
/// 401's, when there was one.
pub(crate) async fn discover(
    fetch: &Fetch,
    server: &Url,
    challenge: Option<&Challenge>,
    config: &OAuthConfig,
) -> Result<Discovered, OAuthError> {
    let resource_metadata = resource_metadata(fetch, server, challenge, config).await?;
    let Some(prm) = resource_metadata else {
        return legacy(fetch, server).await;
    };
    let resource = match &prm.resource {
        Some(named) => {
            let named_url = Url::parse(named).map_err(|_| OAuthError::ResourceMismatch {
                named: mcp_chain_middleware::shown::shown(named, 200),
                server: shown(server),
            })?;
            if !names(&named_url, server) {
                return Err(OAuthError::ResourceMismatch {
                    named: shown(&named_url),
                    server: shown(server),
                });
            }
            named_url
        }
        None => canonical(server),
    };
    let issuer =
        prm.authorization_servers
            .first()
            .ok_or_else(|| OAuthError::NoAuthorizationServer {
                server: shown(server),
            })?;
    let issuer_url = Url::parse(issuer).map_err(|e| OAuthError::BadDocument {
        url: "the protected resource metadata".into(),
        why: format!("authorization server is not a URL: {e}"),
    })?;
    let metadata = server_metadata(fetch, &issuer_url).await?.ok_or_else(|| {
        OAuthError::NoAuthorizationServer {
            server: shown(server),
        }
    })?;
    if trimmed(&metadata.issuer) != trimmed(issuer) {
        return Err(OAuthError::IssuerMismatch {
            expected: shown(&issuer_url),
            found: mcp_chain_middleware::shown::shown(&metadata.issuer, 200),
        });
    }
    check_pkce(&metadata)?;
    check_endpoints(&metadata)?;
    Ok(Discovered {
        resource,
        scopes_supported: prm.scopes_supported,
        metadata,
    })
}

/// The resource metadata: where the challenge says (same origin, or the
/// configured URL), else the well-known places. `None` when there is none.
async fn resource_metadata(
    fetch: &Fetch,
    server: &Url,
    challenge: Option<&Challenge>,
    config: &OAuthConfig,
) -> Result<Option<ResourceMetadata>, OAuthError> {
    let named = challenge.and_then(|c| c.resource_metadata.as_deref());
    if let Some(named) = named {
        let url = Url::parse(named).map_err(|e| OAuthError::BadDocument {
            url: "the server's WWW-Authenticate".into(),
            why: format!("resource_metadata is not a URL: {e}"),
        })?;
        let trusted = config.resource_metadata.as_ref() == Some(&url);
        if url.origin() != server.origin() && !trusted {
            return Err(OAuthError::OtherOrigin { found: shown(&url) });
        }
        return match fetch.document(&url).await? {
            Some(found) => Ok(Some(found)),
            None => Err(OAuthError::BadDocument {
                url: shown(&url),
                why: "the resource metadata the server named is not there".into(),
            }),
        };
    }
    let mut places = Vec::new();
    places.extend(config.resource_metadata.clone());
    places.extend(well_known(server, "oauth-protected-resource"));
    for url in places {
        if let Some(found) = fetch.document::<ResourceMetadata>(&url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// A 2025-03-26 server: its origin is the authorization server; without
/// metadata, the default endpoints there.
async fn legacy(fetch: &Fetch, server: &Url) -> Result<Discovered, OAuthError> {
    let mut origin = server.clone();
    origin.set_path("");
    origin.set_query(None);
    origin.set_fragment(None);
    let metadata = match server_metadata(fetch, &origin).await? {
        // The 2025-03-26 revision did not ask that the issuer match.
        Some(metadata) => {
            check_pkce(&metadata)?;
            check_endpoints(&metadata)?;
            metadata
        }
        None => {
            let at = |path: &str| origin.join(path).ok().map(|u| u.to_string());
            ServerMetadata {
                issuer: trimmed(origin.as_str()).to_owned(),
                authorization_endpoint: at("/authorize"),
                token_endpoint: at("/token"),
                registration_endpoint: at("/register"),
                code_challenge_methods_supported: Some(vec!["S256".into()]),
                ..ServerMetadata::default()
            }
        }
    };
    Ok(Discovered {
        resource: canonical(server),
        scopes_supported: None,
        metadata,
    })
}

/// The authorization server metadata for `issuer`, from the places RFC
/// 8414 and OpenID Connect Discovery put it.
async fn server_metadata(
    fetch: &Fetch,
    issuer: &Url,
) -> Result<Option<ServerMetadata>, OAuthError> {
    let path = issuer.path().trim_end_matches('/');
    let mut places = well_known(issuer, "oauth-authorization-server");
    places.truncate(1);
    places.extend(
        well_known(issuer, "openid-configuration")
            .into_iter()
            .take(1),
    );
    if !path.is_empty() {
        let mut appended = issuer.clone();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        places.push(appended);
    }
    for url in places {
        if let Some(found) = fetch.document::<ServerMetadata>(&url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// `/.well-known/{name}` inserted before the path of `url` (RFC 8615, as
/// RFC 9728 and 8414 do), then at the root when there is a path.
fn well_known(url: &Url, name: &str) -> Vec<Url> {
    let path = url.path().trim_end_matches('/');
    let at = |path: String| {
        let mut u = url.clone();
        u.set_path(&path);
        u.set_query(None);
        u.set_fragment(None);
        u
    };
    let mut places = vec![at(format!("/.well-known/{name}{path}"))];
    if !path.is_empty() {
        places.push(at(format!("/.well-known/{name}")));
    }
    places
}

fn check_pkce(metadata: &ServerMetadata) -> Result<(), OAuthError> {
    let offers = metadata
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|m| m.iter().any(|m| m == "S256"));
    if offers {
        Ok(())
    } else {
        Err(OAuthError::NoPkce)
    }
}

/// The authorization server at `issuer`, for a person signing in there
/// (the console): its metadata found, naming that issuer, offering PKCE
/// S256, every endpoint a web page or API.
pub(crate) async fn authorization_server(
    fetch: &Fetch,
    issuer: &Url,
) -> Result<ServerMetadata, OAuthError> {
    let metadata =
        server_metadata(fetch, issuer)
            .await?
            .ok_or_else(|| OAuthError::NoAuthorizationServer {
                server: shown(issuer),
            })?;
    if trimmed(&metadata.issuer) != trimmed(issuer.as_str()) {
        return Err(OAuthError::IssuerMismatch {
            expected: shown(issuer),
            found: mcp_chain_middleware::shown::shown(&metadata.issuer, 200),
        });
    }
    check_pkce(&metadata)?;
    check_endpoints(&metadata)?;
    Ok(metadata)
}

/// Every endpoint the metadata names is a web page or API mcp-chain may
/// reach: https, or http on loopback. The authorization endpoint is opened
/// in the user's browser, so a `file:`, `smb:`, `javascript:` or custom
/// scheme there would reach the desktop (the CVE-2025-6514 class); the
/// others receive codes and secrets.
pub(crate) fn check_endpoints(metadata: &ServerMetadata) -> Result<(), OAuthError> {
    let endpoints = [
        &metadata.authorization_endpoint,
        &metadata.token_endpoint,
        &metadata.registration_endpoint,
    ];
    for endpoint in endpoints.into_iter().flatten() {
        let url = Url::parse(endpoint).map_err(|e| OAuthError::BadDocument {
            url: "the authorization server metadata".into(),
            why: format!(
                "an endpoint is not a URL ({e}): {}",
                mcp_chain_middleware::shown::shown(endpoint, 200)
            ),
        })?;
        if !crate::config::is_secure(&url) {
            return Err(OAuthError::Insecure {
                url: mcp_chain_middleware::shown::shown(endpoint, 200),
            });
        }
    }
    Ok(())
}

/// Whether the resource identifier `named` covers `server`: the same URL,
/// or a prefix of its path on the same origin.
fn names(named: &Url, server: &Url) -> bool {
    if named.origin() != server.origin() || named.query().is_some() {
        return false;
    }
    let named = trimmed(named.path());
    let path = server.path();
    named.is_empty()
        || path == named
        || path
            .strip_prefix(named)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The server's URL as a resource identifier: no fragment.
fn canonical(server: &Url) -> Url {
    let mut url = server.clone();
    url.set_fragment(None);
    url
}

fn trimmed(text: &str) -> &str {
    text.strip_suffix('/').unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("a URL")
    }

    #[test]
    fn well_known_places_go_before_the_path_then_at_the_root() {
        let places = well_known(
            &url("https://mcp.example.com/v1/mcp?x=1"),
            "oauth-protected-resource",
        );
        let shown: Vec<&str> = places.iter().map(Url::as_str).collect();
        assert_eq!(
            shown,
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource"
            ]
        );
        let root = well_known(&url("https://as.example.com"), "oauth-authorization-server");
        assert_eq!(root.len(), 1);
        assert_eq!(
            root[0].as_str(),
            "https://as.example.com/.well-known/oauth-authorization-server"
        );
    }

    #[test]
    fn endpoints_must_be_web_pages() {
        let with = |endpoint: &str| ServerMetadata {
            authorization_endpoint: Some(endpoint.into()),
            token_endpoint: Some("https://as.example.com/token".into()),
            ..ServerMetadata::default()
        };
        for good in [
            "https://as.example.com/authorize",
            "http://127.0.0.1:8080/authorize",
            "http://localhost/authorize",
            "http://[::1]:9/authorize",
        ] {
            assert!(check_endpoints(&with(good)).is_ok(), "{good}");
        }
        for bad in [
            "file:///C:/Windows/System32/calc.exe",
            "smb://host/share/payload.exe",
            "javascript:alert(1)",
            "ms-settings:privacy",
            "http://as.example.com/authorize",
            "http://127.0.0.1.evil.example/authorize",
            "data:text/html,<script>x</script>",
            "not a url",
        ] {
            assert!(check_endpoints(&with(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_resource_names_this_server_only() {
        let server = url("https://mcp.example.com/v1/mcp");
        for named in [
            "https://mcp.example.com/v1/mcp",
            "https://mcp.example.com/v1",
            "https://mcp.example.com/",
            "https://mcp.example.com",
        ] {
            assert!(names(&url(named), &server), "{named}");
        }
        for named in [
            "https://mcp.example.com/v1/mcpx",
            "https://mcp.example.com/v2",
            "https://other.example.com/v1/mcp",
            "http://mcp.example.com/v1/mcp",
            "https://mcp.example.com:8443/v1/mcp",
        ] {
            assert!(!names(&url(named), &server), "{named}");
        }
    }
}
