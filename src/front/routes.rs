//! Where each message for an HTTP client goes. Over a pipe everything goes
//! out on one stdout; over Streamable HTTP an answer belongs on the
//! response to the POST that carried its request, and the session's other
//! messages on the client's GET stream.
//!
//! The session's router takes what the chain queued for the client (the
//! same queue a pipe's writer takes from) as messages, not yet written:
//! each is written here, once, after a renamed request's client has its
//! id and progress token back (never written, then read and written
//! again), and sent on:
//!
//! - an answer: to the POST waiting for that id (as an SSE event, or as
//!   the JSON body); the POST's stream ends with its last answer;
//! - `notifications/progress`: to the POST whose request carries that
//!   progress token;
//! - anything else: to the GET stream, with an event id, kept in a bounded
//!   backlog so a client that reconnects with `Last-Event-ID` gets what it
//!   missed; with no GET stream open, to the newest POST stream still open
//!   (a server's question during a tool call must reach a client that
//!   never opened one), else it waits in the backlog;
//! - legacy HTTP+SSE: everything to the one stream of the session.

use super::backlog::Backlog;
use super::reply::Outgoing;
use crate::mcp_http::ToolParams;
use crate::transport::queue::Outgoing as Queued;
use bytes::Bytes;
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::{Message, RequestId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::mpsc;
use tokio::time::Instant;

mod subscriptions;

/// Events a POST stream holds before the router waits for its client.
const POST_EVENTS: usize = 64;
/// Room in a GET stream beyond what it replays.
const GET_EVENTS: usize = 64;

/// The routes of one session, shared by its router and its HTTP handlers.
#[derive(Default)]
pub(super) struct Routes {
    next_post: u64,
    /// A request's id → the POST waiting for its answer.
    answers: HashMap<RequestId, u64>,
    /// A request's progress token (as JSON) → its POST.
    progress: HashMap<String, u64>,
    posts: HashMap<u64, Post>,
    get: Option<mpsc::Sender<Outgoing>>,
    backlog: Backlog,
    /// Legacy HTTP+SSE: the session's one stream.
    legacy: Option<mpsc::Sender<Outgoing>>,
    /// A pool session for requests without a session (2026-07-28): other
    /// messages go to a `subscriptions/listen` stream only.
    pub(super) stateless: bool,
    /// A pool session's: the parameters its server's listings mark for
    /// `Mcp-Param-*` headers, learned from the `tools/list` answers relayed.
    pub(super) marked: Option<Arc<ToolParams>>,
    /// When a POST was last done with (answered, or its client gone): a
    /// session is idle from its last answer, not from its last request.
    pub(super) last_done: Option<Instant>,
}

struct Post {
    tx: mpsc::Sender<Outgoing>,
    /// Ids whose answers are still to come.
    waiting: Vec<RequestId>,
    tokens: Vec<String>,
    /// An SSE stream (which may carry other messages), not a JSON body.
    events: bool,
    /// What the client called its request and its progress token, when
    /// the front renamed them (a pool session's request).
    restore: Option<Restore>,
    /// A `subscriptions/listen` stream.
    listen: bool,
    /// The `list_changed` kinds its server acknowledged (see
    /// `subscriptions.rs`).
    kinds: u8,
    /// Its request is a `tools/list`: its answer teaches `marked`.
    lists_tools: bool,
    /// Progress dropped because its reader fell behind (shared sessions).
    dropped: u64,
}

/// The client's id and progress token of a renamed request, and who sent
/// it: in a shared session only that caller may name the request again.
#[derive(Clone)]
pub(super) struct Restore {
    pub(super) id: RequestId,
    pub(super) token: Option<serde_json::Value>,
    pub(super) owner: Owner,
}

/// Who a session or a renamed request belongs to: the principal an OAuth
/// token names (whichever of its tokens it presents), else the static
/// token that let its caller in, else anyone (no authentication).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Owner {
    Anyone,
    Token(super::guard::Pass),
    Principal(String),
}

/// What a POST registers before its messages go to the session.
pub(super) struct Waiting {
    pub(super) ids: Vec<RequestId>,
    pub(super) tokens: Vec<String>,
    pub(super) events: bool,
    pub(super) restore: Option<Restore>,
    pub(super) listen: bool,
    pub(super) lists_tools: bool,
}

pub(super) type Shared = Arc<Mutex<Routes>>;

pub(super) fn lock(routes: &Shared) -> MutexGuard<'_, Routes> {
    routes.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Routes {
    /// A POST's route: what its requests' answers (and, for a stream, the
    /// messages that belong with them) come on.
    /// `Err` with the id when one of the requests reuses the id of a
    /// request of this session still waiting for its answer: the answers
    /// could not be told apart.
    pub(super) fn post(&mut self, waiting: Waiting) -> Result<mpsc::Receiver<Outgoing>, RequestId> {
        if let Some(taken) = waiting.ids.iter().find(|id| self.answers.contains_key(*id)) {
            return Err(taken.clone());
        }
        // Room for every answer beyond the events: in a shared session
        // an answer is never waited for nor dropped (see `has_room`, and
        // the router, `router::run`).
        let (tx, rx) = mpsc::channel(POST_EVENTS + waiting.ids.len());
        self.next_post += 1;
        let n = self.next_post;
        for id in &waiting.ids {
            self.answers.insert(id.clone(), n);
        }
        for token in &waiting.tokens {
            self.progress.insert(token.clone(), n);
        }
        let post = Post {
            tx,
            waiting: waiting.ids,
            tokens: waiting.tokens,
            events: waiting.events,
            restore: waiting.restore,
            listen: waiting.listen,
            kinds: 0,
            lists_tools: waiting.lists_tools,
            dropped: 0,
        };
        self.posts.insert(n, post);
        Ok(rx)
    }

    /// The GET stream: what the client missed (after `last`, its
    /// `Last-Event-ID`, or everything not yet handed to a stream), then
    /// what comes. A new stream replaces the old one.
    pub(super) fn get(&mut self, last: Option<u64>) -> mpsc::Receiver<Outgoing> {
        let missed = self.backlog.replay(last);
        let (tx, rx) = mpsc::channel(missed.len() + GET_EVENTS);
        for e in missed {
            let _ = tx.try_send(e);
        }
        self.get = Some(tx);
        rx
    }

    /// The legacy stream: `first` (the endpoint event), then every
    /// message of the session.
    pub(super) fn legacy_with(&mut self, first: Outgoing) -> mpsc::Receiver<Outgoing> {
        let (tx, rx) = mpsc::channel(POST_EVENTS);
        let _ = tx.try_send(first);
        self.legacy = Some(tx);
        rx
    }

    /// Whether a client is connected to a stream of this session.
    pub(super) fn streaming(&self) -> bool {
        let open =
            |tx: &Option<mpsc::Sender<Outgoing>>| tx.as_ref().is_some_and(|t| !t.is_closed());
        open(&self.get) || open(&self.legacy) || self.posts.values().any(|p| !p.tx.is_closed())
    }

    /// Where a message for the client goes, and as what: one stream, or
    /// (a change notification of a shared session) every listener's. It
    /// is written here, once, after the edits that give a renamed
    /// request's client its own id and progress token back.
    pub(super) fn targets(&mut self, queued: Queued) -> Vec<(mpsc::Sender<Outgoing>, Outgoing)> {
        match queued {
            Queued::One(m) if self.stateless && !answers_or_progress(&m) => self.subscription(m),
            Queued::One(m) => self.target(m).into_iter().collect(),
            Queued::Batch(answers) => self.batch(&answers).into_iter().collect(),
        }
    }

    /// The POST and the front's id of the request `owner` sent as `id`
    /// and still waits for, when it is the one such.
    pub(super) fn renamed(&self, owner: &Owner, id: &RequestId) -> Option<(u64, RequestId)> {
        let mut mine = self.posts.iter().filter(|(_, post)| {
            post.restore
                .as_ref()
                .is_some_and(|r| r.owner == *owner && r.id == *id)
        });
        let (n, post) = mine.next()?;
        let ours = post.waiting.first().cloned()?;
        mine.next().is_none().then_some((*n, ours))
    }

    /// Ends a POST whose request its client cancelled: its server sends
    /// no answer, and the client waits for none.
    pub(super) fn cancelled(&mut self, n: u64) {
        self.close_post(n);
    }

    fn target(&mut self, mut message: Message) -> Option<(mpsc::Sender<Outgoing>, Outgoing)> {
        if let Some(legacy) = &self.legacy {
            return Some((legacy.clone(), Outgoing::event(None, written(&message))));
        }
        if let (Message::Response(_) | Message::Error(_), Some(id)) = (&message, message.id()) {
            let id = id.clone();
            return self.answer(&[id], Answering::One(message));
        }
        if let Some((n, post)) = self.progress_post(&message) {
            if self.stateless && !has_room(post) {
                // A shared session never waits for one client's stream:
                // progress its reader has no room for is dropped (the
                // answer, which has room kept for it, still comes).
                self.dropped_progress(n);
                return None;
            }
            if let Some(Restore {
                token: Some(token), ..
            }) = &post.restore
            {
                if let Some(params) = message.params_mut() {
                    let _ = params.set_member("progressToken", token.clone());
                }
            }
            return Some((post.tx.clone(), Outgoing::event(None, written(&message))));
        }
        self.other(written(&message))
    }

    /// A batch's answers, written as they are (a renamed request is never
    /// part of a batch).
    fn batch(&mut self, answers: &[Message]) -> Option<(mpsc::Sender<Outgoing>, Outgoing)> {
        let mut line = Vec::new();
        Message::write_batch(answers, &mut line);
        line.pop();
        let line = Bytes::from(line);
        if let Some(legacy) = &self.legacy {
            return Some((legacy.clone(), Outgoing::event(None, line)));
        }
        let ids: Vec<RequestId> = answers.iter().filter_map(Message::id).cloned().collect();
        match ids.is_empty() {
            true => self.other(line),
            false => self.answer(&ids, Answering::Written(line)),
        }
    }

    /// What is neither an answer nor a request's progress: to the GET
    /// stream, else the newest POST stream, kept in the backlog.
    fn other(&mut self, line: Bytes) -> Option<(mpsc::Sender<Outgoing>, Outgoing)> {
        let id = self.backlog.push(&line);
        if let Some(get) = self.get.as_ref().filter(|g| !g.is_closed()) {
            self.backlog.sent = id;
            return Some((get.clone(), Outgoing::event(Some(id), line)));
        }
        let newest = self
            .posts
            .iter()
            .filter(|(_, p)| p.events && !p.tx.is_closed())
            .max_by_key(|(n, _)| **n);
        let (_, post) = newest?;
        // Handed to a stream: a GET stream opened later does not get it again.
        self.backlog.sent = id;
        Some((post.tx.clone(), Outgoing::event(Some(id), line)))
    }

    /// An answer (or a batch's answers, `ids`) for the POST waiting for
    /// the first.
    fn answer(
        &mut self,
        ids: &[RequestId],
        answering: Answering,
    ) -> Option<(mpsc::Sender<Outgoing>, Outgoing)> {
        let Some(n) = self.answers.get(&ids[0]).copied() else {
            tracing::debug!(id = %ids[0], "an answer no HTTP request is waiting for; dropped");
            return None;
        };
        for id in ids {
            self.answers.remove(id);
        }
        let post = self.posts.get_mut(&n)?;
        post.waiting.retain(|w| !ids.contains(w));
        let tx = post.tx.clone();
        let marked = self.marked.as_ref().filter(|_| post.lists_tools);
        let line = match answering {
            Answering::Written(line) => line,
            Answering::One(mut m) => {
                if let Some(restore) = &post.restore {
                    m.set_id(restore.id.clone());
                    if let (Some(marked), Message::Response(r)) = (marked, &mut m) {
                        marked.learn(&mut r.result);
                    }
                }
                written(&m)
            }
        };
        // An answer, SSE stream or not: a POST whose first message is its
        // answer is answered with a JSON body (see `handler::relay`), a
        // stream carries it as an event.
        if post.waiting.is_empty() {
            self.close_post(n);
        }
        Some((tx, Outgoing::Answer(line)))
    }

    fn progress_post(&self, message: &Message) -> Option<(u64, &Post)> {
        if message.method() != Some(method::NOTIFICATION_PROGRESS) {
            return None;
        }
        let token = message.params()?.member("progressToken").ok()??;
        let n = *self.progress.get(&token.to_string())?;
        let post = self.posts.get(&n)?;
        post.events.then_some((n, post))
    }

    /// Counts progress dropped for a POST whose reader fell behind, and
    /// says so once per POST, not once per message.
    fn dropped_progress(&mut self, n: u64) {
        if let Some(post) = self.posts.get_mut(&n) {
            post.dropped += 1;
            if post.dropped == 1 {
                tracing::debug!("a client stopped reading its answer's stream; its progress is dropped until it reads again");
            }
        }
    }

    /// The session is over: its streams end, and each POST still waiting
    /// is handed back with the ids it waits for, to be answered.
    pub(super) fn end(&mut self) -> Vec<(mpsc::Sender<Outgoing>, Vec<RequestId>)> {
        self.backlog.warn_dropped(true);
        self.get = None;
        self.legacy = None;
        let posts: Vec<u64> = self.posts.keys().copied().collect();
        posts
            .into_iter()
            .filter_map(|n| self.close_post(n))
            .map(|post| (post.tx, post.waiting))
            .collect()
    }

    /// Whether a request of this session still waits for its answer.
    pub(super) fn in_flight(&self) -> bool {
        !self.answers.is_empty()
    }

    fn close_post(&mut self, n: u64) -> Option<Post> {
        let post = self.posts.remove(&n)?;
        self.last_done = Some(Instant::now());
        for id in &post.waiting {
            self.answers.remove(id);
        }
        for token in &post.tokens {
            self.progress.remove(token);
        }
        Some(post)
    }
}

/// Whether a POST's stream has room for a message that is not an answer:
/// the room kept for its answers stays free.
fn has_room(post: &Post) -> bool {
    post.tx.capacity() > post.waiting.len()
}

/// Whether `message` goes to the POST that asked: an answer, or progress.
fn answers_or_progress(message: &Message) -> bool {
    matches!(message, Message::Response(_) | Message::Error(_))
        || message.method() == Some(method::NOTIFICATION_PROGRESS)
}

/// An answer as it reaches the router: one message still to write (and
/// to give its client's id back), or a batch's, written.
enum Answering {
    One(Message),
    Written(Bytes),
}

/// `message` as a line without its newline: the one write of a message
/// for an HTTP client.
fn written(message: &Message) -> Bytes {
    let mut line = Vec::new();
    message.write_line(&mut line);
    line.pop();
    Bytes::from(line)
}
