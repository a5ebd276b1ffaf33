//! The HTTP client for OAuth's own requests: metadata, registration and
//! tokens. Separate from the upstream's client because it goes elsewhere
//! (the authorization server) and must not follow redirects (a metadata
//! document redirected to another host is how a server would send
//! mcp-chain's codes and secrets there). Every URL must be https, or http on
//! loopback; every answer is read to a bounded size, since the server
//! decides how much it sends.

use super::error::{shown, OAuthError};
use crate::config::is_secure;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{redirect, Certificate, Response};
use serde::de::DeserializeOwned;
use std::path::Path;
use std::time::Duration;
use url::Url;

/// The most of a metadata, registration or token answer that is read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// How long one OAuth request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub(crate) struct Fetch {
    client: reqwest::Client,
}

/// An answer: its status, its body (bounded), its `WWW-Authenticate`.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

impl Fetch {
    pub(crate) fn new(ca_file: Option<&Path>) -> Result<Self, OAuthError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .redirect(redirect::Policy::none())
            .timeout(REQUEST_TIMEOUT)
            .tls_backend_rustls();
        if let Some(path) = ca_file {
            let pem = std::fs::read(path).map_err(|e| OAuthError::Http {
                url: path.display().to_string(),
                why: e.to_string(),
            })?;
            let certs = Certificate::from_pem_bundle(&pem).map_err(|e| OAuthError::Http {
                url: path.display().to_string(),
                why: e.to_string(),
            })?;
            builder = builder.tls_certs_merge(certs);
        }
        let client = builder.build().map_err(|e| OAuthError::Http {
            url: "the OAuth client".into(),
            why: e.to_string(),
        })?;
        Ok(Self { client })
    }

    fn check(url: &Url) -> Result<(), OAuthError> {
        if is_secure(url) {
            Ok(())
        } else {
            Err(OAuthError::Insecure { url: shown(url) })
        }
    }

    /// GETs a JSON document; `Ok(None)` for 404 (and other 4xx: the
    /// discovery goes on to the next place).
    pub(crate) async fn document<T: DeserializeOwned>(
        &self,
        url: &Url,
    ) -> Result<Option<T>, OAuthError> {
        Self::check(url)?;
        let response = self
            .client
            .get(url.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| OAuthError::http(url, e.without_url()))?;
        let answer = read(url, response).await?;
        if (400..500).contains(&answer.status) {
            return Ok(None);
        }
        if answer.status != 200 {
            return Err(status(url, &answer));
        }
        parse(url, &answer.body).map(Some)
    }

    /// POSTs a JSON body (client registration).
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<Answer, OAuthError> {
        Self::check(url)?;
        let response = self
            .client
            .post(url.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| OAuthError::http(url, e.without_url()))?;
        read(url, response).await
    }

    /// POSTs `body` and returns the `WWW-Authenticate` values of a 401 or
    /// 403 answer (none for another status); the body is not read.
    pub(crate) async fn post_for_headers(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<Vec<String>, OAuthError> {
        let url = &http_form(url);
        Self::check(url)?;
        let response = self
            .client
            .post(url.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| OAuthError::http(url, e.without_url()))?;
        if !matches!(response.status().as_u16(), 401 | 403) {
            return Ok(Vec::new());
        }
        Ok(response
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect())
    }

    /// Sends what the oauth2 crate built (token requests).
    pub(crate) async fn send(
        &self,
        request: oauth2::HttpRequest,
    ) -> Result<oauth2::HttpResponse, OAuthError> {
        let url = Url::parse(&request.uri().to_string())
            .map_err(|e| OAuthError::http(&placeholder(), e))?;
        Self::check(&url)?;
        let (parts, body) = request.into_parts();
        let response = self
            .client
            .request(parts.method, url.clone())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(|e| OAuthError::http(&url, e.without_url()))?;
        let status = response.status();
        let headers = response.headers().clone();
        let answer = read(&url, response).await?;
        let mut built = oauth2::HttpResponse::new(answer.body);
        *built.status_mut() = status;
        *built.headers_mut() = headers;
        Ok(built)
    }
}

/// The oauth2 crate sends its requests through [`Fetch::send`].
impl<'c> oauth2::AsyncHttpClient<'c> for Fetch {
    type Error = OAuthError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, OAuthError>> + Send + 'c>,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(self.send(request))
    }
}

/// A WebSocket server's URL as its HTTP twin (where its metadata is).
pub(crate) fn http_form(url: &Url) -> Url {
    let scheme = match url.scheme() {
        "ws" => "http",
        "wss" => "https",
        _ => return url.clone(),
    };
    let mut twin = url.clone();
    let _ = twin.set_scheme(scheme);
    twin
}

fn placeholder() -> Url {
    Url::parse("about:blank").expect("a URL")
}

/// Reads a body up to [`MAX_DOCUMENT_BYTES`].
async fn read(url: &Url, mut response: Response) -> Result<Answer, OAuthError> {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| OAuthError::http(url, e.without_url()))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(OAuthError::BadDocument {
                url: shown(url),
                why: format!("more than {MAX_DOCUMENT_BYTES} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer { status, body })
}

pub(crate) fn parse<T: DeserializeOwned>(url: &Url, body: &[u8]) -> Result<T, OAuthError> {
    serde_json::from_slice(body).map_err(|e| OAuthError::BadDocument {
        url: shown(url),
        why: e.to_string(),
    })
}

/// An answer that is not what was asked, with what it says (escaped, cut).
pub(crate) fn status(url: &Url, answer: &Answer) -> OAuthError {
    let text = String::from_utf8_lossy(&answer.body);
    let detail =
        (!text.trim().is_empty()).then(|| mcp_chain_middleware::shown::shown(text.trim(), 200));
    OAuthError::Status {
        url: shown(url),
        status: answer.status,
        detail,
    }
}
