//! The front's handlers, behind its layers (`app.rs`): a POST, GET or
//! DELETE on the Streamable HTTP endpoint, and the legacy `/sse` stream
//! and its `/messages` POSTs. Each says what it answers, or which
//! [`FrontError`] turns the request down.

use super::app::Admitted;
use super::error::FrontError;
use super::reply::{self, Answer, Outgoing};
use super::routes::{self, Waiting};
use super::session::{self, Caller, FrontSession, Kind};
use super::stateless;
use super::Front;
use crate::mcp_http::{self, LAST_EVENT_ID, SESSION_ID};
use crate::peer::Read;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT};
use hyper::{HeaderMap, StatusCode};
use mcp_chain_middleware::message::{method, Incoming as Messages};
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message};
use std::sync::Arc;

type Handled = Result<Answer, FrontError>;

/// `POST` to the endpoint: messages for a session, a new one for
/// `initialize`, or (2026-07-28) a request that needs none.
pub(super) async fn post(front: &Arc<Front>, admitted: Admitted) -> Handled {
    let Admitted {
        caller, request, ..
    } = admitted;
    let (head, body) = request.into_parts();
    let headers = &head.headers;
    let events = accepts(headers).ok_or(FrontError::NotAcceptable(
        "accept application/json or text/event-stream",
    ))?;
    let session = match session_id(headers) {
        None => None,
        Some(id) => Some(find(front, &caller, Some(id))?),
    };
    post_messages(front, &caller, headers, session, body, events).await
}

/// `GET` on the endpoint: the session's stream of messages that answer no
/// POST, from `Last-Event-ID` on.
pub(super) fn get(front: &Arc<Front>, admitted: Admitted) -> Handled {
    let headers = admitted.request.headers();
    let id = session_id(headers).ok_or(FrontError::NeedsSession)?;
    if accepts(headers) != Some(true) {
        return Err(FrontError::NotAcceptable(
            "the GET stream is text/event-stream",
        ));
    }
    let session = find(front, &admitted.caller, Some(id))?;
    let last = headers
        .get(LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok()?.parse().ok());
    session.touch();
    let events = routes::lock(&session.routes).get(last);
    Ok(reply::events(None, events))
}

/// `DELETE` on the endpoint: the client ends its session.
pub(super) fn delete(front: &Arc<Front>, admitted: Admitted) -> Handled {
    let id = session_id(admitted.request.headers()).ok_or(FrontError::NeedsSession)?;
    let session = find(front, &admitted.caller, Some(id))?;
    front.sessions.remove(&session.id);
    session.stop();
    tracing::info!(session = %session::short(&session.id), "session ended by its client");
    Ok(reply::empty(StatusCode::OK))
}

/// `GET /sse`: a legacy session, its stream opening with the endpoint to
/// POST to.
pub(super) async fn legacy_stream(front: &Arc<Front>, admitted: Admitted) -> Handled {
    let session = front
        .sessions
        .open(front, Kind::Legacy, &admitted.caller)
        .await?;
    session.initialized();
    let endpoint = Outgoing::Endpoint(format!("/messages?sessionId={}", session.id));
    let events = routes::lock(&session.routes).legacy_with(endpoint);
    Ok(reply::events(None, events))
}

/// `POST /messages?sessionId=…`: a legacy session's messages; answers go
/// on its stream.
pub(super) async fn legacy_post(front: &Arc<Front>, admitted: Admitted) -> Handled {
    let Admitted {
        caller, request, ..
    } = admitted;
    let (head, body) = request.into_parts();
    let query = head.uri.query().unwrap_or_default();
    let id = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("sessionId="));
    let session = find(front, &caller, id)?;
    if !session.legacy {
        return Err(FrontError::NoLegacySession);
    }
    post_messages(front, &caller, &head.headers, Some(session), body, false).await
}

fn session_id(headers: &HeaderMap) -> Option<&str> {
    let id = headers.get(SESSION_ID)?;
    Some(id.to_str().unwrap_or_default())
}

/// A POST's messages to its session (a new one for `initialize`).
async fn post_messages(
    front: &Arc<Front>,
    caller: &Caller,
    headers: &HeaderMap,
    session: Option<Arc<FrontSession>>,
    body: Incoming,
    events: bool,
) -> Handled {
    let read = super::intake::take(front, headers, body).await?;
    let messages: Vec<&Message> = match &read {
        Read::Parsed(Messages::Single(Ok(message))) => vec![message],
        Read::Parsed(Messages::Batch(items)) if items.iter().all(Result::is_ok) => {
            items.iter().flatten().collect()
        }
        Read::Parsed(Messages::Single(Err(invalid))) => {
            return Err(FrontError::InvalidMessage(invalid.reason.to_string()));
        }
        Read::Parsed(Messages::Batch(_)) => return Err(FrontError::InvalidBatch),
        Read::Unparsable { error, .. } => return Err(FrontError::Parse(error.to_string())),
        Read::TooLong { .. } => return Err(FrontError::MessageTooLong),
        Read::OverBudget { why, .. } => return Err(FrontError::OverBudget(why.to_string())),
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
        (Some(_), true) => return Err(FrontError::AlreadyInitialized),
        (None, true) if messages.len() == 1 => {
            front.sessions.open(front, Kind::Streamable, caller).await?
        }
        (None, _) => return Err(FrontError::InitializeFirst),
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
    let mut answer = relay(&session, read, waiting, early).await?;
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
            return Ok(reply::json(StatusCode::OK, bytes::Bytes::from(line)));
        }
    }
    if initialize {
        if let Ok(id) = HeaderValue::from_str(&session.id) {
            answer.headers_mut().insert(SESSION_ID, id);
        }
    }
    Ok(answer)
}

/// Registers what a POST waits for, hands its messages to the session and
/// answers: 202 when nothing is asked, else the answers' event stream or
/// the JSON answer. `early`: the event stream at once, before anything is
/// on it.
pub(super) async fn relay(
    session: &FrontSession,
    read: Read,
    waiting: Waiting,
    early: bool,
) -> Handled {
    let events = waiting.events;
    let asks = !waiting.ids.is_empty() && !session.legacy;
    let answers = match asks.then(|| routes::lock(&session.routes).post(waiting)) {
        None => None,
        Some(Ok(answers)) => Some(answers),
        Some(Err(id)) => return Err(FrontError::IdInUse(id)),
    };
    if !session.send(read).await {
        return Err(FrontError::SessionEnded);
    }
    let Some(mut answers) = answers else {
        return Ok(reply::empty(StatusCode::ACCEPTED));
    };
    if early {
        return Ok(reply::events(None, answers));
    }
    // Nothing goes on a POST's stream before its first message: when that
    // is the answer (nothing came before it), a JSON body is one write,
    // where a stream is three; otherwise the stream starts with it.
    let first = loop {
        match answers.recv().await {
            // A POST that takes no stream gets its answer alone.
            Some(Outgoing::Event { .. } | Outgoing::Endpoint(_)) if !events => continue,
            first => break first,
        }
    };
    match first {
        Some(Outgoing::Answer(line)) => Ok(reply::json(StatusCode::OK, line)),
        Some(first) => Ok(reply::events(Some(first), answers)),
        None => Err(FrontError::NoAnswer),
    }
}

/// The session a request names: 400 without one, 404 when there is none
/// such (a client then starts a new one), or when it is another caller's:
/// a session id is not a credential, and whether another token's session
/// exists is not told.
fn find(front: &Front, caller: &Caller, id: Option<&str>) -> Result<Arc<FrontSession>, FrontError> {
    let id = id.ok_or(FrontError::NoSessionId)?;
    // A shared session's id is never handed out; it is nobody's to name.
    let found = session::well_formed(id, front.settings.replica.as_deref())
        .then(|| front.sessions.get(id))
        .flatten()
        .filter(|s| !s.shared && s.belongs_to(caller));
    found.ok_or(FrontError::SessionNotFound)
}

/// Whether the client takes an event stream (`Some(true)`), JSON only
/// (`Some(false)`), or neither.
fn accepts(headers: &HeaderMap) -> Option<bool> {
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
