//! 2026-07-28 requests: no session. A client of that revision sends each
//! request on its own, naming its protocol version in `MCP-Protocol-Version`
//! (and in `_meta`) and its method and target in routing headers; nothing
//! ties one request to the next.
//!
//! Such a request is served by one of a small pool of shared server
//! sessions (each a session like any other: its own server and chain), so
//! a server is not started per request. Requests of many clients meet on
//! one server, so the front gives each request an id of its own, and its
//! progress token too, and gives the client's back in what it relays: two
//! clients both sending id 1 never see each other's answers.
//!
//! The routing headers must say what the body says (a load balancer or a
//! gateway may have routed on them): `Mcp-Method`, and `Mcp-Name` for a
//! call, a prompt or a read; a missing or different one is refused with 400
//! and -32020 before anything reaches the server.

use super::body::{json, rpc_error, too_many_sessions, Reply};
use super::handler::relay;
use super::routes::{Owner, Restore, Waiting};
use super::session::{Caller, Kind, Session};
use super::Front;
use crate::relay::Read;
use crate::upstream::ToolParams;
use base64::Engine as _;
use bytes::Bytes;
use hyper::HeaderMap;
use hyper::{Response, StatusCode};
use mcp_chain_middleware::message::Incoming;
use mcp_chain_middleware::message::{meta, method};
use mcp_chain_middleware::{ErrorCode, ErrorObject};
use mcp_chain_middleware::{Message, RequestId};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Shared server sessions for requests without a session.
pub(super) const POOL: usize = 2;

/// The revisions without sessions.
pub(super) const MODERN: [&str; 1] = ["2026-07-28"];

/// -32020: the routing headers do not say what the body says.
pub(super) const HEADER_MISMATCH: i64 = -32020;

/// The pool, and the ids the front gives requests.
#[derive(Default)]
pub(super) struct Pool {
    sessions: Mutex<Vec<Arc<Session>>>,
    /// Numbers the requests (`id`); never the turn, or the two would
    /// step together and pick the same session every time.
    next: AtomicU64,
    /// Whose turn it is: round robin over the pool's sessions.
    turn: AtomicU64,
    /// The parameters the server's listings mark (`x-mcp-header`): which
    /// `Mcp-Param-*` headers a call must carry. The pool's sessions run
    /// the same server, so they learn and check together.
    pub(super) marked: Arc<ToolParams>,
}

impl Pool {
    /// A live pool session for the next request (round robin), started
    /// when the pool is not full.
    pub(super) fn session(&self, front: &Arc<Front>, caller: &Caller) -> Option<Arc<Session>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|s| front.sessions.get(&s.id).is_some());
        let n = self.turn.fetch_add(1, Ordering::Relaxed) as usize;
        if sessions.len() < POOL {
            let session = front.sessions.open(front, Kind::Shared, caller)?;
            session.initialized();
            let mut routes = super::routes::lock(&session.routes);
            routes.stateless = true;
            routes.marked = Some(self.marked.clone());
            drop(routes);
            sessions.push(session.clone());
            return Some(session);
        }
        Some(sessions[n % sessions.len()].clone())
    }

    /// An id for a request, unique across the pool's sessions.
    pub(super) fn id(&self) -> RequestId {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        RequestId::String(format!("mcp-chain-{n}"))
    }

    /// A client's `notifications/cancelled`, as its server must get it:
    /// naming the front's id of that caller's own request, on the session
    /// serving it. `None` when the caller has no such request in flight
    /// (or two, under the same id): a client cannot name, and so cannot
    /// cancel, another client's request, whatever id it writes.
    fn cancellation(&self, owner: Owner, message: &mut Message) -> Option<Arc<Session>> {
        let named = message.params()?.member("requestId").ok()??;
        let named = RequestId::from_value(&named)?;
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = sessions.iter().filter_map(|session| {
            let (post, ours) = super::routes::lock(&session.routes).renamed(owner, &named)?;
            Some((session.clone(), post, ours))
        });
        let (session, post, ours) = found.next()?;
        if found.next().is_some() {
            return None;
        }
        let params = message.params_mut()?;
        params.set_member("requestId", ours.to_value()).ok()?;
        super::routes::lock(&session.routes).cancelled(post);
        Some(session)
    }
}

/// Whether a request without a session is of a revision without sessions.
pub(super) fn is_modern(headers: &HeaderMap, message: &Message) -> bool {
    let header = headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok());
    let meta = meta_version(message);
    [header, meta.as_deref()]
        .iter()
        .flatten()
        .any(|v| MODERN.contains(v))
}

fn meta_version(message: &Message) -> Option<String> {
    let meta = message.params()?.member("_meta").ok()??;
    Some(meta.get(meta::PROTOCOL_VERSION)?.as_str()?.to_owned())
}

/// What is wrong with a request's routing headers, if anything.
pub(super) fn mismatch(
    headers: &HeaderMap,
    message: &Message,
    marked: &ToolParams,
) -> Option<String> {
    let header = |name: &str| -> Result<Option<String>, String> {
        let Some(value) = headers.get(name) else {
            return Ok(None);
        };
        let text = value
            .to_str()
            .map_err(|_| format!("{name} is not visible ASCII"))?;
        decoded(text)
            .map(Some)
            .ok_or_else(|| format!("{name} has a malformed =?base64?…?= value"))
    };
    let method = message.method()?;
    let version = header("mcp-protocol-version");
    match (version, meta_version(message)) {
        (Ok(None), _) => return Some("MCP-Protocol-Version is required".into()),
        (Ok(Some(h)), Some(m)) if h != m => {
            return Some(format!(
                "MCP-Protocol-Version {h:?} does not match _meta {m:?}"
            ));
        }
        (Err(e), _) => return Some(e),
        _ => {}
    }
    match header("mcp-method") {
        Ok(Some(h)) if h == method => {}
        Ok(Some(h)) => {
            return Some(format!(
                "Mcp-Method {h:?} does not match the body's method {method:?}"
            ))
        }
        Ok(None) => return Some("Mcp-Method is required".into()),
        Err(e) => return Some(e),
    }
    let member = match method {
        method::TOOLS_CALL | method::PROMPTS_GET => "name",
        method::RESOURCES_READ => "uri",
        _ => return None,
    };
    let body = message
        .params()
        .and_then(|p| p.str_member(member).ok().flatten());
    match (header("mcp-name"), &body) {
        (Ok(Some(h)), Some(b)) if h == **b => {}
        (Ok(Some(h)), b) => {
            return Some(format!(
                "Mcp-Name {h:?} does not match the body's {member} {b:?}"
            ))
        }
        (Ok(None), _) => return Some("Mcp-Name is required".into()),
        (Err(e), _) => return Some(e),
    }
    let (Some(tool), true) = (body, method == method::TOOLS_CALL) else {
        return None;
    };
    params_mismatch(headers, message, &tool, marked)
}

/// What is wrong with a call's `Mcp-Param-*` headers, against the marks
/// its server's listing put on the tool's parameters: each marked argument
/// present must be mirrored (numbers compared as numbers), and no header
/// may name an argument the call does not carry. A tool whose listing was
/// not seen yet cannot be checked.
fn params_mismatch(
    headers: &HeaderMap,
    message: &Message,
    tool: &str,
    marked: &ToolParams,
) -> Option<String> {
    let arguments = || message.params()?.member("arguments").ok().flatten();
    let expected = marked.headers(tool, arguments);
    for (name, value) in &expected {
        let want = decoded(value.to_str().unwrap_or_default()).unwrap_or_default();
        let got = headers.get(name).and_then(|v| v.to_str().ok()).map(decoded);
        match got {
            Some(Some(got)) if got == want || same_number(&got, &want) => {}
            Some(_) => return Some(format!("{name} does not match the body's argument")),
            None => return Some(format!("{name} is required: the tool marks this argument")),
        }
    }
    let extra = headers
        .keys()
        .filter(|k| k.as_str().starts_with("mcp-param-"))
        .find(|k| !expected.iter().any(|(name, _)| name == *k));
    match extra {
        Some(name) if marked.knows(tool) => Some(format!("{name} names no argument of this call")),
        _ => None,
    }
}

fn same_number(a: &str, b: &str) -> bool {
    matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

/// A header value as the client meant it: `=?base64?…?=` decoded.
fn decoded(value: &str) -> Option<String> {
    let Some(b64) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    String::from_utf8(bytes).ok()
}

/// The request as the pool session gets it: the front's id for the
/// client's, and the front's progress token for the client's. Returns what
/// to give back: the client's id and token.
pub(super) fn remap(message: &mut Message, id: RequestId) -> (RequestId, Option<(String, Value)>) {
    let Message::Request(request) = message else {
        unreachable!("only requests are remapped");
    };
    let client_id = std::mem::replace(&mut request.id, id.clone());
    let token = request.params.as_mut().and_then(|params| {
        let mut meta = params.member("_meta").ok()??;
        let original = meta.get("progressToken")?.clone();
        let ours = id.to_value();
        meta.as_object_mut()?
            .insert("progressToken".into(), ours.clone());
        params.set_member("_meta", meta).ok()?;
        Some((ours.to_string(), original))
    });
    (client_id, token)
}

/// A request without a session, of a revision without sessions: checked
/// (routing headers), renamed, and served by a pool session.
pub(super) async fn post(
    front: &Arc<Front>,
    caller: &Caller,
    headers: &hyper::HeaderMap,
    read: Read,
    events: bool,
) -> Response<Reply> {
    let Read::Parsed(Incoming::Single(Ok(mut message))) = read else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "one request or notification a POST",
        );
    };
    if matches!(message, Message::Response(_) | Message::Error(_)) {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "a client sends no answers without a session",
        );
    }
    if let Some(why) = mismatch(headers, &message, &front.pool.marked) {
        let error = ErrorObject::new(
            ErrorCode(HEADER_MISMATCH),
            format!("Header mismatch: {why}"),
        );
        let mut line = Vec::new();
        Message::error(message.id().cloned(), error).write_line(&mut line);
        return json(StatusCode::BAD_REQUEST, Bytes::from(line));
    }
    if message.method() == Some(method::NOTIFICATION_CANCELLED) {
        // Only the caller's own request, renamed; else nothing is sent,
        // and the answer does not say whether such a request exists.
        if let Some(session) = front.pool.cancellation(caller.token, &mut message) {
            session
                .send(Read::Parsed(Incoming::Single(Ok(message))))
                .await;
        }
        return super::body::status(StatusCode::ACCEPTED, "");
    }
    let Some(session) = front.pool.session(front, caller) else {
        return too_many_sessions();
    };
    let mut waiting = Waiting {
        ids: Vec::new(),
        tokens: Vec::new(),
        events,
        restore: None,
        listen: false,
        lists_tools: false,
    };
    if let Message::Request(request) = &message {
        waiting.listen = request.method == method::SUBSCRIPTIONS_LISTEN;
        waiting.lists_tools = request.method == method::TOOLS_LIST;
        let id = front.pool.id();
        let (client_id, token) = remap(&mut message, id.clone());
        waiting.ids.push(id);
        waiting
            .tokens
            .extend(token.as_ref().map(|(ours, _)| ours.clone()));
        waiting.restore = Some(Restore {
            id: client_id,
            token: token.map(|(_, theirs)| theirs),
            owner: caller.token,
        });
    }
    relay(
        &session,
        Read::Parsed(Incoming::Single(Ok(message))),
        waiting,
        false,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(method: &str, params: Value) -> Message {
        Message::request(1u64, method, Some(params))
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        map
    }

    #[test]
    fn routing_headers_must_say_what_the_body_says() {
        let call = request(
            "tools/call",
            json!({"name": "add", "_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}),
        );
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "add"),
        ];
        assert_eq!(
            mismatch(&headers(&good), &call, &ToolParams::default()),
            None
        );
        let encoded = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?YWRk?="),
        ];
        assert_eq!(
            mismatch(&headers(&encoded), &call, &ToolParams::default()),
            None
        );
        for bad in [
            &good[..2],
            &[good[0], good[1], ("mcp-name", "rm")][..],
            &[good[0], ("mcp-method", "tools/list"), good[2]][..],
            &good[1..],
            &[("mcp-protocol-version", "2025-11-25"), good[1], good[2]][..],
            &[good[0], good[1], ("mcp-name", "=?base64?!!?=")][..],
        ] {
            assert!(
                mismatch(&headers(bad), &call, &ToolParams::default()).is_some(),
                "{bad:?}"
            );
        }
        let list = request("tools/list", json!({}));
        assert_eq!(
            mismatch(
                &headers(&[good[0], ("mcp-method", "tools/list")]),
                &list,
                &ToolParams::default()
            ),
            None
        );
    }

    #[test]
    fn marked_arguments_must_be_mirrored_in_their_headers() {
        let marked = ToolParams::default();
        let mut listing = mcp_chain_middleware::message::Payload::from(json!({"tools": [{
            "name": "deploy",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "replicas": {"type": "integer", "x-mcp-header": "Replicas"},
                "note": {"type": "string"}
            }}
        }]}));
        marked.learn(&mut listing);
        let meta = json!({meta::PROTOCOL_VERSION: "2026-07-28"});
        let call = |arguments: Value| {
            request(
                "tools/call",
                json!({"name": "deploy", "arguments": arguments, "_meta": meta}),
            )
        };
        let base = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "deploy"),
        ];
        let with = |extra: &[(&'static str, &'static str)]| headers(&[&base[..], extra].concat());
        let both = json!({"region": "eu", "replicas": 3, "note": "x"});
        let ok = with(&[("mcp-param-region", "eu"), ("mcp-param-replicas", "3.0")]);
        assert_eq!(mismatch(&ok, &call(both.clone()), &marked), None);
        for bad in [
            with(&[("mcp-param-region", "eu")]),
            with(&[("mcp-param-region", "us"), ("mcp-param-replicas", "3")]),
            with(&[]),
        ] {
            assert!(
                mismatch(&bad, &call(both.clone()), &marked).is_some(),
                "{bad:?}"
            );
        }
        // An argument the call does not carry has no header, and a header
        // for it is refused.
        let only_region = json!({"region": "eu"});
        assert_eq!(
            mismatch(
                &with(&[("mcp-param-region", "eu")]),
                &call(only_region.clone()),
                &marked
            ),
            None
        );
        let stray = with(&[("mcp-param-region", "eu"), ("mcp-param-replicas", "3")]);
        assert!(mismatch(&stray, &call(only_region), &marked).is_some());
    }

    #[test]
    fn ids_and_progress_tokens_are_the_fronts_and_given_back() {
        let mut call = request(
            "tools/call",
            json!({"name": "add", "_meta": {"progressToken": 5, "other": 1}}),
        );
        let (id, token) = remap(&mut call, RequestId::String("mcp-chain-9".into()));
        assert_eq!(id, RequestId::from(1u64));
        assert_eq!(token, Some(("\"mcp-chain-9\"".to_owned(), json!(5))));
        let value = call.to_value();
        assert_eq!(value["id"], "mcp-chain-9");
        assert_eq!(
            value["params"]["_meta"],
            json!({"progressToken": "mcp-chain-9", "other": 1})
        );
        assert_eq!(value["params"]["name"], "add");
    }
}
