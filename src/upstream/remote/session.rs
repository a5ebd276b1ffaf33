//! The session a Streamable HTTP server keeps for mcp-chain: the
//! `Mcp-Session-Id` it gave in answer to `initialize` (sent back on every
//! later request), the protocol version the handshake settled on (sent as
//! `MCP-Protocol-Version`), and what to do when the server forgets it.
//!
//! A 404 to a request that carried a session id means the session expired
//! (so does a 400 that is not a JSON-RPC answer: server-everything, the
//! reference server, answers an unknown session so).
//! The client must not notice: its cached `initialize` and
//! `notifications/initialized` (as the connector recorded them, after every
//! layer) are replayed with mcp-chain's own id, the answer read here and
//! never routed, and the request retried once in the new session. Requests
//! that meet the 404 together renew it once: each knows the generation it
//! was sent in, and only the first to come finds it current.

use super::answers::Answers;
use super::http::{Failure, Http};
use super::params::ToolParams;
use super::routing::Routing;
use crate::connector::Handshake;
use crate::mcp_http::SESSION_ID;
use crate::peer::Read;
use bytes::Bytes;
use mcp_chain_middleware::message::{method, Incoming};
use mcp_chain_middleware::Message;
use reqwest::header::HeaderValue;
use reqwest::Response;
use std::time::Duration;
use tokio::sync::{watch, Mutex};

/// How long the server gets to answer a replayed `initialize`.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(30);

/// What every request carries, as of one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    pub(super) id: Option<HeaderValue>,
    pub(super) version: Option<HeaderValue>,
    /// Bumped each time a session starts.
    pub(super) generation: u64,
}

#[derive(Debug)]
pub(super) struct RemoteSession {
    state: watch::Sender<State>,
    renewing: Mutex<()>,
}

impl RemoteSession {
    pub(super) fn new() -> Self {
        Self {
            state: watch::Sender::new(State::default()),
            renewing: Mutex::new(()),
        }
    }

    pub(super) fn current(&self) -> State {
        self.state.borrow().clone()
    }

    pub(super) fn watch(&self) -> watch::Receiver<State> {
        self.state.subscribe()
    }

    /// `initialize` was answered: a new session, with the id the server gave
    /// (none: the server keeps no sessions).
    pub(super) fn started(&self, response: &Response) {
        self.set(id_of(response));
    }

    fn set(&self, id: Option<HeaderValue>) {
        self.state.send_modify(|state| {
            state.id = id;
            state.version = None;
            state.generation += 1;
        });
    }

    /// The protocol version `initialize`'s answer settled on.
    pub(super) fn negotiated(&self, answer: &Message) {
        let Message::Response(response) = answer else {
            return;
        };
        let version = response.result.str_member("protocolVersion");
        if let Ok(Some(version)) = version {
            if let Ok(version) = HeaderValue::from_str(&version) {
                self.state
                    .send_modify(|state| state.version = Some(version));
            }
        }
    }

    /// Starts a new session in place of the one `seen` was sent in, unless
    /// that was done already. `Err` when the server would not take the
    /// handshake again.
    pub(super) async fn renew(
        &self,
        seen: u64,
        http: &Http,
        handshake: Option<Handshake>,
        cap: usize,
    ) -> Result<(), Failure> {
        let _one_at_a_time = self.renewing.lock().await;
        if self.current().generation != seen {
            return Ok(());
        }
        tracing::warn!(
            "the server's session expired; starting a new one with the client's handshake"
        );
        let Some(Handshake {
            initialize: Some(params),
            initialized,
            ..
        }) = handshake
        else {
            // Nothing to replay: the client never initialized.
            self.set(None);
            return Ok(());
        };
        let request = Handshake::replayed_initialize(params);
        let response = http
            .post(
                line(&request),
                &State::default(),
                &Routing::of(&request, &ToolParams::default()),
            )
            .await?;
        if !response.status().is_success() {
            return Err(Failure::status(&response, http));
        }
        // Taken only once the server accepted the handshake: a replay it
        // refuses leaves the old session as it was, so the next request
        // meets the same 404 and starts a fresh handshake, instead of going
        // out with no session at all for the life of the process.
        let id = id_of(&response);
        let answer = tokio::time::timeout(REPLAY_TIMEOUT, answer_in(response, cap))
            .await
            .map_err(|_| {
                Failure::new(
                    "session",
                    "the server did not answer the replayed initialize",
                )
            })??;
        if let Message::Error(e) = &answer {
            let refused = format!(
                "the server refused the replayed initialize: {}",
                e.error.message
            );
            return Err(Failure::new("session", refused));
        }
        self.set(id);
        self.negotiated(&answer);
        if initialized {
            let note = Message::notification(method::NOTIFICATION_INITIALIZED, None);
            let response = http
                .post(
                    line(&note),
                    &self.current(),
                    &Routing::of(&note, &ToolParams::default()),
                )
                .await?;
            if !response.status().is_success() {
                return Err(Failure::status(&response, http));
            }
        }
        Ok(())
    }
}

/// The session id an `initialize` response gives: visible ASCII only, as
/// the specification says; anything else is not sent back.
fn id_of(response: &Response) -> Option<HeaderValue> {
    let id = response.headers().get(SESSION_ID)?;
    if !id.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)) {
        tracing::warn!("the server's session id is not visible ASCII; not using it");
        return None;
    }
    Some(id.clone())
}

/// A message as a request body.
pub(super) fn line(message: &Message) -> Bytes {
    let mut out = Vec::new();
    message.write_line(&mut out);
    out.pop(); // the newline
    Bytes::from(out)
}

/// The replayed `initialize`'s answer, from its response body; whatever
/// else the server says there is for a session the client does not know.
async fn answer_in(response: Response, cap: usize) -> Result<Message, Failure> {
    let mut answers = Answers::of(response, cap)
        .ok_or_else(|| Failure::new("session", "the server's answer to initialize is not JSON"))?;
    while let Some(read) = answers.next().await? {
        if let Read::Parsed(Incoming::Single(Ok(message))) = read {
            if Handshake::answers_replay(&message) {
                return Ok(message);
            }
            tracing::debug!(
                kind = message.kind(),
                "skipping a message during the replayed handshake"
            );
        }
    }
    Err(Failure::new(
        "session",
        "the server's answer to initialize ended before the answer",
    ))
}
