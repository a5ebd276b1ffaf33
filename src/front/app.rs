//! The front's routes and the layers around them, as an axum router: the
//! Streamable HTTP endpoint (POST, GET, DELETE at `[front] path`) and,
//! when asked for, the legacy `/sse` stream and its `/messages` POSTs.
//!
//! Every request to a route passes two layers first, outermost first:
//! [`guard`] (Host, Origin, bearer token: who may talk to the front; it
//! leaves the [`Caller`] for the handlers) and [`known_version`] (an
//! `MCP-Protocol-Version` that names no revision mcp-chain speaks is
//! refused). A path that is no route is 404 before either: nothing about
//! the front is told to whoever asks elsewhere.

use super::error::FrontError;
use super::session::Caller;
use super::{handler, Front};
use crate::mcp_http::{self, PROTOCOL_VERSION};
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post, MethodRouter};
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;

/// The router of `front`.
pub(super) fn router(front: &Arc<Front>) -> Router {
    let endpoint: MethodRouter<Arc<Front>> = post(handler::post)
        .get(handler::get)
        .delete(handler::delete)
        .fallback(|| async { FrontError::MethodNotAllowed });
    let mut router = Router::new().route(&route_path(&front.settings.path), endpoint);
    if front.settings.legacy_sse {
        let refuse = || async { FrontError::MethodNotAllowed };
        router = router
            .route("/sse", get(handler::legacy_stream).fallback(refuse))
            .route("/messages", post(handler::legacy_post).fallback(refuse));
    }
    router
        .route_layer(middleware::from_fn(known_version))
        .route_layer(middleware::from_fn_with_state(front.clone(), guard))
        .fallback(|| async { FrontError::NoEndpoint })
        .with_state(front.clone())
}

/// The configured path as a route: braces are route syntax to axum, so
/// they are doubled to mean themselves.
fn route_path(path: &str) -> String {
    path.replace('{', "{{").replace('}', "}}")
}

/// Who may talk to the front (see `guard.rs`); the [`Caller`] for what
/// follows.
async fn guard(
    State(front): State<Arc<Front>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Result<Response, FrontError> {
    let (head, body) = request.into_parts();
    let token = front.guard.check(&head)?;
    let mut request = Request::from_parts(head, body);
    request.extensions_mut().insert(Caller { peer, token });
    Ok(next.run(request).await)
}

/// A request naming a protocol revision mcp-chain does not speak is
/// refused before anything reads it.
async fn known_version(request: Request, next: Next) -> Result<Response, FrontError> {
    match request.headers().get(PROTOCOL_VERSION) {
        Some(version) if !mcp_http::is_known(version.as_bytes()) => {
            Err(FrontError::UnsupportedVersion)
        }
        _ => Ok(next.run(request).await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_path_is_taken_literally() {
        assert_eq!(route_path("/mcp"), "/mcp");
        assert_eq!(route_path("/a{b}/*c"), "/a{{b}}/*c");
    }
}
