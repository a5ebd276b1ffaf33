//! One HTTP request to the front: checked (`guard`), then a POST, GET or
//! DELETE on the Streamable HTTP endpoint, or the legacy `/sse` stream and
//! its `/messages` POSTs.

use super::body::{self, event_stream, json, rpc_error, status, too_many_sessions, Reply};
use super::guard::Refusal;
use super::routes::{self, Waiting};
use super::session::{self, Caller, Kind, Session};
use super::stateless;
use super::Front;
use crate::mcp_http::{self, LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
use crate::relay::Read;
use hyper::body::Incoming as HttpBody;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use mcp_chain_middleware::message::{method, Incoming};
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

type Answer = Response<Reply>;

pub(super) async fn handle(
    front: Arc<Front>,
    req: Request<HttpBody>,
    peer: SocketAddr,
) -> Result<Answer, Infallible> {
    let (head, body) = req.into_parts();
    let path = head.uri.path();
    let legacy = front.settings.legacy_sse && (path == "/sse" || path == "/messages");
    if path != front.settings.path && !legacy {
        return Ok(status(StatusCode::NOT_FOUND, "no MCP endpoint here"));
    }
    let caller = match front.guard.check(&head) {
        Ok(token) => Caller { peer, token },
        Err(Refusal::Unauthorized) => {
            let mut answer = status(StatusCode::UNAUTHORIZED, "a bearer token is required");
            answer
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return Ok(answer);
        }
        Err(Refusal::Forbidden(why)) => return Ok(status(StatusCode::FORBIDDEN, why)),
        Err(Refusal::BadRequest(why)) => return Ok(status(StatusCode::BAD_REQUEST, why)),
    };
    if let Some(version) = head.headers.get(PROTOCOL_VERSION) {
        if !mcp_http::is_known(version.as_bytes()) {
            return Ok(rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "unsupported MCP-Protocol-Version",
            ));
        }
    }
    let session_id = head
        .headers
        .get(SESSION_ID)
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    Ok(match (&head.method, path) {
        (&Method::GET, "/sse") => legacy_stream(&front, &caller),
        (&Method::POST, "/messages") => {
            let query = head.uri.query().unwrap_or_default();
            let id = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("sessionId="))
                .map(str::to_owned);
            match find(&front, &caller, id.as_deref()) {
                Ok(session) if session.legacy => {
                    post(&front, &caller, &head.headers, Some(session), body, false).await
                }
                Ok(_) => status(StatusCode::NOT_FOUND, "no such legacy session"),
                Err(answer) => *answer,
            }
        }
        (&Method::POST, _) => {
            let events = match accepts(&head.headers) {
                Some(events) => events,
                None => {
                    return Ok(status(
                        StatusCode::NOT_ACCEPTABLE,
                        "accept application/json or text/event-stream",
                    ))
                }
            };
            let session = match session_id {
                None => None,
                Some(id) => match find(&front, &caller, Some(&id)) {
                    Ok(session) => Some(session),
                    Err(answer) => return Ok(*answer),
                },
            };
            post(&front, &caller, &head.headers, session, body, events).await
        }
        // Without a session there is no stream to open or session to end:
        // what a 2026-07-28 server answers (it has neither).
        (&Method::GET | &Method::DELETE, _) if session_id.is_none() => {
            let mut answer = status(
                StatusCode::METHOD_NOT_ALLOWED,
                "GET and DELETE need an Mcp-Session-Id",
            );
            answer
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST"));
            answer
        }
        (&Method::GET, _) => {
            if accepts(&head.headers) != Some(true) {
                return Ok(status(
                    StatusCode::NOT_ACCEPTABLE,
                    "the GET stream is text/event-stream",
                ));
            }
            match find(&front, &caller, session_id.as_deref()) {
                Ok(session) => {
                    let last = head
                        .headers
                        .get(LAST_EVENT_ID)
                        .and_then(|v| v.to_str().ok()?.parse().ok());
                    session.touch();
                    let events = routes::lock(&session.routes).get(last);
                    event_stream(Reply::events(events))
                }
                Err(answer) => *answer,
            }
        }
        (&Method::DELETE, _) => match find(&front, &caller, session_id.as_deref()) {
            Ok(session) => {
                front.sessions.remove(&session.id);
                session.stop();
                tracing::info!(session = %session::short(&session.id), "session ended by its client");
                status(StatusCode::OK, "")
            }
            Err(answer) => *answer,
        },
        _ => {
            let mut answer = status(StatusCode::METHOD_NOT_ALLOWED, "POST, GET or DELETE");
            answer
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST, GET, DELETE"));
            answer
        }
    })
}

/// A POST's messages to its session (a new one for `initialize`).
async fn post(
    front: &Arc<Front>,
    caller: &Caller,
    headers: &hyper::HeaderMap,
    session: Option<Arc<Session>>,
    body: HttpBody,
    events: bool,
) -> Answer {
    let read = match super::intake::take(front, body).await {
        Ok(read) => read,
        Err(refused) => return *refused,
    };
    let messages: Vec<&Message> = match &read {
        Read::Parsed(Incoming::Single(Ok(message))) => vec![message],
        Read::Parsed(Incoming::Batch(items)) if items.iter().all(Result::is_ok) => {
            items.iter().flatten().collect()
        }
        Read::Parsed(Incoming::Single(Err(invalid))) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                &format!("invalid JSON-RPC message: {}", invalid.reason),
            );
        }
        Read::Parsed(Incoming::Batch(_)) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "a batch holds an invalid message",
            );
        }
        Read::Unparsable { error, .. } => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::PARSE_ERROR,
                &format!("parse error: {error}"),
            );
        }
        Read::TooLong { .. } => {
            return status(StatusCode::PAYLOAD_TOO_LARGE, "the message is too long")
        }
        Read::OverBudget { why, .. } => {
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::OVER_BUDGET,
                &why.to_string(),
            )
        }
    };
    let initialize_id = messages
        .iter()
        .find(|m| m.method() == Some(method::INITIALIZE) && m.id().is_some())
        .and_then(|m| m.id().cloned());
    let initialize = initialize_id.is_some();
    if session.is_none()
        && !initialize
        && messages.len() == 1
        && crate::mcp_http::Routing::is_sessionless(headers, messages[0])
    {
        drop(messages);
        return stateless::post(front, caller, headers, read, events).await;
    }
    let session_is_new = session.is_none();
    let session = match (session, initialize) {
        (Some(session), false) => session,
        // A legacy session exists from its stream on; it is initialized by
        // a POST like any other.
        (Some(session), true) if session.legacy => session,
        (Some(_), true) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "this session is initialized already",
            );
        }
        (None, true) if messages.len() == 1 => {
            match front.sessions.open(front, Kind::Streamable, caller) {
                Some(session) => session,
                None => return too_many_sessions(),
            }
        }
        (None, _) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "Mcp-Session-Id is required (initialize first)",
            );
        }
    };
    // The handshake is finished by `notifications/initialized`, or by any
    // later POST to the session: a client that pipelines its first lines
    // (mcp-remote does) may send the notification before it knows the
    // session's id, and a session its client uses is not abandoned.
    if !initialize
        || messages
            .iter()
            .any(|m| m.method() == Some(method::NOTIFICATION_INITIALIZED))
    {
        session.initialized();
    }
    let requests: Vec<&Message> = messages
        .into_iter()
        .filter(|m| matches!(m, Message::Request(_)))
        .collect();
    let waiting = Waiting {
        ids: requests.iter().filter_map(|m| m.id().cloned()).collect(),
        tokens: requests.iter().filter_map(|m| progress_token(m)).collect(),
        events,
        restore: None,
        listen: false,
        lists_tools: false,
    };
    // A new session's id goes out at once, on an event stream's headers,
    // when the client takes one: its server may take a while to start
    // (node, npx), and a client that pipelines its first lines (mcp-remote
    // does) sends them as soon as it knows the id. The answer follows on
    // the stream; a server that cannot start ends it with an error.
    let early = initialize && events && session_is_new;
    let mut answer = relay(&session, read, waiting, early).await;
    if initialize && !early {
        // Never hand out a session that has ended meanwhile (its server
        // gone, or the front stopping): the client would only get 404s.
        if !session.alive(front) && !session.legacy {
            let error = ErrorObject::new(
                ErrorCode::CONNECTION_CLOSED,
                "mcp-chain: the session ended before it could be used (its server is gone); initialize again",
            )
            .with_data(serde_json::json!({"layer": "front", "reason": "session_ended"}));
            let mut line = Vec::new();
            Message::error(initialize_id, error).write_line(&mut line);
            return json(StatusCode::OK, bytes::Bytes::from(line));
        }
    }
    if initialize {
        if let Ok(id) = HeaderValue::from_str(&session.id) {
            answer.headers_mut().insert(SESSION_ID, id);
        }
    }
    answer
}

/// Registers what a POST waits for, hands its messages to the session and
/// answers: 202 when nothing is asked, else the answers' event stream or
/// the JSON answer. `early`: the event stream at once, before anything is
/// on it.
pub(super) async fn relay(session: &Session, read: Read, waiting: Waiting, early: bool) -> Answer {
    let events = waiting.events;
    let asks = !waiting.ids.is_empty() && !session.legacy;
    let answers = match asks.then(|| routes::lock(&session.routes).post(waiting)) {
        None => None,
        Some(Ok(answers)) => Some(answers),
        Some(Err(id)) => {
            let message = format!("request id {id} is already in use by a request of this session still waiting for its answer");
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                &message,
            );
        }
    };
    if !session.send(read).await {
        return status(StatusCode::NOT_FOUND, "the session has ended");
    }
    let Some(mut answers) = answers else {
        return status(StatusCode::ACCEPTED, "");
    };
    if early {
        return event_stream(Reply::events(answers));
    }
    // Nothing goes on a POST's stream before its first message: when that
    // is the answer (nothing came before it), a JSON body is one write,
    // where a stream is three; otherwise the stream starts with it.
    let first = loop {
        match answers.recv().await {
            // A POST that takes no stream gets its answer alone.
            Some(event) if !events && !body::is_line(&event) => continue,
            first => break first,
        }
    };
    match first {
        Some(line) if body::is_line(&line) => json(StatusCode::OK, line),
        Some(first) => event_stream(Reply::events_after(first, answers)),
        None => rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::CONNECTION_CLOSED,
            "the session ended before the server answered",
        ),
    }
}

/// `GET /sse`: a legacy session, its stream opening with the endpoint to
/// POST to.
fn legacy_stream(front: &Arc<Front>, caller: &Caller) -> Answer {
    let Some(session) = front.sessions.open(front, Kind::Legacy, caller) else {
        return too_many_sessions();
    };
    session.initialized();
    let events = routes::lock(&session.routes).legacy_with(format!(
        "event: endpoint\ndata: /messages?sessionId={}\n\n",
        session.id
    ));
    event_stream(Reply::events(events))
}

/// The session a request names: 400 without one, 404 when there is none
/// such (a client then starts a new one), or when it is another caller's:
/// a session id is not a credential, and whether another token's session
/// exists is not told.
fn find(front: &Front, caller: &Caller, id: Option<&str>) -> Result<Arc<Session>, Box<Answer>> {
    let Some(id) = id else {
        return Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "Mcp-Session-Id is required",
        )));
    };
    // A shared session's id is never handed out; it is nobody's to name.
    let found = session::well_formed(id, front.settings.replica.as_deref())
        .then(|| front.sessions.get(id))
        .flatten()
        .filter(|s| !s.shared && s.belongs_to(caller));
    found.ok_or_else(|| {
        Box::new(rpc_error(
            StatusCode::NOT_FOUND,
            ErrorCode::INVALID_REQUEST,
            "session not found",
        ))
    })
}

/// Whether the client takes an event stream (`Some(true)`), JSON only
/// (`Some(false)`), or neither.
fn accepts(headers: &hyper::HeaderMap) -> Option<bool> {
    let accept: Vec<&str> = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let accept = accept.join(",");
    if accept.is_empty() || accept.contains("*/*") || accept.contains(mcp_http::EVENT_STREAM) {
        return Some(true);
    }
    accept.contains("application/json").then_some(false)
}

fn progress_token(message: &Message) -> Option<String> {
    let meta = message.params()?.member("_meta").ok()??;
    meta.get("progressToken").map(ToString::to_string)
}
