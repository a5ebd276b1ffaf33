//! [`Approve`]: holds a matched tool call until the user, asked through
//! their own client, says yes.

use super::question::{can_ask, Answer, Seal};
pub(crate) use super::ways::Way;
use crate::lock;
use crate::message::method;
use crate::pattern::Pattern;
use crate::payload::Payload;
use crate::peer::ClientSlot;
use crate::session::ServerInfo;
use crate::target::Target;
use crate::{
    note, BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message, RequestId, ResponseFuture,
};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{Layer, Service, ServiceExt};

/// The layer name in refusals, `data.layer`, notes and logs.
pub(super) const LAYER: &str = "approve";

/// The layer's settings, checked.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) tools: Vec<Pattern>,
    pub(super) remember_session: bool,
    pub(super) fallback_allow: bool,
    pub(super) timeout: Duration,
    /// The ways to ask, in order.
    pub(super) ways: Vec<Way>,
    pub(super) elicitation_wait: Duration,
    /// The tool patterns as written: the rule a page names.
    pub(super) patterns: String,
    /// `remember = "always"`: a person may grant a call for good.
    pub(super) remember_always: bool,
    /// `always = "tool"`: such a grant holds for any arguments.
    pub(super) always_tool: bool,
    /// The approve rule's revision (a hash of its settings as written): a
    /// lasting grant holds under this revision only.
    pub(super) revision: String,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) settings: Settings,
    /// Shared by every session: a 2026-07-28 retry may reach another one.
    pub(super) seal: Seal,
}

/// What one client session said of itself, and allowed.
#[derive(Debug, Default)]
pub(super) struct SessionApprovals {
    pub(super) client: ClientSlot,
    /// From `initialize`: the client can be asked, and reads titled
    /// choices (2025-11-25 or later).
    pub(super) can_ask: AtomicBool,
    pub(super) titled: AtomicBool,
    /// Tools the user allowed for the rest of the session.
    allowed: Mutex<HashSet<String>>,
    pub(super) asked: AtomicU64,
    /// Who the session's caller is (the HTTP front's principal or token),
    /// as the approval page shows it.
    pub(super) caller: Option<String>,
    /// The gateway server whose own chain this layer is in: named in the
    /// question and on the page; its grants and records are its own.
    pub(super) server: Option<ServerInfo>,
}

/// The user allowed `tool` for the rest of `session`.
pub(super) fn record_session_grant(session: &SessionApprovals, tool: &str) {
    lock(&session.allowed).insert(tool.to_owned());
}

/// Builds [`Approve`] services; clones share the settings and the session.
#[derive(Debug, Clone)]
pub struct ApproveLayer {
    pub(super) shared: Arc<Shared>,
    pub(super) session: Arc<SessionApprovals>,
}

impl ApproveLayer {
    pub(super) fn new(settings: Settings) -> Self {
        let seal = Seal::new(settings.timeout);
        Self {
            shared: Arc::new(Shared { settings, seal }),
            session: Arc::default(),
        }
    }

    /// The layer for one client session of the HTTP front: what the user
    /// allowed for a session stays in it. `caller`: who the session's
    /// caller is, as the approval page shows it.
    pub fn for_session(&self, caller: Option<String>) -> Self {
        Self {
            shared: self.shared.clone(),
            session: Arc::new(SessionApprovals {
                caller,
                ..SessionApprovals::default()
            }),
        }
    }

    /// The layer in the own chain of a gateway's server: the question and
    /// the page name the server, and a lasting grant is bound to it as a
    /// single-server mcp-chain in front of it would bind it.
    pub fn for_server(&self, server: &ServerInfo) -> Self {
        Self {
            shared: self.shared.clone(),
            session: Arc::new(SessionApprovals {
                caller: self.session.caller.clone(),
                server: Some(server.clone()),
                ..SessionApprovals::default()
            }),
        }
    }

    /// Whether a way to ask is mcp-chain's approval page (which needs
    /// `[console]`).
    pub fn asks_on_page(&self) -> bool {
        self.shared.settings.ways.contains(&Way::Page)
    }

    /// The server → client half: keeps the way to the client, to ask.
    pub fn toward_client<S>(&self, inner: S) -> Approve<S>
    where
        S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        self.session.client.set(inner.clone());
        self.layer(inner)
    }
}

impl<S> Layer<S> for ApproveLayer {
    type Service = Approve<S>;

    fn layer(&self, inner: S) -> Approve<S> {
        Approve {
            inner,
            layer: self.clone(),
        }
    }
}

/// Asks the user before a matched tool runs.
#[derive(Debug, Clone)]
pub struct Approve<S> {
    pub(super) inner: S,
    pub(super) layer: ApproveLayer,
}

/// One call waiting for a decision.
pub(super) struct Call {
    pub(super) id: RequestId,
    pub(super) tool: String,
    pub(super) arguments: Value,
    pub(super) params: Map<String, Value>,
}

/// What the layer decided about a call, named for the audit's note: the
/// call goes on (`None`), or the layer answers it (a refusal, a question).
pub(super) type Decision = (&'static str, Option<Message>);

pub(super) fn refusal(id: &RequestId, reason: &'static str, message: &str) -> Decision {
    let error = ErrorObject::refusal(ErrorCode::REFUSED, LAYER, reason, message);
    (reason, Some(Message::error(Some(id.clone()), error)))
}

/// The note of a decision, made inside the answer's future (where an
/// audit outside collects notes), then the layer's answer or `answer`.
pub(super) async fn settle<F>(decision: Decision, answer: F) -> Result<Option<Message>, BoxError>
where
    F: std::future::Future<Output = Result<Option<Message>, BoxError>>,
{
    let (name, own) = decision;
    record(name);
    note::add(LAYER, json!({"decision": name}));
    match own {
        Some(own) => Ok(Some(own)),
        None => answer.await,
    }
}

/// The decision event of `decision`: remembered from an earlier answer,
/// or answered now (by the user, or by the fallback when none can be asked).
pub(super) fn record(decision: &'static str) {
    match decision {
        "remembered" | "approved_earlier" => crate::decided!("approve", "remembered", decision),
        _ => crate::decided!("approve", "answered", decision),
    }
}

/// A decision made at once: the layer's answer, or `inner` called.
pub(super) fn settled<S>(decision: Decision, inner: &mut S, env: Envelope) -> ResponseFuture
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
    S::Future: Send + 'static,
{
    let answer = match decision.1 {
        None => Some(inner.call(env)),
        Some(_) => None,
    };
    Box::pin(settle(decision, async move {
        match answer {
            Some(answer) => answer.await,
            None => Ok(None),
        }
    }))
}

impl SessionApprovals {
    fn learn(&self, initialize: Option<&Payload>) {
        let params = initialize.and_then(|p| p.to_value().ok());
        let params = params.as_ref();
        let elicitation = params.and_then(|p| p.pointer("/capabilities/elicitation"));
        self.can_ask.store(can_ask(elicitation), Ordering::Relaxed);
        let version = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        // Revisions are dates: 2025-11-25 and later read titled choices.
        let titled = version.is_some_and(|v| v >= "2025-11-25");
        self.titled.store(titled, Ordering::Relaxed);
    }
}

impl ApproveLayer {
    fn matches(&self, tool: &str) -> bool {
        self.shared.settings.tools.iter().any(|p| p.is_match(tool))
    }

    /// A refusal for a client that cannot be asked, or the call let
    /// through when `fallback = "allow"`.
    pub(super) fn cannot_ask(&self, id: &RequestId, tool: &str) -> Decision {
        if self.shared.settings.fallback_allow {
            return ("fallback_allowed", None);
        }
        refusal(
            id,
            "no_elicitation",
            &format!(
                "the tool {tool:?} needs the user's approval, and this client cannot ask its user (it declares no elicitation capability in form mode); the call is refused"
            ),
        )
    }

    /// What can be decided at once for a 2025-era call: a tool allowed
    /// for the session. (A lasting grant is looked up in the call's own
    /// future: with `[state]` it costs a round trip.)
    fn without_asking(&self, tool: &str) -> Option<Decision> {
        let session = &self.session;
        (self.shared.settings.remember_session && lock(&session.allowed).contains(tool))
            .then_some(("remembered", None))
    }

    /// A lasting grant, a client that cannot be asked, or the user's
    /// answer; recorded.
    async fn decide(&self, id: &RequestId, tool: &str, params: Option<&Payload>) -> Decision {
        if let Some(granted) = self.granted_for_good(id, tool, params).await {
            return granted;
        }
        if self.can_ask_somehow() {
            return self.ask(id, tool, params).await;
        }
        let decision = self.cannot_ask(id, tool);
        let arguments = params.and_then(|p| p.member("arguments").ok().flatten());
        self.record(tool, &arguments.unwrap_or(Value::Null), decision.0);
        decision
    }
}

/// The decision the user's answer makes.
pub(super) fn decided(call: &Call, answer: Answer, remember: impl FnOnce(&str)) -> Decision {
    match answer {
        Answer::AllowOnce => ("allowed_once", None),
        Answer::AllowSession => {
            remember(&call.tool);
            ("allowed_for_session", None)
        }
        // The lasting grant (for these arguments, unless `always =
        // "tool"`) is kept by the caller, which knows the book; it is no
        // grant of the tool for the session.
        Answer::AllowAlways => ("allowed_always", None),
        Answer::Refused(reason) => {
            let why = match reason {
                "declined" => "the user declined",
                "cancelled" => "the user cancelled",
                "denied" => "the user denied",
                _ => "the answer cannot be read, so",
            };
            refusal(
                &call.id,
                reason,
                &format!("{why} the call to {:?}; it is refused", call.tool),
            )
        }
    }
}

impl<S> Service<Envelope> for Approve<S>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        let (Direction::ToServer, Message::Request(req)) = (env.direction, &env.message) else {
            return crate::boxed(self.inner.call(env));
        };
        if req.method == method::INITIALIZE {
            self.layer.session.learn(req.params.as_ref());
            return crate::boxed(self.inner.call(env));
        }
        if req.method != method::TOOLS_CALL {
            return crate::boxed(self.inner.call(env));
        }
        let tool = match Target::of(&req.method, req.params.as_ref()) {
            Ok(Some(Target::Tool(name))) => name.into_owned(),
            Ok(_) => {
                return settled(
                    unreadable(&req.id, "it names no tool"),
                    &mut self.inner,
                    env,
                )
            }
            Err(e) => {
                let decision = unreadable(&req.id, &e.to_string());
                return settled(decision, &mut self.inner, env);
            }
        };
        if !self.layer.matches(&tool) {
            return crate::boxed(self.inner.call(env));
        }
        let meta = req.params.as_ref().map(|p| p.member("_meta"));
        let modern = match meta {
            Some(Ok(Some(Value::Object(meta)))) => {
                meta.contains_key(crate::message::meta::PROTOCOL_VERSION)
            }
            Some(Err(e)) => {
                let decision = unreadable(&req.id, &e.to_string());
                return settled(decision, &mut self.inner, env);
            }
            _ => false,
        };
        if modern {
            let params = match req.params.as_ref().map(Payload::to_value) {
                Some(Ok(Value::Object(params))) => params,
                _ => {
                    let decision = unreadable(&req.id, "its params are not an object");
                    return settled(decision, &mut self.inner, env);
                }
            };
            let call = Call {
                id: req.id.clone(),
                arguments: params
                    .get("arguments")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
                tool,
                params,
            };
            return self.modern(env, call);
        }
        if let Some(decision) = self.layer.without_asking(&tool) {
            let arguments = req
                .params
                .as_ref()
                .and_then(|p| p.member("arguments").ok().flatten());
            self.layer
                .record(&tool, &arguments.unwrap_or(Value::Null), decision.0);
            return settled(decision, &mut self.inner, env);
        }
        let id = req.id.clone();
        let layer = self.layer.clone();
        let inner = self.inner.clone();
        Box::pin(async move {
            let params = match &env.message {
                Message::Request(req) => req.params.as_ref(),
                _ => None,
            };
            let decision = layer.decide(&id, &tool, params).await;
            settle(decision, inner.oneshot(env)).await
        })
    }
}

pub(super) fn unreadable(id: &RequestId, why: &str) -> Decision {
    refusal(
        id,
        "unreadable",
        &format!("the call cannot be read ({why}); it is refused rather than run unapproved"),
    )
}
