//! [`Audit`]: writes a line for each message and each answer.

use super::config::OnWriteError;
use super::layer::Shared;
use super::record::{millis, Reads, Record};
use super::sink::Queued;
use crate::message::method;
use crate::target::Target;
use crate::ResponseFuture;
use crate::{BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message};
use serde_json::{Map, Value};
use std::future::ready;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::time::Instant;
use tower::Service;

/// The layer name in refusals, `data.layer` and logs.
pub(super) const LAYER: &str = "audit";

/// Records every message that passes, in both directions, and the outcome
/// of every request; changes nothing it forwards.
#[derive(Debug, Clone)]
pub struct Audit<S> {
    inner: S,
    shared: Arc<Shared>,
    /// The session's fields, when served over HTTP (see `AuditLayer::for_session`).
    session: Option<Arc<[u8]>>,
    /// Reads `server` from the target's name (a gateway's shared chain).
    names_server: bool,
}

// === impl Audit ===

impl<S> Audit<S> {
    pub(super) fn new(
        inner: S,
        shared: Arc<Shared>,
        session: Option<Arc<[u8]>>,
        names_server: bool,
    ) -> Self {
        Self {
            inner,
            shared,
            session,
            names_server,
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<Envelope> for Audit<S>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        let shared = &self.shared;
        let msg = &env.message;
        // An item that cannot be read is recorded without it; the layers
        // that judge items refuse such a request.
        let target = Target::of_message(msg).ok().flatten();
        let mut record = Record::new(env.direction, kind_of(msg));
        record.session = self.session.as_deref();
        record.id = msg.id();
        record.method = msg.method();
        record.target(target.as_ref());
        if self.names_server {
            record.server = server_named(target.as_ref());
        }
        record.size = Some(msg.json_len());
        record.params = msg.params().filter(|_| shared.payloads);
        if let (Some(method::NOTIFICATION_TASKS), Some(params)) = (msg.method(), msg.params()) {
            record.input_requests(params);
        }
        let Message::Request(req) = msg else {
            // A notification (or a stray answer) cannot be refused: no one
            // would hear of it. Its line goes out with the others of this
            // burst, before the proxy next waits for input.
            shared.write_soon(&record);
            return crate::boxed(self.inner.call(env));
        };
        // Its answer's line repeats these fields: written once, kept.
        let head = record.head();
        record.head = Some(&head);
        // Written here, in `call`, before the request is passed on: the
        // record of a request exists before the peer can act on it.
        let written = shared.sink.write_now(|out| record.write(out));
        if let Err(e) = written {
            tracing::warn!(layer = LAYER, log = %shared.sink.describe().display(),
                error = %e, method = %req.method, id = %req.id, "audit line not written");
            if shared.on_write_error == OnWriteError::Refuse {
                let error = ErrorObject::refusal(
                    ErrorCode::REFUSED,
                    LAYER,
                    "audit_write_failed",
                    &format!("request refused: its audit record could not be written ({e})"),
                );
                let answer = Message::error(Some(req.id.clone()), error);
                return Box::pin(ready(Ok(Some(answer))));
            }
        }
        let pending = Pending {
            shared: shared.clone(),
            session: self.session.clone(),
            direction: env.direction,
            head,
            reads: Reads::of(&req.method),
            start: Instant::now(),
            done: false,
        };
        let answer = self.inner.call(env);
        Box::pin(async move {
            let (answer, notes) = crate::note::collect(answer).await;
            pending.finish(&answer, notes.as_ref());
            answer
        })
    }
}

/// In a gateway's shared chain, the server a tool or prompt names by its
/// prefix, or a URI by its (`resources = "prefix"`): the gateway routes by
/// the same table.
fn server_named(target: Option<&Target<'_>>) -> Option<&'static str> {
    let names = crate::servers::installed()?;
    match target? {
        Target::Tool(name) | Target::Prompt(name) => names.server_of(name),
        Target::Resource(uri) | Target::ResourceTemplate(uri) => names.server_of_uri(uri),
    }
}

fn kind_of(msg: &Message) -> &'static str {
    match msg {
        Message::Request(_) => "request",
        Message::Notification(_) => "notification",
        // Answers travel back as futures' outputs; one passed down the chain
        // as a message of its own is recorded as what it is.
        Message::Response(_) | Message::Error(_) => "response",
    }
}

/// A request waiting for its answer: what its response line needs. Dropped
/// unanswered (an outer layer gave up on it, or the proxy is shutting
/// down), it still writes a line, so every request line has its outcome.
#[derive(Debug)]
struct Pending {
    shared: Arc<Shared>,
    session: Option<Arc<[u8]>>,
    direction: Direction,
    /// The request's `id`, `method` and target, as written in its line.
    head: Vec<u8>,
    /// What its result may say beyond "ok".
    reads: Reads,
    start: Instant,
    done: bool,
}

impl Pending {
    fn record(&self) -> Record<'_> {
        let mut record = Record::new(self.direction, "response");
        record.session = self.session.as_deref();
        record.head = Some(&self.head);
        record.duration_ms = Some(millis(self.start.elapsed()));
        record
    }

    fn finish(
        mut self,
        answer: &Result<Option<Message>, BoxError>,
        notes: Option<&Map<String, Value>>,
    ) {
        let mut record = self.record();
        record.answer(answer, self.shared.payloads, self.reads);
        record.notes = notes;
        self.shared.write_soon(&record);
        self.done = true;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            let mut record = self.record();
            record.outcome = Some("abandoned");
            self.shared.write_soon(&record);
        }
    }
}

// === impl Shared ===

impl Shared {
    /// Queues a line that need not be written before anything else happens
    /// (an answer's, a notification's) and makes sure it is written soon:
    /// by a task that runs once the messages in hand are dealt with, so a
    /// burst of answers costs one write. Without a runtime (a test calling
    /// the service by hand), at once.
    pub(super) fn write_soon(self: &Arc<Self>, record: &Record<'_>) {
        match self.sink.write_later(|out| record.write(out)) {
            Queued::Done => {}
            Queued::Failed(e) => self.not_written(&e),
            Queued::NeedsFlush => match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let shared = self.clone();
                    runtime.spawn(async move {
                        tokio::task::yield_now().await;
                        shared.flush();
                    });
                }
                Err(_) => self.flush(),
            },
        }
    }

    fn flush(&self) {
        if let Err(e) = self.sink.flush() {
            self.not_written(&e);
        }
    }

    fn not_written(&self, e: &std::io::Error) {
        tracing::warn!(layer = LAYER, log = %self.sink.describe().display(),
            error = %e, "audit lines not written");
    }
}
