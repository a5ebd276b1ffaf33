//! How the console judges a request and answers it. Every request first:
//! its `Host` must be a loopback name (a page elsewhere that rebinds its
//! domain to 127.0.0.1 still sends its own), and its path must start with
//! the process's secret (anything else is 404, as if nothing were here).
//! Then:
//!
//! - `GET /SECRET/`: the approval page (`views.rs`), what waits oldest
//!   first, every value escaped by the template engine (a tool or
//!   argument holding HTML is shown as text);
//! - `GET /SECRET/page.js`: its small script (live updates, local times);
//! - `GET /SECRET/events`: Server-Sent Events, one each time what waits
//!   changes;
//! - `GET /SECRET/activity` (`?tool=…&outcome=…`): the layers' decisions
//!   and the audit's last lines, filtered, and `activity/events`, one
//!   event when there is more (`recent.rs`);
//! - `POST /SECRET/revoke`: a lasting approval taken back (as `mcp-chain
//!   approve revoke` does), judged as a decision is;
//! - `POST /SECRET/accept`, `/keep`, `/switch`: a drifted pin accepted or
//!   kept hidden, a tool switched off or on (`actions.rs`);
//! - `POST /SECRET/decide`: a decision. Only a POST decides (a link, a
//!   prefetch or a GET cannot), only from this page's own origin (`Origin`,
//!   `Sec-Fetch-Site`), only with the page's token; a refusal is a 4xx,
//!   never a redirect, and an answer to a call that no longer waits (a
//!   replay) is 409.

use super::super::front::guard;
use super::{actions, recent, views};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use mcp_chain_middleware::approve::desk::Desk;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;

pub(super) type Body = BoxBody<Bytes, Infallible>;

pub(super) const PAGE_TEMPLATE: &str = "approvals.html";
const BASE: &str = include_str!("base.html");
const PAGE: &str = include_str!("approvals.html");
pub(super) const ACTIVITY_TEMPLATE: &str = "activity.html";
const ACTIVITY: &str = include_str!("activity.html");
const SCRIPT: &str = include_str!("page.js");

/// The most of a decision's form read.
pub(super) const MAX_FORM_BYTES: usize = 4096;

/// No inline script, no other origin, no framing: the page can only run
/// its own script and post to itself.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub(super) struct Pages {
    pub(super) desk: Arc<Desk>,
    pub(super) bound: SocketAddr,
    secret: String,
    /// Carried by every deciding request (the page embeds it).
    pub(super) token: String,
    hosts: Vec<String>,
    pub(super) origins: Vec<String>,
    /// The config's pin files: their drift is shown, and accepted here.
    pub(super) pin_files: Vec<std::path::PathBuf>,
    /// The files the chain's audit layers append to: their last lines are
    /// shown on the activity page.
    pub(super) audit_files: Vec<std::path::PathBuf>,
    /// The server this process guards, as the approve book names it.
    pub(super) server: String,
    /// With `[console] client_id`: the sign-in before every page.
    gate: Option<super::sign_in::Gate>,
    pub(super) templates: minijinja::Environment<'static>,
}

impl Pages {
    pub(super) fn new(
        desk: Arc<Desk>,
        bound: SocketAddr,
        secret: String,
        token: String,
        watched: super::Watched,
        gate: Option<super::sign_in::Gate>,
        sign_in: Option<&crate::config::SignInConfig>,
    ) -> Self {
        let loopback = ["127.0.0.1", "localhost", "[::1]"];
        let mut hosts: Vec<String> = loopback.iter().map(|h| (*h).to_owned()).collect();
        let port = bound.port();
        let mut origins: Vec<String> = loopback
            .iter()
            .map(|host| format!("http://{host}:{port}"))
            .collect();
        // Behind a sign-in, where people reach it too.
        if let Some(public) = sign_in.map(|s| &s.public_url) {
            hosts.extend(public.host_str().map(str::to_ascii_lowercase));
            origins.push(public.origin().ascii_serialization());
        }
        Self {
            desk,
            bound,
            secret,
            token,
            hosts,
            origins,
            pin_files: watched.pin_files,
            audit_files: watched.audit_files,
            server: watched.server,
            gate,
            templates: templates(),
        }
    }
}

impl Pages {
    /// The page `template` made from `context`, as HTML; a page that
    /// cannot be made is a 500 (said on stderr), never half a page.
    pub(super) fn render(&self, template: &str, context: minijinja::Value) -> Response<Body> {
        let rendered = self
            .templates
            .get_template(template)
            .and_then(|t| t.render(context));
        match rendered {
            Ok(html) => {
                let mut response = text(StatusCode::OK, html);
                set(&mut response, CONTENT_TYPE, "text/html; charset=utf-8");
                response
            }
            Err(e) => {
                tracing::warn!(error = %e, page = template, "console: a page could not be rendered");
                plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the page could not be rendered",
                )
            }
        }
    }
}

/// The console's pages, parsed once.
fn templates() -> minijinja::Environment<'static> {
    let mut templates = minijinja::Environment::new();
    for (name, source) in [
        ("base.html", BASE),
        (PAGE_TEMPLATE, PAGE),
        (ACTIVITY_TEMPLATE, ACTIVITY),
    ] {
        templates
            .add_template(name, source)
            .expect("the console's templates are valid");
    }
    templates
}

/// Serves the console on `listener` until the process ends.
pub(super) async fn serve(listener: tokio::net::TcpListener, pages: Arc<Pages>) {
    let limits = crate::serve::Limits {
        max_connections: 32,
        head_timeout: Duration::from_secs(10),
        // The event stream stays open while the page does.
        connection_time: None,
        keep_alive: true,
        max_headers: 64,
        max_head_bytes: 16 * 1024,
    };
    let make = move |_peer| {
        let pages = pages.clone();
        hyper::service::service_fn(move |request| {
            let pages = pages.clone();
            async move { Ok::<_, Infallible>(answer(&pages, request).await) }
        })
    };
    tracing::debug!("console: serving");
    crate::serve::serve(listener, limits, make, std::future::pending()).await;
}

async fn answer(pages: &Pages, request: Request<Incoming>) -> Response<Body> {
    let (head, body) = request.into_parts();
    match guard::check_host(&head, Some(&pages.hosts)) {
        Ok(()) => {}
        Err(guard::Refusal::BadRequest(why)) => return plain(StatusCode::BAD_REQUEST, why),
        Err(_) => return plain(StatusCode::FORBIDDEN, "this Host is not allowed"),
    }
    // Behind a sign-in, the console's own address and the sign-in's way
    // back are outside the secret path.
    if let Some(gate) = &pages.gate {
        match (head.uri.path(), &head.method) {
            ("/callback", &Method::GET) => return gate.callback(head.uri.query()).await,
            ("/", &Method::GET) => {
                return match gate.person(&head.headers) {
                    Some(_) => gate.to_the_pages(),
                    None => gate.begin().await,
                }
            }
            _ => {}
        }
    }
    let Some(rest) = under_secret(head.uri.path(), &pages.secret) else {
        return plain(StatusCode::NOT_FOUND, "not found");
    };
    if let Some(gate) = &pages.gate {
        if gate.person(&head.headers).is_none() {
            return match (rest, &head.method) {
                ("/" | "/activity", &Method::GET) => gate.begin().await,
                _ => plain(
                    StatusCode::UNAUTHORIZED,
                    "sign in first: open the console's page",
                ),
            };
        }
    }
    match (rest, &head.method) {
        ("/", &Method::GET | &Method::HEAD) => views::page(pages).await,
        ("/page.js", &Method::GET | &Method::HEAD) => {
            let mut response = text(StatusCode::OK, SCRIPT);
            set(
                &mut response,
                CONTENT_TYPE,
                "text/javascript; charset=utf-8",
            );
            response
        }
        ("/events", &Method::GET) => events(pages),
        ("/activity", &Method::GET | &Method::HEAD) => recent::page(pages, head.uri.query()),
        ("/activity/events", &Method::GET) => recent::events(pages),
        ("/decide", &Method::POST) => match actions::form(pages, &head, body).await {
            Ok(form) => actions::decide(pages, &form),
            Err(refused) => refused,
        },
        ("/revoke", &Method::POST) => match actions::form(pages, &head, body).await {
            Ok(form) => actions::revoke(&form).await,
            Err(refused) => refused,
        },
        ("/accept", &Method::POST) => match actions::form(pages, &head, body).await {
            Ok(form) => actions::accept(pages, &form).await,
            Err(refused) => refused,
        },
        ("/keep", &Method::POST) => match actions::form(pages, &head, body).await {
            Ok(form) => actions::keep_hidden(pages, &form),
            Err(refused) => refused,
        },
        ("/switch", &Method::POST) => match actions::form(pages, &head, body).await {
            Ok(form) => actions::switch(&form).await,
            Err(refused) => refused,
        },
        (
            "/" | "/page.js" | "/events" | "/activity" | "/activity/events" | "/decide" | "/revoke"
            | "/accept" | "/switch",
            _,
        ) => plain(StatusCode::METHOD_NOT_ALLOWED, "not with this method"),
        _ => plain(StatusCode::NOT_FOUND, "not found"),
    }
}

/// The path after `/SECRET`, when it starts so (compared in constant time).
fn under_secret<'p>(path: &'p str, secret: &str) -> Option<&'p str> {
    let rest = path.strip_prefix('/')?;
    let (first, rest) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let same: bool = first.as_bytes().ct_eq(secret.as_bytes()).into();
    (same && !rest.is_empty()).then_some(rest)
}

fn events(pages: &Pages) -> Response<Body> {
    let changes = pages.desk.changes();
    let stream = futures_util::stream::unfold(changes, |mut changes| async move {
        changes.changed().await.ok()?;
        let frame = Frame::data(Bytes::from_static(b"event: changed\ndata: \n\n"));
        Some((Ok::<_, Infallible>(frame), changes))
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    set(&mut response, CONTENT_TYPE, "text/event-stream");
    set(&mut response, CACHE_CONTROL, "no-store");
    response
}

pub(super) fn back_to_the_page() -> Response<Body> {
    let mut response = text(StatusCode::SEE_OTHER, "done");
    set(&mut response, LOCATION, "./");
    response
}

pub(super) fn text(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(BodyExt::boxed(Full::new(text.into())));
    *response.status_mut() = status;
    for (name, value) in [
        ("content-security-policy", POLICY),
        ("x-frame-options", "DENY"),
        // The URL holds the secret: no other site may learn it from a
        // referrer (and the page's own posts keep their Origin, which a
        // no-referrer policy would make "null").
        ("referrer-policy", "same-origin"),
        ("x-content-type-options", "nosniff"),
        ("cache-control", "no-store"),
    ] {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(value));
    }
    response
}

pub(super) fn plain(status: StatusCode, why: &'static str) -> Response<Body> {
    let mut response = text(status, format!("{why}\n"));
    set(&mut response, CONTENT_TYPE, "text/plain; charset=utf-8");
    response
}

pub(super) fn set(
    response: &mut Response<Body>,
    name: hyper::header::HeaderName,
    value: &'static str,
) {
    response
        .headers_mut()
        .insert(name, HeaderValue::from_static(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_render_with_nothing_to_show() {
        let templates = templates();
        for name in [PAGE_TEMPLATE, ACTIVITY_TEMPLATE] {
            let html = templates
                .get_template(name)
                .and_then(|t| t.render(minijinja::context! { filter => minijinja::context! {} }))
                .expect("renders");
            assert!(
                html.contains("<main>") && html.contains("page.js"),
                "{name}"
            );
        }
    }

    #[test]
    fn only_the_secret_opens_the_console() {
        let secret = "0123456789abcdef0123456789abcdef";
        assert_eq!(under_secret(&format!("/{secret}/"), secret), Some("/"));
        assert_eq!(
            under_secret(&format!("/{secret}/decide"), secret),
            Some("/decide")
        );
        assert_eq!(under_secret(&format!("/{secret}"), secret), None);
        assert_eq!(under_secret("/", secret), None);
        assert_eq!(
            under_secret("/0123456789abcdef0123456789abcdee/", secret),
            None
        );
        assert_eq!(under_secret(&format!("/x{secret}/"), secret), None);
    }
}
