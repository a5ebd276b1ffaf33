//! What the client sends: routed to the server that owns what it names.

use super::{error, Hub, Pending, State};
use crate::gateway::names::Listing;
use mcp_chain_middleware::message::{method, Request};
use mcp_chain_middleware::payload::Payload;
use mcp_chain_middleware::{ErrorCode, Message, RequestId};
use serde_json::{json, Value};

/// The most a client may send before its `initialize` is answered.
const DEFERRED_AT_MOST: usize = 256;

impl Hub {
    pub(in crate::gateway) async fn client_sent(&mut self, message: Message) {
        // A 2026-07-28 client's first request starts the servers.
        if let Message::Request(request) = &message {
            let fresh = self.client_params.is_none() && self.modern.is_none();
            if fresh && super::modern::is_modern(request) {
                self.start_modern(request);
                if request.method == method::SERVER_DISCOVER {
                    return; // answered once the servers are up
                }
            }
        }
        // While the servers start, only a ping is answered; the rest waits
        // for the client's initialize to be answered.
        let waits = match &message {
            Message::Request(r) => r.method != method::PING && r.method != method::INITIALIZE,
            _ => true,
        };
        if waits && self.starting() {
            if self.deferred.len() < DEFERRED_AT_MOST {
                self.deferred.push(message);
            } else if let Message::Request(request) = message {
                let message =
                    "too many requests before initialize was answered; wait for its answer"
                        .to_owned();
                self.send_client(error(request.id, ErrorCode::INVALID_REQUEST, message))
                    .await;
            }
            return;
        }
        match message {
            Message::Request(request) => self.client_request(request).await,
            Message::Notification(note) => self.client_notification(Message::Notification(note)),
            answer @ (Message::Response(_) | Message::Error(_)) => {
                // The client's answer to a server's request.
                let mut answer = answer;
                if let Some(k) = self.books.replied(|_| true, &mut answer) {
                    if let Message::Response(response) = &mut answer {
                        super::tasks::edited(&mut response.result, |v| {
                            super::tasks::inward(&self.names, k, v)
                        });
                    }
                    self.notify(k, answer);
                }
            }
        }
    }

    pub(super) async fn client_request(&mut self, request: Request) {
        let id = request.id.clone();
        // Only the small params mcp-chain answers or fans out are read
        // whole; a call's arguments stay text (`route`).
        let small = || {
            request
                .params
                .as_ref()
                .and_then(|p| p.to_value().ok())
                .unwrap_or(Value::Null)
        };
        match request.method.as_str() {
            method::INITIALIZE => self.initialize(id, small()),
            method::PING => self.send_client(Message::response(id, json!({}))).await,
            method::SERVER_DISCOVER => self.discover_now(id).await,
            method::LOGGING_SET_LEVEL => {
                let params = small();
                for k in self.up_members() {
                    let message =
                        Message::request(0, method::LOGGING_SET_LEVEL, Some(params.clone()));
                    self.send_server(k, message, Pending::Quiet);
                }
                self.send_client(Message::response(id, json!({}))).await;
            }
            name => match Listing::of(name) {
                Some(listing) => self.list(id, listing, &small()).await,
                None => self.route(request).await,
            },
        }
    }

    pub(super) fn client_notification(&mut self, note: Message) {
        let Message::Notification(note) = note else {
            return;
        };
        match note.method.as_str() {
            method::NOTIFICATION_INITIALIZED => {
                self.client_initialized = true;
                for k in self.up_members() {
                    self.notify(k, Message::Notification(note.clone()));
                    self.learn(k);
                }
            }
            method::NOTIFICATION_CANCELLED => {
                // Only a request of this client's, to the server it went to.
                let mut note = Message::Notification(note);
                let forwarded = |p: &Pending| matches!(p, Pending::Forward);
                if let Some(k) = self.books.cancelled(forwarded, &mut note) {
                    self.notify(k, note);
                }
            }
            method::NOTIFICATION_PROGRESS => {
                // Progress on a server's question: to that server alone.
                let mut note = Message::Notification(note);
                match self.books.replied_progress(|_| true, &mut note) {
                    Some(k) => self.notify(k, note),
                    None => {
                        tracing::debug!("gateway: progress on no question of a server's; dropped")
                    }
                }
            }
            _ => {
                // Roots changed: every server.
                for k in self.up_members() {
                    self.notify(k, Message::Notification(note.clone()));
                }
            }
        }
    }

    /// A request to the server that owns what it names, the name the
    /// server's own; the rest of the request as the client sent it.
    pub(super) async fn route(&mut self, mut request: Request) {
        let id = request.id.clone();
        let name = request.method.clone();
        let params = request.params.get_or_insert_with(|| json!({}).into());
        let owner = match name.as_str() {
            method::TOOLS_CALL | method::PROMPTS_GET => self.rename(params, "name"),
            method::RESOURCES_READ
            | method::RESOURCES_SUBSCRIBE
            | method::RESOURCES_UNSUBSCRIBE => self.uri_owner(params),
            method::TASKS_GET
            | method::TASKS_RESULT
            | method::TASKS_CANCEL
            | method::TASKS_UPDATE => self.rename(params, "taskId"),
            method::COMPLETION_COMPLETE => self.completion_owner(params),
            _ => {
                let message = format!("{name:?} is not served by this gateway of servers");
                return self
                    .send_client(error(id, ErrorCode::METHOD_NOT_FOUND, message))
                    .await;
            }
        };
        let Some(k) = owner.filter(|&k| matches!(self.members[k].state, State::Up(_))) else {
            let resource = name.starts_with("resources/") || name == method::COMPLETION_COMPLETE;
            if owner.is_none() && resource && self.wait_for_owner(&request) {
                return;
            }
            let message =
                "no server behind this mcp-chain offers that (list again: it may have gone)"
                    .to_owned();
            return self
                .send_client(error(id, ErrorCode::INVALID_PARAMS, message))
                .await;
        };
        if !self.send_server(k, Message::Request(request), Pending::Forward) {
            self.send_client(self.unreachable(id, k)).await;
        }
    }

    /// The owner of the client's name at `key` in `params`, the name
    /// replaced by the server's own (the rest of `params` not read).
    pub(super) fn rename(&self, params: &mut Payload, key: &str) -> Option<usize> {
        let name = params.str_member(key).ok()??.into_owned();
        let (k, theirs) = self.names.split(&name)?;
        params
            .set_member(key, Value::String(theirs.to_owned()))
            .ok()?;
        Some(k)
    }

    /// The owner of the URI in `params`: the server its prefix names (the
    /// prefix taken off), else the one that listed it.
    fn uri_owner(&self, params: &mut Payload) -> Option<usize> {
        let uri = params.str_member("uri").ok()??.into_owned();
        let Some((k, theirs)) = self.prefixed_owner(&uri) else {
            return self.owners.of(&uri);
        };
        params
            .set_member("uri", Value::String(theirs.to_owned()))
            .ok()?;
        Some(k)
    }

    /// The owner of what a completion's `ref` names: a prompt by its
    /// prefix (renamed), a resource template by who listed it.
    fn completion_owner(&self, params: &mut Payload) -> Option<usize> {
        let mut reference = params.member("ref").ok()??;
        match reference.get("type").and_then(Value::as_str)? {
            "ref/prompt" => {
                let name = reference.get("name")?.as_str()?;
                let (k, theirs) = self.names.split(name)?;
                let theirs = Value::String(theirs.to_owned());
                reference["name"] = theirs;
                params.set_member("ref", reference).ok()?;
                Some(k)
            }
            "ref/resource" => {
                let uri = reference.get("uri")?.as_str()?;
                let Some((k, theirs)) = self.prefixed_owner(uri) else {
                    return self.owners.of(uri);
                };
                reference["uri"] = Value::String(theirs.to_owned());
                params.set_member("ref", reference).ok()?;
                Some(k)
            }
            _ => None,
        }
    }

    pub(super) fn unreachable(&self, id: RequestId, k: usize) -> Message {
        let member = &self.members[k];
        let why = match &member.state {
            State::Down(why) => why.clone(),
            State::LoggingIn(_) => "it waits for a login in the browser".to_owned(),
            _ => "it is not keeping up".to_owned(),
        };
        let message = format!("the server {} cannot be reached: {why}", member.name);
        error(id, ErrorCode::CONNECTION_CLOSED, message)
    }

    pub(super) fn up_members(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&k| matches!(self.members[k].state, State::Up(_)))
            .collect()
    }

    // === from the servers ===
}
