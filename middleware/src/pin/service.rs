//! [`Pin`]: judges the listings it relays against the pin file, hides or
//! marks what drifted, and refuses calls to it.

use super::fingerprint::{self, Kind};
use super::pages::{Pages, Verdict};
use super::store::{Drift, Status, Store};
use crate::embedded::mark_private;
use crate::lock;
use crate::message::{method, Response};
use crate::payload::{Payload, Unreadable};
use crate::peer::ClientSlot;
use crate::target::Target;
use crate::{
    note, BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message, RequestId, ResponseFuture,
};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{Layer, Service, ServiceExt};

/// The layer name in refusals, `data.layer`, notes and logs.
pub(super) const LAYER: &str = "pin";

/// How often a session looks whether the pin file changed on disk.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// What a drift does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnChange {
    Hide,
    Refuse,
    Warn,
}

impl OnChange {
    fn as_str(self) -> &'static str {
        match self {
            Self::Hide => "hidden",
            Self::Refuse => "refused",
            Self::Warn => "warned",
        }
    }
}

/// What one client session knows.
#[derive(Debug, Default)]
struct SessionPins {
    /// Kinds whose whole listing this session has judged.
    listed: Mutex<BTreeSet<Kind>>,
    /// The client opened with `initialize` (2025 era): it hears
    /// list-changed notifications outside a request.
    initialized: AtomicBool,
    client: ClientSlot,
    watching: AtomicBool,
    asked: AtomicU64,
}

/// Builds [`Pin`] services; clones share the pin file and the session.
#[derive(Debug, Clone)]
pub struct PinLayer {
    pub(super) store: Arc<Store>,
    /// Pages judged before, shared by every session.
    pages: Arc<Pages>,
    /// With `[state]`: the replicas' pins are followed (from the first
    /// listing on; the layer is built before `[state]` is up).
    pub(super) following: Arc<AtomicBool>,
    on_change: OnChange,
    session: Arc<SessionPins>,
}

impl PinLayer {
    pub(super) fn new(store: Store, on_change: OnChange) -> Self {
        Self {
            store: Arc::new(store),
            following: Arc::default(),
            pages: Arc::default(),
            on_change,
            session: Arc::default(),
        }
    }

    /// The layer for one client session of the HTTP front: the same pin
    /// file, its own view of it.
    pub fn for_session(&self) -> Self {
        Self {
            session: Arc::default(),
            ..self.clone()
        }
    }

    /// The pin file.
    pub fn pin_file(&self) -> &std::path::Path {
        self.store.path()
    }

    /// The server → client half, whose inner service leads to the client:
    /// kept, to tell the client when an accepted drift changes its view.
    pub fn toward_client<S>(&self, inner: S) -> Pin<S>
    where
        S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        self.session.client.set(inner.clone());
        if self.on_change == OnChange::Hide && !self.session.watching.swap(true, Ordering::Relaxed)
        {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(watch(self.store.clone(), Arc::downgrade(&self.session)));
            }
        }
        self.layer(inner)
    }
}

impl<S> Layer<S> for PinLayer {
    type Service = Pin<S>;

    fn layer(&self, inner: S) -> Pin<S> {
        Pin {
            inner,
            layer: self.clone(),
        }
    }
}

/// Holds a session's view to what the pin file vouches for.
#[derive(Debug, Clone)]
pub struct Pin<S> {
    inner: S,
    layer: PinLayer,
}

/// Looks, while the session lasts, whether the pin file changed on disk
/// (an accept, a hand edit); when it did, tells the client the lists it
/// has seen may have changed.
async fn watch(store: Arc<Store>, session: Weak<SessionPins>) {
    let mut seen = store.generation();
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        let Some(session) = session.upgrade() else {
            return;
        };
        store.refresh();
        let now = store.generation();
        if now == seen {
            continue;
        }
        seen = now;
        if !session.initialized.load(Ordering::Relaxed) {
            continue;
        }
        let kinds: Vec<Kind> = lock(&session.listed).iter().copied().collect();
        for kind in kinds {
            let notification = Message::notification(kind.list_changed(), None);
            if session.client.send(notification).await.is_err() {
                return;
            }
        }
    }
}

impl PinLayer {
    /// Judges one listing page of `kind` in `result`: records drift, hides
    /// it under `hide`, hides what cannot be read (except under `warn`).
    /// `Err`: the listing itself cannot be read.
    fn judge_page(&self, kind: Kind, result: &mut Payload) -> Result<(), Unreadable> {
        let version = self.store.version();
        let text = result.text().map(|t| t.as_bytes());
        let known = text.and_then(|text| self.pages.get(kind, version, text));
        let (verdict, unreadable) = match known {
            Some(verdict) => (verdict, 0),
            None => {
                let text = text.map(<[u8]>::to_vec);
                let (verdict, unreadable) = self.judge_items(kind, result)?;
                if let (Some(text), 0) = (text, unreadable) {
                    self.pages.keep(kind, self.store.version(), &text, &verdict);
                }
                (verdict, unreadable)
            }
        };
        let Verdict { last_page, drifts } = verdict;
        if last_page {
            lock(&self.session.listed).insert(kind);
        }
        let hidden = self.on_change == OnChange::Hide && !drifts.is_empty();
        if hidden {
            result.edit_items(kind.section(), |item| {
                let name = item.str_member(kind.key());
                !drifts
                    .iter()
                    .any(|d| Some(d.name.as_str()) == name.as_deref())
            })?;
        }
        if hidden || (self.on_change != OnChange::Warn && unreadable > 0) {
            mark_private(result)?;
        }
        if !drifts.is_empty() || unreadable > 0 {
            for drift in &drifts {
                // The tool's name is the server's: escaped and cut.
                let name = crate::shown::shown(&drift.name, 128);
                crate::decided!("pin", "drift", kind = drift.kind(), name,
                    fields = %drift.what(), action = self.on_change.as_str());
                tracing::warn!(layer = LAYER, kind = drift.kind(), name = %drift.name,
                    drift = %drift.what(), action = self.on_change.as_str(), "definition differs from its pin");
            }
            let drift: Vec<Value> = drifts.iter().map(drift_json).collect();
            let mut noted = json!({"drift": drift, "action": self.on_change.as_str()});
            if unreadable > 0 {
                noted["unreadable"] = json!(unreadable);
            }
            note::add(LAYER, noted);
        }
        Ok(())
    }

    /// Fingerprints a page's items and judges them against the pins
    /// (recording drift); hides what cannot be read (except under `warn`).
    /// The verdict, and how many items could not be read.
    fn judge_items(
        &self,
        kind: Kind,
        result: &mut Payload,
    ) -> Result<(Verdict, usize), Unreadable> {
        let last_page = !matches!(result.member("nextCursor"), Ok(Some(c)) if !c.is_null());
        let mut items = Vec::new();
        let mut unreadable = 0;
        let hide_unreadable = self.on_change != OnChange::Warn;
        result.edit_items(kind.section(), |item| {
            match fingerprint::of_item(kind, item) {
                Ok(seen) => {
                    items.push(seen);
                    true
                }
                Err(_) => {
                    unreadable += 1;
                    !hide_unreadable
                }
            }
        })?;
        let drifts = self.store.judge(kind, items, last_page);
        Ok((Verdict { last_page, drifts }, unreadable))
    }

    /// The answer to a listing of `kind`, judged.
    fn judged(&self, kind: Kind, out: Option<Message>) -> Option<Message> {
        let Some(Message::Response(mut response)) = out else {
            return out;
        };
        match self.judge_page(kind, &mut response.result) {
            Ok(()) => Some(Message::Response(response)),
            Err(e) => Some(unreadable_listing(response, kind, &e)),
        }
    }

    /// Whether a request about `name` may go on; `Err` is the refusal.
    fn check(&self, id: &RequestId, kind: Kind, name: &str) -> Result<(), Box<Message>> {
        let (reason, message, changed) = match self.store.status(kind, name) {
            Status::Pinned => return Ok(()),
            _ if self.on_change == OnChange::Warn => return Ok(()),
            Status::Drifted(drift) => (
                if drift.changed.is_empty() { "new" } else { "changed" },
                format!(
                    "the {} {name:?} is {} since it was pinned; it is refused until the change is accepted (mcp-chain pin accept {name} --config …)",
                    kind.word(),
                    drift.what()
                ),
                drift.changed,
            ),
            Status::Unknown => (
                "unknown",
                format!(
                    "{name:?} is not a {} the server lists; it is refused rather than passed unpinned",
                    kind.word()
                ),
                Vec::new(),
            ),
        };
        let mut error = ErrorObject::refusal(ErrorCode::REFUSED, LAYER, reason, &message);
        if let Some(Value::Object(data)) = error.data.as_mut() {
            data.insert("changed".into(), json!(changed));
        }
        Err(Box::new(Message::error(Some(id.clone()), error)))
    }
}

fn drift_json(drift: &Drift) -> Value {
    let mut value = json!({"kind": drift.kind(), "name": drift.name});
    if drift.changed.is_empty() {
        value["new"] = json!(true);
    } else {
        value["changed"] = json!(drift.changed);
    }
    value
}

fn unreadable_listing(response: Response, kind: Kind, why: &Unreadable) -> Message {
    let message = format!(
        "the {} listing cannot be read ({why}); it is refused rather than passed unpinned",
        kind.word()
    );
    let error = ErrorObject::refusal(ErrorCode::INTERNAL_ERROR, LAYER, "unreadable", &message);
    Message::error(Some(response.id), error)
}

/// The refusal of a request whose target cannot be read.
fn unreadable_request(id: &RequestId, why: &str) -> Message {
    let message =
        format!("the request cannot be read ({why}); it is refused rather than passed unchecked");
    let error = ErrorObject::refusal(ErrorCode::INVALID_PARAMS, LAYER, "unreadable", &message);
    Message::error(Some(id.clone()), error)
}

impl<S> Service<Envelope> for Pin<S>
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
        if let (Direction::ToClient, Message::Notification(n)) = (env.direction, &env.message) {
            // The server says a list changed: what this session judged is
            // stale, and a call waits for a listing judged anew.
            if let Some(kind) = Kind::changed_by(&n.method) {
                lock(&self.layer.session.listed).remove(&kind);
            }
        }
        let (Direction::ToServer, Message::Request(req)) = (env.direction, &env.message) else {
            return crate::boxed(self.inner.call(env));
        };
        if req.method == method::INITIALIZE {
            self.layer
                .session
                .initialized
                .store(true, Ordering::Relaxed);
        }
        if let Some(kind) = Kind::listed_by(&req.method) {
            let id = req.id.clone();
            let answer = self.inner.call(env);
            let layer = self.layer.clone();
            return Box::pin(async move {
                let (shared, answer) = tokio::join!(layer.take_shared(&id, kind), answer);
                if let Err(refusal) = shared {
                    return Ok(Some(*refusal));
                }
                let version = layer.store.version();
                let judged = layer.judged(kind, answer?);
                layer.give_shared(version);
                Ok(judged)
            });
        }
        let (kind, name) = match Target::of(&req.method, req.params.as_ref()) {
            Ok(Some(Target::Tool(name))) => (Kind::Tool, name.into_owned()),
            Ok(Some(Target::Prompt(name))) => (Kind::Prompt, name.into_owned()),
            Ok(_) => return crate::boxed(self.inner.call(env)),
            Err(e) if self.layer.on_change != OnChange::Warn => {
                let refusal = unreadable_request(&req.id, &e.to_string());
                return Box::pin(std::future::ready(Ok(Some(refusal))));
            }
            Err(_) => return crate::boxed(self.inner.call(env)),
        };
        let id = req.id.clone();
        if lock(&self.layer.session.listed).contains(&kind) {
            if let Err(refusal) = self.layer.check(&id, kind, &name) {
                return Box::pin(std::future::ready(Ok(Some(*refusal))));
            }
            return crate::boxed(self.inner.call(env));
        }
        // This session has not seen the server's listing: judge it first.
        let inner = self.inner.clone();
        let layer = self.layer.clone();
        Box::pin(async move {
            let list = match kind {
                Kind::Tool => method::TOOLS_LIST,
                Kind::Prompt | Kind::Template => method::PROMPTS_LIST,
            };
            if let Err(refusal) = layer.take_shared(&id, kind).await {
                return Ok(Some(*refusal));
            }
            let version = layer.store.version();
            let session = layer.session.clone();
            crate::listing::ask_all(inner.clone(), LAYER, list, &session.asked, |page| {
                layer.judge_page(kind, page).is_ok()
            })
            .await?;
            layer.give_shared(version);
            if let Err(refusal) = layer.check(&id, kind, &name) {
                return Ok(Some(*refusal));
            }
            inner.oneshot(env).await
        })
    }
}
