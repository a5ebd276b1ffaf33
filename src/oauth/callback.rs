//! The loopback redirect (RFC 8252 §7.3): mcp-chain listens on
//! 127.0.0.1 for the browser's redirect back from the authorization
//! server, and takes the code from the one request whose `state` is the
//! one it sent. Anything else reaching the port (a favicon request, a page
//! elsewhere redirecting to it with a forged code) gets a 4xx and is not
//! taken. The wait is bounded: the user may close the tab.

use super::error::OAuthError;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The path the browser is sent back to.
const PATH: &str = "/callback";

/// How long one connection to the port may take.
const CONNECTION_TIME: Duration = Duration::from_secs(10);

/// Connections at once: a browser opens a few; anything past is refused.
const MAX_CONNECTIONS: usize = 8;

/// What the authorization server sent back: a code, or an error.
#[derive(Debug)]
pub(crate) enum Returned {
    Code {
        code: String,
        iss: Option<String>,
    },
    Error {
        error: String,
        description: Option<String>,
    },
}

pub(crate) struct Callback {
    listener: TcpListener,
    pub(crate) port: u16,
}

impl Callback {
    /// Listens on 127.0.0.1:`port`; any free port when `None`.
    pub(crate) async fn bind(port: Option<u16>) -> Result<Self, OAuthError> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port.unwrap_or(0)));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|why| OAuthError::Callback {
                addr: addr.to_string(),
                why,
            })?;
        let port = listener
            .local_addr()
            .map_err(|why| OAuthError::Callback {
                addr: addr.to_string(),
                why,
            })?
            .port();
        Ok(Self { listener, port })
    }

    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Waits, at most `wait`, for the redirect carrying `state`.
    pub(crate) async fn wait(self, state: &str, wait: Duration) -> Result<Returned, OAuthError> {
        let (found, mut returned) = mpsc::channel(1);
        let state = state.to_owned();
        let make = move |_peer| {
            let (found, state) = (found.clone(), state.clone());
            service_fn(move |request: Request<Incoming>| {
                let answer = answer(&request, &state, &found);
                async move { Ok::<_, std::convert::Infallible>(answer) }
            })
        };
        let mut limits = crate::serve::Limits::small(MAX_CONNECTIONS, CONNECTION_TIME);
        limits.keep_alive = false;
        let serve = crate::serve::serve(self.listener, limits, make, std::future::pending());
        tokio::select! {
            _ = serve => unreachable!("the accept loop does not end"),
            got = returned.recv() => got.ok_or(OAuthError::TimedOut(wait)),
            () = tokio::time::sleep(wait) => Err(OAuthError::TimedOut(wait)),
        }
    }
}

/// Answers one request to the loopback port; hands over what it carried
/// when it is the redirect with our `state`.
fn answer(
    request: &Request<Incoming>,
    state: &str,
    found: &mpsc::Sender<Returned>,
) -> Response<Full<Bytes>> {
    if request.uri().path() != PATH {
        return page(StatusCode::NOT_FOUND, "Not found.");
    }
    let query: HashMap<String, String> = request
        .uri()
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    if query.get("state").map(String::as_str) != Some(state) {
        tracing::warn!(
            "a login redirect without this login's state reached the callback port; ignored"
        );
        return page(
            StatusCode::BAD_REQUEST,
            "This is not the login mcp-chain is waiting for.",
        );
    }
    let returned = match (query.get("code"), query.get("error")) {
        (Some(code), None) => Returned::Code {
            code: code.clone(),
            iss: query.get("iss").cloned(),
        },
        (_, Some(error)) => Returned::Error {
            error: error.clone(),
            description: query.get("error_description").cloned(),
        },
        (None, None) => {
            return page(StatusCode::BAD_REQUEST, "The redirect carries no code.");
        }
    };
    let done = matches!(returned, Returned::Code { .. });
    let _ = found.try_send(returned);
    if done {
        page(
            StatusCode::OK,
            "mcp-chain is logged in. You can close this tab.",
        )
    } else {
        page(
            StatusCode::OK,
            "The login did not complete; see mcp-chain's log.",
        )
    }
}

fn page(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let html =
        format!("<!doctype html><meta charset=utf-8><title>mcp-chain</title><p>{text}</p>\n");
    let mut response = Response::new(Full::new(Bytes::from(html)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}
