//! 2026-07-28 requests: no session. A client of that revision sends each
//! request on its own, naming its protocol version in `MCP-Protocol-Version`
//! (and in `_meta`) and its method and target in routing headers; nothing
//! ties one request to the next.
//!
//! Such a request is served by one of a small pool of shared server
//! sessions (each a session like any other: its own server and chain), so
//! a server is not started per request. Each caller (a principal with
//! the scopes its token holds that a rule reads, a static token, or anyone
//! where the front asks for neither) has a pool of its own: its sessions'
//! chains were chosen for exactly that subject and those scopes (`when`, `unless`,
//! per-caller limits apply), so each request is judged by its own token,
//! and no caller's requests meet another's. Requests of many clients meet on
//! one server, so the front gives each request an id of its own, and its
//! progress token too, and gives the client's back in what it relays: two
//! clients both sending id 1 never see each other's answers.
//!
//! The routing headers must say what the body says (a load balancer or a
//! gateway may have routed on them): `Mcp-Method`, and `Mcp-Name` for a
//! call, a prompt or a read; a missing or different one is refused with 400
//! and -32020 before anything reaches the server.

use super::error::FrontError;
use super::handler::relay;
use super::reply;
use super::reply::Answer;
use super::routes::{Owner, Restore, Waiting};
use super::session::{Caller, FrontSession};
use super::Front;
use crate::books::rename;
use crate::mcp_http::{Routing, ToolParams};
use crate::peer::Read;
use hyper::{HeaderMap, StatusCode};
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::message::Incoming;
use mcp_chain_middleware::{Message, RequestId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Shared server sessions for requests without a session.
pub(super) const POOL: usize = 2;

/// The pools, and the ids the front gives requests.
#[derive(Default)]
pub(super) struct SessionlessPool {
    /// Each caller's pool sessions.
    sessions: Mutex<HashMap<Owner, Vec<Arc<FrontSession>>>>,
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

impl SessionlessPool {
    /// A live pool session for the next request (round robin), started
    /// when the pool is not full.
    pub(super) fn session(&self, front: &Arc<Front>, caller: &Caller) -> Option<Arc<FrontSession>> {
        let mut pools = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        for pool in pools.values_mut() {
            pool.retain(|s| front.sessions.get(&s.id).is_some());
        }
        pools.retain(|_, pool| !pool.is_empty());
        let sessions = pools.entry(caller.owner()).or_default();
        let n = self.turn.fetch_add(1, Ordering::Relaxed) as usize;
        if sessions.len() < POOL {
            let session = front.sessions.open_pooled(front, caller)?;
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
    fn cancellation(&self, owner: &Owner, message: &mut Message) -> Option<Arc<FrontSession>> {
        let named = message.params()?.member("requestId").ok()??;
        let named = RequestId::from_value(&named)?;
        let pools = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = pools
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|session| {
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

/// A request without a session, of a revision without sessions: checked
/// (routing headers), renamed, and served by a pool session.
pub(super) async fn post(
    front: &Arc<Front>,
    caller: &Caller,
    headers: &HeaderMap,
    read: Read,
    events: bool,
) -> Result<Answer, FrontError> {
    let Read::Parsed(Incoming::Single(Ok(mut message))) = read else {
        return Err(FrontError::NotOneMessage);
    };
    if matches!(message, Message::Response(_) | Message::Error(_)) {
        return Err(FrontError::AnswerWithoutSession);
    }
    if let Err(why) = Routing::check(headers, &message, &front.pool.marked) {
        let id = message.id().cloned();
        return Err(FrontError::Routing { id, why });
    }
    if message.method() == Some(method::NOTIFICATION_CANCELLED) {
        // Only the caller's own request, renamed; else nothing is sent,
        // and the answer does not say whether such a request exists.
        if let Some(session) = front.pool.cancellation(&caller.owner(), &mut message) {
            session
                .send(Read::Parsed(Incoming::Single(Ok(message))))
                .await;
        }
        return Ok(reply::empty(StatusCode::ACCEPTED));
    }
    let session = front
        .pool
        .session(front, caller)
        .ok_or(FrontError::TooManySessions)?;
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
        let (client_id, token) = rename(&mut message, id.clone());
        // The front's token is its id: progress finds its POST by it.
        if token.is_some() {
            waiting.tokens.push(id.to_value().to_string());
        }
        waiting.ids.push(id);
        waiting.restore = Some(Restore {
            id: client_id,
            token,
            owner: caller.owner(),
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
    use serde_json::{json, Value};

    fn request(method: &str, params: Value) -> Message {
        Message::request(1u64, method, Some(params))
    }

    #[test]
    fn ids_and_progress_tokens_are_the_fronts_and_given_back() {
        let mut call = request(
            "tools/call",
            json!({"name": "add", "_meta": {"progressToken": 5, "other": 1}}),
        );
        let (id, token) = rename(&mut call, RequestId::String("mcp-chain-9".into()));
        assert_eq!(id, RequestId::from(1u64));
        assert_eq!(token, Some(json!(5)));
        let value = call.to_value();
        assert_eq!(value["id"], "mcp-chain-9");
        assert_eq!(
            value["params"]["_meta"],
            json!({"progressToken": "mcp-chain-9", "other": 1})
        );
        assert_eq!(value["params"]["name"], "add");
    }
}
