//! How the console judges a request and answers it. Every request first:
//! its `Host` must be a loopback name (a page elsewhere that rebinds its
//! domain to 127.0.0.1 still sends its own), and its path must start with
//! the process's secret (anything else is 404, as if nothing were here).
//! Then:
//!
//! - `GET /SECRET/`: the approval page, what waits oldest first, every
//!   value escaped by the template engine (a tool or argument holding
//!   HTML is shown as text);
//! - `GET /SECRET/page.js`: its small script (live updates, local times);
//! - `GET /SECRET/events`: Server-Sent Events, one each time what waits
//!   changes;
//! - `POST /SECRET/revoke`: a lasting approval taken back (as `mcp-chain
//!   approve revoke` does), judged as a decision is;
//! - `POST /SECRET/decide`: a decision. Only a POST decides (a link, a
//!   prefetch or a GET cannot), only from this page's own origin (`Origin`,
//!   `Sec-Fetch-Site`), only with the page's token; a refusal is a 4xx,
//!   never a redirect, and an answer to a call that no longer waits (a
//!   replay) is 409.

use super::super::front::guard;
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use mcp_chain_middleware::approve::desk::{Desk, PageAnswer, Waiting};
use mcp_chain_middleware::shown::shown;
use serde::Serialize;
use serde_json::Value;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use subtle::ConstantTimeEq;

type Body = BoxBody<Bytes, Infallible>;

const PAGE: &str = include_str!("approvals.html");
const SCRIPT: &str = include_str!("page.js");

/// How much of one argument's value is shown before it is folded, and
/// the most of it the page carries at all.
const FOLD_AT: usize = 300;
const SHOW_AT_MOST: usize = 64 * 1024;

/// The most of a decision's form read.
const MAX_FORM_BYTES: usize = 4096;

/// No inline script, no other origin, no framing: the page can only run
/// its own script and post to itself.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub(super) struct Pages {
    desk: Arc<Desk>,
    bound: SocketAddr,
    secret: String,
    /// Carried by every deciding request (the page embeds it).
    token: String,
    hosts: Vec<String>,
    origins: Vec<String>,
    /// The config's pin files: their drift is shown, and accepted here.
    pin_files: Vec<std::path::PathBuf>,
    templates: minijinja::Environment<'static>,
}

impl Pages {
    pub(super) fn new(
        desk: Arc<Desk>,
        bound: SocketAddr,
        secret: String,
        token: String,
        pin_files: Vec<std::path::PathBuf>,
    ) -> Self {
        let hosts = guard::answered_hosts(&[], bound).unwrap_or_default();
        let port = bound.port();
        let origins = [
            "127.0.0.1".to_owned(),
            "localhost".to_owned(),
            "[::1]".to_owned(),
        ]
        .iter()
        .map(|host| format!("http://{host}:{port}"))
        .collect();
        let mut templates = minijinja::Environment::new();
        templates
            .add_template("approvals.html", PAGE)
            .expect("the approval page's template is valid");
        Self {
            desk,
            bound,
            secret,
            token,
            hosts,
            origins,
            pin_files,
            templates,
        }
    }
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
    let Some(rest) = under_secret(head.uri.path(), &pages.secret) else {
        return plain(StatusCode::NOT_FOUND, "not found");
    };
    match (rest, &head.method) {
        ("/", &Method::GET | &Method::HEAD) => page(pages),
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
        ("/decide", &Method::POST) => match form(pages, &head, body).await {
            Ok(form) => decide(pages, &form),
            Err(refused) => refused,
        },
        ("/revoke", &Method::POST) => match form(pages, &head, body).await {
            Ok(form) => revoke(&form),
            Err(refused) => refused,
        },
        ("/accept", &Method::POST) => match form(pages, &head, body).await {
            Ok(form) => accept(pages, &form),
            Err(refused) => refused,
        },
        ("/switch", &Method::POST) => match form(pages, &head, body).await {
            Ok(form) => switch(&form),
            Err(refused) => refused,
        },
        ("/" | "/page.js" | "/events" | "/decide" | "/revoke" | "/accept" | "/switch", _) => {
            plain(StatusCode::METHOD_NOT_ALLOWED, "not with this method")
        }
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

#[derive(Serialize)]
struct Shown {
    id: u64,
    tool: String,
    caller: Option<String>,
    policy: String,
    session_choice: bool,
    always_choice: bool,
    since_ms: u128,
    waited_s: u64,
    arguments: Vec<Argument>,
}

#[derive(Serialize)]
struct ShownGrant {
    index: usize,
    tool: String,
    server: String,
    arguments: Option<String>,
    granted_ms: u128,
    caller: Option<String>,
}

#[derive(Serialize)]
struct Argument {
    key: String,
    head: String,
    full: Option<String>,
    length: usize,
    cut: bool,
}

fn page(pages: &Pages) -> Response<Body> {
    let now = SystemTime::now();
    let waiting: Vec<Shown> = pages
        .desk
        .waiting()
        .into_iter()
        .map(|w| shown_waiting(&w, now))
        .collect();
    let grants: Vec<ShownGrant> = mcp_chain_middleware::approve::book::installed()
        .map(|book| book.grants())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(index, g)| ShownGrant {
            index,
            tool: shown(&g.tool, 200),
            server: shown(&g.server, 200),
            arguments: g.arguments.clone(),
            granted_ms: u128::from(g.granted_at) * 1000,
            caller: g.caller.as_deref().map(|c| shown(c, 200)),
        })
        .collect();
    let context = minijinja::context! {
        waiting => waiting,
        grants => grants,
        drifts => drifts(pages),
        tools => tools(),
        token => &pages.token,
        listen => pages.bound.to_string(),
    };
    let rendered = pages
        .templates
        .get_template("approvals.html")
        .and_then(|t| t.render(context));
    match rendered {
        Ok(html) => {
            let mut response = text(StatusCode::OK, html);
            set(&mut response, CONTENT_TYPE, "text/html; charset=utf-8");
            response
        }
        Err(e) => {
            tracing::warn!(error = %e, "console: the approval page could not be rendered");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be rendered",
            )
        }
    }
}

fn shown_waiting(w: &Waiting, now: SystemTime) -> Shown {
    let arguments = match &w.arguments {
        Value::Object(map) if map.is_empty() => Vec::new(),
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| argument(&Value::String(key.clone()).to_string(), value))
            .collect(),
        other => vec![argument("(arguments)", other)],
    };
    Shown {
        id: w.id,
        tool: shown(&w.tool, 200),
        caller: w.caller.as_deref().map(|c| shown(c, 200)),
        policy: shown(&w.policy, 300),
        session_choice: w.session_choice,
        always_choice: w.always_choice,
        since_ms: w
            .since
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
        waited_s: now.duration_since(w.since).map_or(0, |d| d.as_secs()),
        arguments,
    }
}

/// One argument as the page shows it: its value as JSON, folded past
/// [`FOLD_AT`] characters with its full length, carried up to
/// [`SHOW_AT_MOST`].
fn argument(key: &str, value: &Value) -> Argument {
    let json = serde_json::to_string_pretty(value).unwrap_or_default();
    let length = json.chars().count();
    let head: String = json.chars().take(FOLD_AT).collect();
    let full = (length > FOLD_AT).then(|| json.chars().take(SHOW_AT_MOST).collect());
    Argument {
        key: shown(key, 200),
        head,
        full,
        length,
        cut: length > SHOW_AT_MOST,
    }
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

/// A form the page posted, once it is known to come from the page: its
/// origin, its kind, its size and its token checked. Its fields.
async fn form(
    pages: &Pages,
    head: &hyper::http::request::Parts,
    body: Incoming,
) -> Result<Vec<(String, String)>, Response<Body>> {
    let header = |name: &str| head.headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(origin) = header("origin") {
        if !pages.origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return Err(plain(
                StatusCode::FORBIDDEN,
                "a decision comes from this page only (Origin)",
            ));
        }
    }
    if header("sec-fetch-site").is_some_and(|site| site != "same-origin") {
        return Err(plain(
            StatusCode::FORBIDDEN,
            "a decision comes from this page only (Sec-Fetch-Site)",
        ));
    }
    if header("content-type") != Some("application/x-www-form-urlencoded") {
        return Err(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a decision is a form",
        ));
    }
    let Ok(collected) = Limited::new(body, MAX_FORM_BYTES).collect().await else {
        return Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "a decision is a small form",
        ));
    };
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(&collected.to_bytes())
        .into_owned()
        .collect();
    let token = fields
        .iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.as_bytes());
    let good_token: bool = token.is_some_and(|t| bool::from(t.ct_eq(pages.token.as_bytes())));
    if !good_token {
        return Err(plain(
            StatusCode::FORBIDDEN,
            "a decision carries this page's token",
        ));
    }
    Ok(fields)
}

fn field<'f>(form: &'f [(String, String)], name: &str) -> Option<&'f str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A decision about a waiting call.
fn decide(pages: &Pages, form: &[(String, String)]) -> Response<Body> {
    let id = field(form, "id").and_then(|v| v.parse::<u64>().ok());
    let choice = field(form, "choice").and_then(PageAnswer::parse);
    let (Some(id), Some(choice)) = (id, choice) else {
        return plain(
            StatusCode::BAD_REQUEST,
            "a decision names a call and a choice",
        );
    };
    if !pages.desk.decide(id, choice) {
        return plain(
            StatusCode::CONFLICT,
            "this call no longer waits for an answer (or that choice is not offered)",
        );
    }
    back_to_the_page()
}

/// A lasting approval taken back: named by its place and its tool, so a
/// list changed meanwhile revokes nothing else.
fn revoke(form: &[(String, String)]) -> Response<Body> {
    let Some(book) = mcp_chain_middleware::approve::book::installed() else {
        return plain(StatusCode::CONFLICT, "no lasting approvals are kept here");
    };
    let index = field(form, "index").and_then(|v| v.parse::<usize>().ok());
    let tool = field(form, "tool");
    let (Some(index), Some(tool)) = (index, tool) else {
        return plain(StatusCode::BAD_REQUEST, "a revoke names an approval");
    };
    let same = book
        .grants()
        .get(index)
        .is_some_and(|g| shown(&g.tool, 200) == tool);
    if !same || !book.revoke(index) {
        return plain(StatusCode::CONFLICT, "that approval is no longer there");
    }
    back_to_the_page()
}

#[derive(Serialize)]
struct ShownDrift {
    file: usize,
    kind: &'static str,
    name: String,
    what: String,
    rows: Vec<(String, String, String)>,
}

/// What drifted from the pins, with the pinned and the seen definition of
/// each field that differs (every field of a new one), escaped and cut.
fn drifts(pages: &Pages) -> Vec<ShownDrift> {
    let cut = |text: &str| shown(text, 2000);
    let mut shown_drifts = Vec::new();
    for (file, path) in pages.pin_files.iter().enumerate() {
        let Ok(compared) = mcp_chain_middleware::pin::file::compared(path) else {
            continue;
        };
        for (drift, pinned, seen) in compared {
            let fields: Vec<&String> = match drift.changed.is_empty() {
                true => seen.keys().collect(),
                false => drift.changed.iter().collect(),
            };
            let rows = fields
                .into_iter()
                .map(|field| {
                    let old = pinned.as_ref().and_then(|p| p.get(field));
                    let new = seen.get(field);
                    (
                        cut(field),
                        old.map_or_else(|| "(none)".to_owned(), |t| cut(t)),
                        new.map_or_else(|| "(none)".to_owned(), |t| cut(t)),
                    )
                })
                .collect();
            shown_drifts.push(ShownDrift {
                file,
                kind: drift.kind(),
                name: shown(&drift.name, 200),
                what: drift.what(),
                rows,
            });
        }
    }
    shown_drifts
}

/// A drifted definition accepted, as `mcp-chain pin accept NAME` does.
fn accept(pages: &Pages, form: &[(String, String)]) -> Response<Body> {
    let file = field(form, "file").and_then(|v| v.parse::<usize>().ok());
    let path = file.and_then(|n| pages.pin_files.get(n));
    let (Some(path), Some(name)) = (path, field(form, "name")) else {
        return plain(
            StatusCode::BAD_REQUEST,
            "an accept names a pin file and a definition",
        );
    };
    // The name as the page showed it: the drift it names, if still there.
    let compared = mcp_chain_middleware::pin::file::compared(path).unwrap_or_default();
    let Some((drift, _, _)) = compared
        .iter()
        .find(|(d, _, _)| shown(&d.name, 200) == name)
    else {
        return plain(StatusCode::CONFLICT, "that drift is no longer there");
    };
    match mcp_chain_middleware::pin::file::accept(path, std::slice::from_ref(&drift.name)) {
        Ok(_) => back_to_the_page(),
        Err(e) => {
            tracing::warn!(error = %e, "console: a pin could not be accepted");
            plain(StatusCode::CONFLICT, "that drift could not be accepted")
        }
    }
}

#[derive(Serialize)]
struct ShownTool {
    name: String,
    off: bool,
}

/// The tools the server listed and those switched off, by name.
fn tools() -> Vec<ShownTool> {
    let Some(board) = mcp_chain_middleware::switch::installed() else {
        return Vec::new();
    };
    let (off, seen) = board.tools();
    let mut names: Vec<String> = seen.into_iter().chain(off.iter().cloned()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| ShownTool {
            off: off.contains(&name),
            name: shown(&name, 200),
        })
        .collect()
}

/// A tool turned off or on for every session, at once.
fn switch(form: &[(String, String)]) -> Response<Body> {
    let Some(board) = mcp_chain_middleware::switch::installed() else {
        return plain(StatusCode::CONFLICT, "no switches are kept here");
    };
    let off = match field(form, "to") {
        Some("off") => true,
        Some("on") => false,
        _ => return plain(StatusCode::BAD_REQUEST, "a switch says to = off or on"),
    };
    // The name as the page showed it: one of the tools the page listed.
    let (switched, seen) = board.tools();
    let name = field(form, "tool").and_then(|shown_name| {
        seen.iter()
            .chain(&switched)
            .find(|n| shown(n, 200) == shown_name)
            .cloned()
    });
    let Some(name) = name else {
        return plain(StatusCode::CONFLICT, "that tool is not one the page listed");
    };
    match board.set(&name, off) {
        Ok(()) => back_to_the_page(),
        Err(e) => {
            tracing::warn!(error = %e, "console: a switch could not be kept");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the switch could not be kept",
            )
        }
    }
}

fn back_to_the_page() -> Response<Body> {
    let mut response = text(StatusCode::SEE_OTHER, "done");
    set(&mut response, LOCATION, "./");
    response
}

fn text(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
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

fn plain(status: StatusCode, why: &'static str) -> Response<Body> {
    let mut response = text(status, format!("{why}\n"));
    set(&mut response, CONTENT_TYPE, "text/plain; charset=utf-8");
    response
}

fn set(response: &mut Response<Body>, name: hyper::header::HeaderName, value: &'static str) {
    response
        .headers_mut()
        .insert(name, HeaderValue::from_static(value));
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_long_argument_is_folded_with_its_length() {
        let long = Value::String("x".repeat(1000));
        let shown = argument("\"body\"", &long);
        assert_eq!(shown.length, 1002);
        assert_eq!(shown.head.chars().count(), FOLD_AT);
        assert!(shown.full.is_some() && !shown.cut);
        let short = argument("\"n\"", &Value::from(5));
        assert!(short.full.is_none() && short.head == "5");
    }
}
