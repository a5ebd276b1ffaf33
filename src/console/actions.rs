//! What the console's forms do, once each is known to come from the page
//! (`form`: its origin, its kind, its size and its token): a decision
//! about a waiting call, a lasting approval revoked, a drifted pin
//! accepted, a tool switched off or on. Each names what the page showed;
//! what is no longer there is 409, and nothing else is touched.

use super::page::{back_to_the_page, plain, Body, Pages, MAX_FORM_BYTES};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Response, StatusCode};
use mcp_chain_middleware::approve::desk::PageAnswer;
use mcp_chain_middleware::shown::shown;
use subtle::ConstantTimeEq;

/// A form the page posted, once it is known to come from the page: its
/// origin, its kind, its size and its token checked. Its fields.
pub(super) async fn form(
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
pub(super) fn decide(pages: &Pages, form: &[(String, String)]) -> Response<Body> {
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

/// What a person is told when the replicas' shared state is away.
const AWAY: &str = "the state replicas share is unavailable; nothing was changed (try again)";

/// A lasting approval taken back: named by its place and its tool, so a
/// list changed meanwhile revokes nothing else.
pub(super) async fn revoke(form: &[(String, String)]) -> Response<Body> {
    let Some(book) = mcp_chain_middleware::approve::book::installed() else {
        return plain(StatusCode::CONFLICT, "no lasting approvals are kept here");
    };
    let index = field(form, "index").and_then(|v| v.parse::<usize>().ok());
    let tool = field(form, "tool");
    let (Some(index), Some(tool)) = (index, tool) else {
        return plain(StatusCode::BAD_REQUEST, "a revoke names an approval");
    };
    let grants = match book.all().await {
        Ok(grants) => grants,
        Err(_) => return plain(StatusCode::SERVICE_UNAVAILABLE, AWAY),
    };
    let named = grants.get(index).filter(|g| shown(&g.tool, 200) == tool);
    let Some(grant) = named else {
        return plain(StatusCode::CONFLICT, "that approval is no longer there");
    };
    match book.revoke(grant).await {
        Ok(true) => back_to_the_page(),
        Ok(false) => plain(StatusCode::CONFLICT, "that approval is no longer there"),
        Err(_) => plain(StatusCode::SERVICE_UNAVAILABLE, AWAY),
    }
}

/// The drift a form names, as the page showed it, if still there.
fn drift_named<'p>(
    pages: &'p Pages,
    form: &[(String, String)],
) -> Result<
    (
        &'p std::path::Path,
        mcp_chain_middleware::pin::file::Compared,
    ),
    Box<Response<Body>>,
> {
    let file = field(form, "file").and_then(|v| v.parse::<usize>().ok());
    let path = file.and_then(|n| pages.pin_files.get(n));
    let (Some(path), Some(name)) = (path, field(form, "name")) else {
        return Err(Box::new(plain(
            StatusCode::BAD_REQUEST,
            "the form names a pin file and a definition",
        )));
    };
    let compared = mcp_chain_middleware::pin::file::compared(path).unwrap_or_default();
    match compared
        .into_iter()
        .find(|(d, _, _)| shown(&d.name, 200) == name)
    {
        Some(found) => Ok((path, found)),
        None => Err(Box::new(plain(
            StatusCode::CONFLICT,
            "that drift is no longer there",
        ))),
    }
}

/// A drifted definition left hidden, as a person decided on the page.
pub(super) fn keep_hidden(pages: &Pages, form: &[(String, String)]) -> Response<Body> {
    let (path, (drift, _, seen)) = match drift_named(pages, form) {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
    let key = super::kept::key(path, drift.kind(), &drift.name, &seen);
    match super::kept::keep(key) {
        Ok(()) => {
            tracing::warn!(kind = drift.kind(), name = %shown(&drift.name, 200), "console: a drifted definition is kept hidden");
            back_to_the_page()
        }
        Err(e) => {
            tracing::warn!(error = %e, "console: \"keep hidden\" could not be kept");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "that choice could not be kept",
            )
        }
    }
}

/// A drifted definition accepted, as `mcp-chain pin accept NAME` does.
pub(super) async fn accept(pages: &Pages, form: &[(String, String)]) -> Response<Body> {
    let (path, (drift, _, _)) = match drift_named(pages, form) {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
    let names = std::slice::from_ref(&drift.name);
    match mcp_chain_middleware::pin::file::accept_shared(path, names).await {
        Ok(_) => back_to_the_page(),
        Err(e) => {
            tracing::warn!(error = %e, "console: a pin could not be accepted");
            plain(StatusCode::CONFLICT, "that drift could not be accepted")
        }
    }
}

/// A tool turned off or on for every session, at once.
pub(super) async fn switch(form: &[(String, String)]) -> Response<Body> {
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
    match board.set(&name, off).await {
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
