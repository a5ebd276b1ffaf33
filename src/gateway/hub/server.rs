//! What the servers send: answers back to who asked, questions and
//! notices to the client, a server's end kept its own.

use super::{Hub, Pending, State};
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::Message;

/// Whether `answer` says the server needs a person to log in first.
fn login_needed(answer: &Message) -> bool {
    match answer {
        Message::Error(e) => e
            .error
            .data
            .as_ref()
            .and_then(|d| d.get("reason"))
            .is_some_and(|r| r == "login_needed"),
        _ => false,
    }
}

/// Questions of one server that may wait for the client's answers.
const ASKED_AT_MOST: usize = 256;

impl Hub {
    pub(in crate::gateway) async fn server_sent(&mut self, k: usize, message: Message) {
        match message {
            Message::Request(mut request) => {
                // A server's question for the client, under an id of ours;
                // a server that keeps asking without the client answering
                // is refused past a bound (the others' questions go on).
                if self.books.asking(k) >= ASKED_AT_MOST {
                    let message = "too many questions wait for the client's answers".to_owned();
                    let refused = super::error(
                        request.id,
                        mcp_chain_middleware::ErrorCode::INTERNAL_ERROR,
                        message,
                    );
                    self.notify(k, refused);
                    return;
                }
                // The call it belongs to, named as the client knows it.
                self.books.related(k, request.params.as_mut());
                self.books.ask(k, (), &mut request);
                if let Some(params) = &mut request.params {
                    super::tasks::edited(params, |v| super::tasks::outward(&self.names, k, v));
                }
                self.send_client(Message::Request(request)).await;
            }
            Message::Notification(note) => self.server_notification(k, note).await,
            answer => self.server_answer(k, answer).await,
        }
    }

    pub(super) async fn server_answer(&mut self, k: usize, mut answer: Message) {
        // Only the server it was sent to answers it (the client's id put
        // back for a request of the client's).
        let Some(sent) = self.books.answered(k, &mut answer) else {
            return;
        };
        match sent.what {
            Pending::Quiet => {}
            Pending::Learn { listing } => {
                let result = match &answer {
                    Message::Response(r) => r.result.to_value().ok(),
                    _ => None,
                };
                self.learnt(k, listing, result).await;
            }
            Pending::Discover => self.discovered(k, &answer).await,
            Pending::Initialize => {
                let result = match &answer {
                    Message::Response(r) => r.result.to_value().ok(),
                    _ => None,
                };
                let joined_late = self.startup.is_none();
                self.members[k].state = match result {
                    Some(result) => State::Up(result),
                    // A login waits in the browser: its session goes on,
                    // and initialize is asked again until it is done.
                    None if login_needed(&answer) => {
                        tracing::warn!(server = %self.members[k].name, "gateway: a server waits for a login; the others go on");
                        State::LoggingIn(tokio::time::Instant::now() + super::LOGIN_RETRY)
                    }
                    None => State::Down("it refused initialize".into()),
                };
                if joined_late {
                    self.joined(k).await;
                } else {
                    self.answer_initialize(false).await;
                }
            }
            Pending::Forward => {
                if let Message::Response(response) = &mut answer {
                    super::tasks::edited(&mut response.result, |v| {
                        super::tasks::outward(&self.names, k, v)
                    });
                    if let Some(prefix) = self.uri_prefix(k) {
                        super::uris::prefixed(&mut response.result, prefix);
                    }
                    if self.modern.is_some() && !self.speaks_modern(k) {
                        super::modern::completed(&mut response.result);
                    }
                }
                self.send_client(answer).await;
            }
            Pending::Part { merging } => {
                let part = match answer {
                    Message::Response(r) => Some(r.result),
                    _ => None,
                };
                self.listed(merging, k, part).await;
            }
        }
    }

    pub(super) async fn server_notification(
        &mut self,
        k: usize,
        mut note: mcp_chain_middleware::message::Notification,
    ) {
        // A log line of a call names that call as the client knows it.
        self.books.related(k, note.params.as_mut());
        if let Some(params) = &mut note.params {
            super::tasks::edited(params, |v| super::tasks::outward(&self.names, k, v));
            if let (Some(prefix), method::NOTIFICATION_RESOURCES_UPDATED) =
                (self.uri_prefix(k), note.method.as_str())
            {
                super::uris::prefixed(params, prefix);
            }
        }
        if note.method == method::NOTIFICATION_RESOURCES_LIST_CHANGED && self.client_initialized {
            self.learn(k);
        }
        let name = note.method.clone();
        let mut note = Message::Notification(note);
        match name.as_str() {
            // The server withdraws a question it asked the client.
            method::NOTIFICATION_CANCELLED if self.books.withdrawn(k, &mut note).is_none() => {
                return;
            }
            // Progress on a request of the client's sent to it.
            method::NOTIFICATION_PROGRESS if self.books.progress(k, &mut note).is_none() => {
                tracing::debug!(server = %self.members[k].name, "gateway: progress on no request sent to this server; dropped");
                return;
            }
            _ => {}
        }
        self.send_client(note).await;
    }

    /// Server `k` is up after the client was answered: it is initialized
    /// as the others were, and the client told its lists changed.
    pub(super) async fn joined(&mut self, k: usize) {
        if !matches!(self.members[k].state, State::Up(_)) {
            return;
        }
        tracing::warn!(server = %self.members[k].name, "gateway: a server joined");
        if self.client_initialized {
            if !self.speaks_modern(k) {
                let done = Message::notification(method::NOTIFICATION_INITIALIZED, None);
                self.notify(k, done);
            }
            self.learn(k);
        }
        self.lists_changed().await;
    }

    pub(super) async fn lists_changed(&self) {
        if !self.client_initialized {
            return;
        }
        for changed in [
            method::NOTIFICATION_TOOLS_LIST_CHANGED,
            method::NOTIFICATION_PROMPTS_LIST_CHANGED,
            method::NOTIFICATION_RESOURCES_LIST_CHANGED,
        ] {
            self.send_client(Message::notification(changed, None)).await;
        }
    }

    /// Server `k`'s session ended: what it owes is answered, what it
    /// offered leaves the lists.
    pub(in crate::gateway) async fn ended(&mut self, k: usize, why: String) {
        tracing::warn!(server = %self.members[k].name, reason = %why, "gateway: a server is gone; the others go on");
        let was_up = matches!(self.members[k].state, State::Up(_));
        self.members[k].state = State::Down(why);
        self.owners.forget(k);
        self.books.take_asked(|asked| asked.server == k);
        for merging in self.mergings_waiting_on(k) {
            self.listed(merging, k, None).await;
        }
        for (_, sent) in self.books.take_sent(|sent| sent.server == k) {
            if let (Pending::Forward, Some(client)) = (sent.what, sent.theirs) {
                let answer = self.unreachable(client, k);
                self.send_client(answer).await;
            }
        }
        self.replay_unrouted().await;
        if self.startup.is_some() {
            self.answer_initialize(false).await;
        } else if was_up {
            self.lists_changed().await;
        }
    }
}
