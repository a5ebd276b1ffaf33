//! [`Scan`]: reads what the server says (listings, results, its
//! instructions) with the rules, notes each finding for the audit and
//! telemetry, and hides, cuts or refuses as configured.

use super::scanner::Scanner;
use crate::message::method;
use crate::servers::ServerNames;
use crate::target::Target;
use crate::{note, BoxError, Direction, Envelope, Message, ResponseFuture};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tower::{Layer, Service, ServiceExt};

/// The layer name in refusals, `data.layer`, notes and logs.
pub(super) const LAYER: &str = "scan";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListingAction {
    Audit,
    Hide,
    Refuse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ResultAction {
    Audit,
    Redact,
    Refuse,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Actions {
    pub(super) listings: ListingAction,
    pub(super) results: ResultAction,
    /// Cut what the rules find in the server's instructions.
    pub(super) instructions: bool,
}

/// What is listed, and how its items are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Tool,
    Prompt,
    Resource,
    Template,
}

impl Kind {
    fn of_list(list_method: &str) -> Option<Self> {
        match list_method {
            method::TOOLS_LIST => Some(Self::Tool),
            method::PROMPTS_LIST => Some(Self::Prompt),
            method::RESOURCES_LIST => Some(Self::Resource),
            method::RESOURCES_TEMPLATES_LIST => Some(Self::Template),
            _ => None,
        }
    }

    /// The list's member in a result, and the item's name member.
    pub(super) fn members(self) -> (&'static str, &'static str) {
        match self {
            Self::Tool => ("tools", "name"),
            Self::Prompt => ("prompts", "name"),
            Self::Resource => ("resources", "uri"),
            Self::Template => ("resourceTemplates", "uriTemplate"),
        }
    }

    pub(super) fn word(self) -> &'static str {
        match self {
            Self::Tool => "tool",
            Self::Prompt => "prompt",
            Self::Resource => "resource",
            Self::Template => "resource template",
        }
    }
}

/// Builds [`Scan`] services; clones share what was hidden.
#[derive(Debug, Clone)]
pub struct ScanLayer {
    shared: Arc<Shared>,
    /// In a gateway's server chain: it sees one server, so it does not
    /// read for another's names (`cross.rs`).
    one_server: bool,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) scanner: Scanner,
    pub(super) actions: Actions,
    /// What the listings showed flagged (hidden under `hide`), by kind,
    /// with the rules that flagged it.
    pub(super) flagged: Mutex<BTreeMap<Kind, BTreeMap<String, Vec<String>>>>,
    /// Kinds whose listing was judged: a call of one never judged makes
    /// the layer list it first.
    pub(super) judged: Mutex<BTreeSet<Kind>>,
    asked: AtomicU64,
}

impl ScanLayer {
    pub(super) fn new(scanner: Scanner, actions: Actions) -> Self {
        Self {
            shared: Arc::new(Shared {
                scanner,
                actions,
                flagged: Mutex::default(),
                judged: Mutex::default(),
                asked: AtomicU64::new(0),
            }),
            one_server: false,
        }
    }

    /// The instance in a gateway server's own chain.
    pub fn for_server(&self) -> Self {
        Self {
            one_server: true,
            ..self.clone()
        }
    }
}

impl<S> Layer<S> for ScanLayer {
    type Service = Scan<S>;

    fn layer(&self, inner: S) -> Scan<S> {
        // A gateway's shared chain reads for one server naming another's
        // tools (the names never change: `[servers.*]` is not reloaded).
        let servers = crate::servers::installed()
            .filter(|names| !self.one_server && names.len() > 1)
            .cloned();
        Scan {
            inner,
            shared: self.shared.clone(),
            servers,
        }
    }
}

/// Reads what the server says before the client's model does.
#[derive(Debug, Clone)]
pub struct Scan<S> {
    inner: S,
    shared: Arc<Shared>,
    servers: Option<Arc<ServerNames>>,
}

/// What a request's answer goes through.
#[derive(Debug, Clone, Copy)]
enum After {
    Listing(Kind),
    /// `server/discover` (2026-07-28): tools and prompts in one.
    Discover,
    Result,
    Initialize,
}

impl<S> Service<Envelope> for Scan<S>
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
        let after = match req.method.as_str() {
            method::INITIALIZE => After::Initialize,
            method::SERVER_DISCOVER => After::Discover,
            m => match Kind::of_list(m) {
                Some(kind) => After::Listing(kind),
                None => After::Result,
            },
        };
        let target = match Target::of(&req.method, req.params.as_ref()) {
            Ok(Some(Target::Tool(n))) => Some((Kind::Tool, n.into_owned())),
            Ok(Some(Target::Prompt(n))) => Some((Kind::Prompt, n.into_owned())),
            Ok(Some(Target::Resource(n))) => Some((Kind::Resource, n.into_owned())),
            Ok(Some(Target::ResourceTemplate(n))) => Some((Kind::Template, n.into_owned())),
            _ => None,
        };
        let reads_result = matches!(
            req.method.as_str(),
            method::TOOLS_CALL
                | method::PROMPTS_GET
                | method::RESOURCES_READ
                | method::TASKS_RESULT
        );
        let id = req.id.clone();
        let shared = self.shared.clone();
        let servers = self.servers.clone();
        if let Some((kind, name)) = &target {
            if let Some(refused) = shared.refusal(&id, *kind, name) {
                return Box::pin(std::future::ready(Ok(Some(refused))));
            }
        }
        let unjudged = target.as_ref().is_some_and(|(kind, _)| {
            shared.actions.listings == ListingAction::Hide
                && matches!(kind, Kind::Tool | Kind::Prompt)
                && !crate::lock(&shared.judged).contains(kind)
        });
        let inner = self.inner.clone();
        let (answer, held) = match unjudged {
            false => (Some(self.inner.call(env)), None),
            true => (None, Some(env)),
        };
        Box::pin(async move {
            let out = match (answer, held) {
                (Some(answer), _) => answer.await?,
                (None, None) => None,
                (None, Some(env)) => {
                    // A call before any listing this layer judged: it
                    // lists first, so a flagged item is known.
                    let (kind, name) = target.as_ref().expect("a target");
                    let list = match kind {
                        Kind::Tool => method::TOOLS_LIST,
                        _ => method::PROMPTS_LIST,
                    };
                    crate::listing::ask_all(inner.clone(), LAYER, list, &shared.asked, |page| {
                        shared
                            .judge_listing(*kind, page, servers.as_deref())
                            .is_ok()
                    })
                    .await?;
                    if let Some(refused) = shared.refusal(&id, *kind, name) {
                        return Ok(Some(refused));
                    }
                    inner.oneshot(env).await?
                }
            };
            let servers = servers.as_deref();
            Ok(out.map(|message| judged(&shared, servers, after, reads_result, message)))
        })
    }
}

/// The answer `message` after the layer read it.
fn judged(
    shared: &Shared,
    servers: Option<&ServerNames>,
    after: After,
    reads_result: bool,
    mut message: Message,
) -> Message {
    let Message::Response(response) = &mut message else {
        return message;
    };
    let refused = match after {
        After::Listing(kind) => match shared.judge_listing(kind, &mut response.result, servers) {
            Ok(noted) => {
                note_listing(shared, noted);
                None
            }
            Err(refusal) => Some(*refusal),
        },
        After::Discover => {
            let mut noted = Vec::new();
            let mut refused = None;
            for kind in [Kind::Tool, Kind::Prompt] {
                match shared.judge_listing(kind, &mut response.result, servers) {
                    Ok(more) => noted.extend(more),
                    Err(refusal) => refused = Some(*refusal),
                }
            }
            note_listing(shared, noted);
            refused
        }
        After::Initialize => {
            shared.judge_instructions(response);
            None
        }
        After::Result if reads_result => shared.judge_result(response),
        After::Result => None,
    };
    match refused {
        Some(error) => Message::error(Some(response.id.clone()), error),
        None => message,
    }
}

fn note_listing(shared: &Shared, noted: Vec<Value>) {
    if noted.is_empty() {
        return;
    }
    let action = match shared.actions.listings {
        ListingAction::Audit => "flagged",
        ListingAction::Hide => "hidden",
        ListingAction::Refuse => "refused",
    };
    for finding in &noted {
        tracing::warn!(
            layer = LAYER,
            kind = %finding["kind"].as_str().unwrap_or_default(),
            name = %crate::shown::shown(finding["name"].as_str().unwrap_or_default(), 100),
            rule = %finding["rule"].as_str().unwrap_or_default(),
            // A member's name: the server's to choose.
            field = %crate::shown::shown(finding["where"].as_str().unwrap_or_default(), 100),
            action,
            "a listed definition reads as instructions to the model"
        );
    }
    note::add(LAYER, json!({"findings": noted, "action": action}));
}
