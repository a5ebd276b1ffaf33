//! The front's routes and the layers around them, as tower services: the
//! Streamable HTTP endpoint (POST, GET, DELETE at `[front] path`) and,
//! when asked for, the legacy `/sse` stream and its `/messages` POSTs.
//!
//! A request first meets [`KnownPaths`]: the public paths (health,
//! readiness, the Server Card: `public.rs`) are answered there, and a path
//! that is no route is 404 before anything else, so nothing about the
//! front is told to whoever asks elsewhere. Then the [`GuardLayer`] (Host, Origin, bearer token:
//! who may talk to the front; then the protocol version), which turns an
//! HTTP request into an [`Admitted`] one, with its [`Caller`]; other
//! layers stack on the same shape (the OAuth resource server beside the
//! guard). Last [`route`], which hands each route's request to its
//! handler.
//!
//! (axum did this with its router and extractors, but cost a sixth of the
//! front's throughput at 256 concurrent clients; four routes do not need
//! a path router.)

use super::checks::{Checks, OAuth};
use super::error::FrontError;
use super::handler;
use super::reply::{self, Answer};
use super::resource::{metadata, Principal, Rejection};
use super::session::Caller;
use super::Front;
use crate::mcp_http::{self, PROTOCOL_VERSION};
use futures_util::future::Either;
use hyper::body::Incoming;
use hyper::{Method, Request};
use std::convert::Infallible;
use std::future::{ready, Ready};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// A request the guard let in, and who sent it.
pub(super) struct Admitted {
    pub(super) caller: Caller,
    pub(super) request: Request<Incoming>,
    /// The checks it was let in by: the OAuth check that follows is of
    /// the same config, whatever a reload does meanwhile.
    pub(super) checks: Arc<Checks>,
}

/// What a connection from `peer` serves its requests with.
pub(super) fn stack(
    front: &Arc<Front>,
    peer: SocketAddr,
) -> impl Service<Request<Incoming>, Response = Answer, Error = Infallible, Future: Send>
       + Clone
       + Send
       + 'static {
    let routes = front.clone();
    let router = tower::service_fn(move |admitted| route(routes.clone(), admitted));
    let authenticated = Authenticated {
        front: front.clone(),
        inner: router,
    };
    KnownPaths {
        front: front.clone(),
        peer,
        inner: GuardLayer::new(front.clone(), peer).layer(authenticated),
    }
}

/// 404 for a path that is no route; the protected resource metadata
/// (public, before any check) when the front is a resource server; the
/// rest to `inner`.
#[derive(Clone)]
pub(super) struct KnownPaths<S> {
    front: Arc<Front>,
    peer: SocketAddr,
    inner: S,
}

impl<S> Service<Request<Incoming>> for KnownPaths<S>
where
    S: Service<Request<Incoming>, Response = Answer, Error = Infallible>,
{
    type Response = Answer;
    type Error = Infallible;
    type Future = Either<Ready<Result<Answer, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        let path = request.uri().path();
        let settings = &self.front.settings;
        let legacy = settings.legacy_sse && (path == "/sse" || path == "/messages");
        if path == settings.path || legacy {
            return Either::Right(self.inner.call(request));
        }
        let public = super::public::answer(
            &self.front,
            self.peer,
            request.method(),
            path,
            request.headers(),
        );
        if let Some(answer) = public {
            return Either::Left(ready(Ok(answer)));
        }
        let answer = match &self.front.checks().oauth {
            OAuth::On(resource) if is_metadata_path(path, &settings.path) => {
                if request.method() == Method::GET {
                    let public = metadata::public_url(
                        settings,
                        self.front.listen,
                        self.peer,
                        request.headers(),
                    );
                    let doc = metadata::document(&public, resource.config());
                    reply::json(hyper::StatusCode::OK, bytes::Bytes::from(doc.to_string()))
                } else {
                    FrontError::MethodNotAllowed.into_answer()
                }
            }
            OAuth::Unusable if is_metadata_path(path, &settings.path) => {
                FrontError::AuthUnavailable(UNUSABLE).into_answer()
            }
            _ => FrontError::NoEndpoint.into_answer(),
        };
        Either::Left(ready(Ok(answer)))
    }
}

/// Who may talk to the front (see `guard.rs`), and in which revision.
#[derive(Clone)]
pub(super) struct GuardLayer {
    front: Arc<Front>,
    peer: SocketAddr,
}

impl GuardLayer {
    pub(super) fn new(front: Arc<Front>, peer: SocketAddr) -> Self {
        Self { front, peer }
    }
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            guard: self.clone(),
            inner,
        }
    }
}

/// A service behind the [`GuardLayer`].
#[derive(Clone)]
pub(super) struct Guarded<S> {
    guard: GuardLayer,
    inner: S,
}

impl<S> Guarded<S> {
    fn admit(&self, request: Request<Incoming>) -> Result<Admitted, FrontError> {
        let (head, body) = request.into_parts();
        let checks = self.guard.front.checks();
        let token = checks.guard.check(&head)?;
        if let Some(version) = head.headers.get(PROTOCOL_VERSION) {
            if !mcp_http::is_known(version.as_bytes()) {
                return Err(FrontError::UnsupportedVersion);
            }
        }
        let caller = Caller {
            peer: self.guard.peer,
            token,
            principal: None,
            // Set with the principal, for OAuth requests only.
            named: no_scopes_named(),
        };
        let request = Request::from_parts(head, body);
        Ok(Admitted {
            caller,
            request,
            checks,
        })
    }
}

impl<S> Service<Request<Incoming>> for Guarded<S>
where
    S: Service<Admitted, Response = Answer, Error = Infallible>,
{
    type Response = Answer;
    type Error = Infallible;
    type Future = Either<Ready<Result<Answer, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        match self.admit(request) {
            Ok(admitted) => Either::Right(self.inner.call(admitted)),
            Err(refused) => Either::Left(ready(Ok(refused.into_answer()))),
        }
    }
}

/// Why access tokens are refused while `[front.oauth]` cannot be used.
const UNUSABLE: &str = "the OAuth settings of the last reload could not be applied";

fn is_metadata_path(path: &str, endpoint: &str) -> bool {
    path.strip_prefix(metadata::WELL_KNOWN)
        .is_some_and(|rest| rest.is_empty() || rest == endpoint)
}

/// The OAuth resource server (see `resource`): a request that no static
/// token let in must carry an access token for this server; its
/// principal joins the [`Caller`].
#[derive(Clone)]
pub(super) struct Authenticated<S> {
    front: Arc<Front>,
    inner: S,
}

type Boxed =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Answer, Infallible>> + Send>>;

impl<S> Service<Admitted> for Authenticated<S>
where
    S: Service<Admitted, Response = Answer, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Answer;
    type Error = Infallible;
    type Future = Either<S::Future, Boxed>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut admitted: Admitted) -> Self::Future {
        if matches!(admitted.checks.oauth, OAuth::Off) || admitted.caller.token.is_some() {
            return Either::Left(self.inner.call(admitted));
        }
        // The ready service goes with the request; a clone stays here.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let front = self.front.clone();
        Either::Right(Box::pin(async move {
            match authenticate(&front, &admitted).await {
                Ok(principal) => {
                    admitted.caller.principal = Some(principal);
                    admitted.caller.named = front.named_scopes();
                    inner.call(admitted).await
                }
                Err(refused) => Ok(refused.into_answer()),
            }
        }))
    }
}

/// The principal of an admitted request's access token, or why not.
async fn authenticate(front: &Front, admitted: &Admitted) -> Result<Arc<Principal>, FrontError> {
    let resource = match &admitted.checks.oauth {
        OAuth::On(resource) => resource,
        OAuth::Unusable => return Err(FrontError::AuthUnavailable(UNUSABLE)),
        OAuth::Off => return Err(FrontError::Unauthorized),
    };
    let request = &admitted.request;
    let in_query = request.uri().query().is_some_and(|q| {
        url::form_urlencoded::parse(q.as_bytes()).any(|(name, _)| name == "access_token")
    });
    if in_query {
        return Err(FrontError::TokenInQuery);
    }
    let config = resource.config();
    // The public URL only for a refusal's challenge: a request let in
    // does not pay for it.
    let public = || {
        metadata::public_url(
            &front.settings,
            front.listen,
            admitted.caller.peer,
            request.headers(),
        )
    };
    let bearer = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty())
        .map(|(_, token)| token.trim());
    let refused = |why: &'static str, error: Option<(&str, &str)>| FrontError::TokenRefused {
        why,
        challenge: metadata::challenge(&public(), &config.required_scopes, error),
    };
    let Some(token) = bearer else {
        return Err(refused("an access token is required", None));
    };
    match resource.check(token).await {
        Ok(principal) => Ok(principal),
        Err(Rejection::Invalid(why)) => Err(refused(why, Some(("invalid_token", why)))),
        Err(Rejection::InsufficientScope) => Err(FrontError::InsufficientScope {
            challenge: metadata::challenge(
                &public(),
                &config.required_scopes,
                Some((
                    "insufficient_scope",
                    "the token lacks a scope this server needs",
                )),
            ),
        }),
        Err(Rejection::Unavailable(why)) => Err(FrontError::AuthUnavailable(why)),
    }
}

/// Each route's request to its handler; a method a route does not take
/// is 405.
async fn route(front: Arc<Front>, admitted: Admitted) -> Result<Answer, Infallible> {
    Ok(handle(&front, admitted)
        .await
        .unwrap_or_else(FrontError::into_answer))
}

async fn handle(front: &Arc<Front>, admitted: Admitted) -> Result<Answer, FrontError> {
    let request = &admitted.request;
    let legacy = front.settings.legacy_sse;
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/sse") if legacy => handler::legacy_stream(front, admitted).await,
        (&Method::POST, "/messages") if legacy => handler::legacy_post(front, admitted).await,
        (_, "/sse" | "/messages") if legacy => Err(FrontError::MethodNotAllowed),
        (&Method::POST, _) => handler::post(front, admitted).await,
        (&Method::GET, _) => handler::get(front, admitted),
        (&Method::DELETE, _) => handler::delete(front, admitted),
        _ => Err(FrontError::MethodNotAllowed),
    }
}

/// The empty set of named scopes, shared (a request without a principal
/// allocates nothing for it).
fn no_scopes_named() -> Arc<std::collections::BTreeSet<String>> {
    static EMPTY: std::sync::OnceLock<Arc<std::collections::BTreeSet<String>>> =
        std::sync::OnceLock::new();
    EMPTY.get_or_init(Arc::default).clone()
}
