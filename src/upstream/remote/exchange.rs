//! One message's exchange with the server: the POST, and whatever its
//! response carries. A notification or an answer should get 202; a request
//! gets a JSON body or an event stream that ends with its answer.
//!
//! Every way this can fail ends with the request answered: an HTTP status
//! that is not an answer, a body that broke off or grew past the cap, a
//! stream that ended before the answer and could not be resumed. A JSON-RPC
//! error the server sends is an answer like any other, whatever the status
//! it came with.

use super::answers::Answers;
use super::http::{Failure, Http};
use super::routing::Routing;
use super::session::RemoteSession;
use crate::connector::Connector;
use crate::peer::Read;
use bytes::Bytes;
use mcp_chain_middleware::message::Incoming;
use mcp_chain_middleware::{Message, RequestId};
use reqwest::{Response, StatusCode};
use std::time::Duration;
use tokio::sync::mpsc;

/// Resumptions of one request's stream in a row that gave nothing, before
/// the request is answered with an error.
const MAX_RESUMES: u32 = 3;

/// Waited before resuming a stream when the server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);

/// What every exchange shares.
pub(super) struct Exchange {
    pub(super) http: Http,
    pub(super) session: RemoteSession,
    /// To the to-client side.
    pub(super) inbox: mpsc::Sender<Read>,
    /// The upstream connector: its recorded handshake is what a renewed
    /// session replays.
    pub(super) conn: Connector,
    pub(super) cap: usize,
    /// The process's budget of big messages in flight.
    pub(super) budget: std::sync::Arc<crate::transport::budget::Budget>,
    /// The tools' marked parameters, learned from the listings relayed.
    pub(super) marked: super::params::ToolParams,
    /// For a WebSocket server: how to reach it.
    pub(super) websocket: Option<super::websocket::Settings>,
}

/// Whether `response`, to a request that carried a session id, says the
/// server forgot the session: 404, as the specification says, or a 400
/// that is not a JSON-RPC answer (server-everything, restarted, answers
/// so). A 400 holding an answer is given back whole, read again from what
/// was read of it.
async fn forgotten(response: Response, cap: usize) -> (bool, Response) {
    match response.status() {
        StatusCode::NOT_FOUND => (true, response),
        StatusCode::BAD_REQUEST => {
            let status = response.status();
            let headers = response.headers().clone();
            let body = capped_body(response, cap).await;
            let answers = body.as_deref().is_some_and(names_a_request);
            let mut rebuilt = hyper::http::Response::new(body.unwrap_or_default());
            *rebuilt.status_mut() = status;
            *rebuilt.headers_mut() = headers;
            (!answers, Response::from(rebuilt))
        }
        _ => (false, response),
    }
}

/// The body, when it fits in `cap` bytes.
async fn capped_body(mut response: Response, cap: usize) -> Option<Bytes> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        if body.len() + chunk.len() > cap {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(Bytes::from(body))
}

/// Whether `body` is a JSON-RPC answer to some request (an `id` that is
/// not null).
fn names_a_request(body: &[u8]) -> bool {
    let Ok(serde_json::Value::Object(message)) = serde_json::from_slice(body) else {
        return false;
    };
    message.get("id").is_some_and(|id| !id.is_null())
}

/// What a request asks that its answer should teach the transport.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Ask {
    /// `initialize`: the answer starts the session.
    pub(super) initialize: bool,
    /// `tools/list`: the answer marks parameters (see `params`).
    pub(super) listing: bool,
}

impl Exchange {
    /// The messages of a response body, counted in the budget.
    pub(super) fn answers(&self, response: Response) -> Option<Answers> {
        Answers::of(response, self.cap).map(|a| a.counted(&self.budget))
    }

    /// POSTs `line`, a request (`id`) or not, and relays what comes back.
    pub(super) async fn run(
        &self,
        line: Bytes,
        id: Option<RequestId>,
        ask: Ask,
        routing: Routing,
        mut first: Option<Response>,
    ) {
        let initialize = ask.initialize;
        let mut renewed = false;
        loop {
            let session = if initialize {
                // A new handshake starts a new session.
                Default::default()
            } else {
                self.session.current()
            };
            // The probe's response, when `auto` already POSTed it.
            let posted = match first.take() {
                Some(response) => Ok(response),
                None => self.http.post(line.clone(), &session, &routing).await,
            };
            let response = match posted {
                Ok(response) => response,
                Err(failure) => return self.fail(id, &failure).await,
            };
            let status = response.status();
            let (forgotten, response) = match session.id.is_some() && !renewed {
                true => forgotten(response, self.cap).await,
                false => (false, response),
            };
            if forgotten {
                let handshake = self.conn.handshake();
                let renewal =
                    self.session
                        .renew(session.generation, &self.http, handshake, self.cap);
                if let Err(failure) = renewal.await {
                    return self.fail(id, &failure).await;
                }
                renewed = true;
                continue;
            }
            if initialize && status.is_success() {
                self.session.started(&response);
            }
            if status == StatusCode::ACCEPTED || (id.is_none() && status.is_success()) {
                if let Some(id) = id {
                    let failure = Failure::new(
                        "no_answer",
                        "the server accepted the request (HTTP 202) but sent no answer",
                    );
                    self.fail(Some(id), &failure).await;
                }
                return;
            }
            let failure = (!status.is_success()).then(|| Failure::status(&response, &self.http));
            let Some(id) = id else {
                if let Some(failure) = failure {
                    tracing::warn!(
                        reason = failure.reason,
                        "the server refused a message: {}",
                        failure.detail
                    );
                }
                return;
            };
            match self.answers(response) {
                Some(answers) => self.relay(answers, id, ask, failure).await,
                None => {
                    let failure = failure.unwrap_or_else(|| {
                        Failure::new(
                            "content_type",
                            "the server's answer is neither JSON nor an event stream",
                        )
                    });
                    self.fail(Some(id), &failure).await;
                }
            }
            return;
        }
    }

    /// Relays a request's response body until its answer, resuming a
    /// stream cut short. `refused`: the response's status was an error, so
    /// unless the body holds the answer (a JSON-RPC error), that is what
    /// the request is answered with.
    async fn relay(&self, mut answers: Answers, id: RequestId, ask: Ask, refused: Option<Failure>) {
        let mut resumes = 0;
        loop {
            let ended = loop {
                match answers.next().await {
                    Ok(Some(mut read)) => {
                        if let Read::TooLong {
                            id: found @ None, ..
                        } = &mut read
                        {
                            // Nothing more is read from this stream: whatever
                            // it was, this request's answer cannot come now.
                            *found = Some(id.clone());
                        }
                        let answered = answers_to(&read, &id);
                        if answered {
                            self.learn(ask, &mut read);
                        }
                        if refused.is_some() && !answered {
                            continue;
                        }
                        if self.inbox.send(read).await.is_err() || answered {
                            return;
                        }
                        resumes = 0;
                    }
                    Ok(None) => break None,
                    Err(failure) => break Some(failure),
                }
            };
            if let Some(refused) = refused {
                return self.fail(Some(id), &refused).await;
            }
            let Some(last_event_id) = answers
                .last_event_id
                .clone()
                .filter(|_| answers.is_stream())
            else {
                let failure = ended.unwrap_or_else(|| {
                    Failure::new(
                        "stream_ended",
                        "the server's answer ended before the answer to this request",
                    )
                });
                return self.fail(Some(id), &failure).await;
            };
            resumes += 1;
            if resumes > MAX_RESUMES {
                let failure = Failure::new(
                    "stream_ended",
                    "the server's stream for this request ended again and again before its answer",
                );
                return self.fail(Some(id), &failure).await;
            }
            tokio::time::sleep(answers.retry.unwrap_or(DEFAULT_RETRY)).await;
            tracing::debug!(attempt = resumes, "resuming the stream of a request");
            let response = match self
                .http
                .get(&self.session.current(), Some(&last_event_id))
                .await
            {
                Ok(response) if response.status().is_success() => response,
                Ok(response) => {
                    return self
                        .fail(Some(id), &Failure::status(&response, &self.http))
                        .await
                }
                Err(failure) => return self.fail(Some(id), &failure).await,
            };
            let Some(mut resumed) = self.answers(response) else {
                let failure = Failure::new(
                    "content_type",
                    "the server resumed the stream with something else",
                );
                return self.fail(Some(id), &failure).await;
            };
            resumed.last_event_id = Some(last_event_id);
            answers = resumed;
        }
    }

    /// What the answer to `ask` teaches: the session's protocol version,
    /// the tools' marked parameters.
    fn learn(&self, ask: Ask, read: &mut Read) {
        let Read::Parsed(Incoming::Single(Ok(message))) = read else {
            return;
        };
        if ask.initialize {
            self.session.negotiated(message);
        }
        if let (true, Message::Response(response)) = (ask.listing, message) {
            self.marked.learn(&mut response.result);
        }
    }

    /// Answers the request `id` (if any) with `failure`, or logs it.
    pub(super) async fn fail(&self, id: Option<RequestId>, failure: &Failure) {
        match id {
            Some(id) => {
                tracing::warn!(reason = failure.reason, "{}", failure.detail);
                let answer = failure.answer(id);
                let _ = self
                    .inbox
                    .send(Read::Parsed(Incoming::Single(Ok(answer))))
                    .await;
            }
            None => tracing::warn!(
                reason = failure.reason,
                "a message was not delivered: {}",
                failure.detail
            ),
        }
    }
}

/// Whether `read` is the answer to the request `id`.
fn answers_to(read: &Read, id: &RequestId) -> bool {
    match read {
        Read::Parsed(Incoming::Single(Ok(message))) => message.answers(id),
        // A 2025-03-26 server may answer inside a batch.
        Read::Parsed(Incoming::Batch(items)) => items.iter().flatten().any(|m| m.answers(id)),
        Read::Unparsable {
            id: Some(found), ..
        }
        | Read::TooLong {
            id: Some(found), ..
        } => found == id,
        _ => false,
    }
}
