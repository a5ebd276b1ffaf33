//! A 2026-07-28 call under `approve`: no session holds the question, so it
//! travels the protocol's way (multi round-trip requests): an
//! `input_required` result asks, the retry's `inputResponses` answers, and
//! a sealed `requestState` ties the two to this call (see `question.rs`).
//! A client that cannot ask (no elicitation in its request's
//! capabilities, or `ask` without `"elicitation"`) is asked on the
//! approval page when `ask` has `"page"`, the call waiting meanwhile; a
//! lasting grant (`remember = "always"`) holds for it as for any.

use super::desk;
use super::question::{answer_of, can_ask, elicitation, meta, State, INPUT_KEY};
use super::service::{decided, refusal, settle, settled, unreadable, Approve, Call, LAYER};
use super::ways::Way;
use crate::embedded::{is_input_required, INPUT_REQUESTS, INPUT_RESPONSES};
use crate::message::meta::CLIENT_CAPABILITIES;
use crate::message::method;
use crate::payload::Payload;
use crate::{note, BoxError, Envelope, Message, ResponseFuture};
use serde_json::{json, Value};
use tower::{Service, ServiceExt};

impl<S> Approve<S>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    /// A 2026-07-28 call: the question travels as an `input_required`
    /// result, the answer in the retry's `inputResponses`, and a sealed
    /// `requestState` ties the two to this call.
    pub(super) fn modern(&mut self, mut env: Envelope, mut call: Call) -> ResponseFuture {
        let seal = &self.layer.shared.seal;
        let state_text = call
            .params
            .get("requestState")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let ours = state_text
            .as_deref()
            .and_then(|text| seal.open(text, &call.tool, &call.arguments));
        let (decision, server_state) = match ours {
            Some(Err(why)) => {
                let message = format!(
                    "the approval state of the call to {:?} is {why}; ask again with a fresh call",
                    call.tool
                );
                let reason = if why == "expired" {
                    "expired"
                } else {
                    "altered"
                };
                return settled(refusal(&call.id, reason, &message), &mut self.inner, env);
            }
            Some(Ok(State {
                approved: true,
                server,
            })) => ("approved_earlier", server),
            Some(Ok(State {
                approved: false,
                server,
            })) => {
                let answer = call
                    .params
                    .get(INPUT_RESPONSES)
                    .and_then(|r| r.get(INPUT_KEY))
                    .cloned();
                let Some(answer) = answer else {
                    let question = ("asked", Some(self.question(&call, server)));
                    return settled(question, &mut self.inner, env);
                };
                let decision = decided(&call, answer_of(&answer, false, false), |_| {});
                if decision.1.is_some() {
                    return settled(decision, &mut self.inner, env);
                }
                if let Some(Value::Object(responses)) = call.params.get_mut(INPUT_RESPONSES) {
                    responses.remove(INPUT_KEY);
                    if responses.is_empty() {
                        call.params.remove(INPUT_RESPONSES);
                    }
                }
                (decision.0, server)
            }
            None => {
                let capabilities = meta(&call.params).and_then(|m| m.get(CLIENT_CAPABILITIES));
                let elicitation = capabilities.and_then(|c| c.get("elicitation"));
                let ways = &self.layer.shared.settings.ways;
                if ways.contains(&Way::Elicitation) && can_ask(elicitation) {
                    // The protocol's own way first.
                    let question = ("asked", Some(self.question(&call, state_text)));
                    return settled(question, &mut self.inner, env);
                }
                // A lasting grant, else the approval page while the call
                // waits (its requestState, the server's own, goes on
                // untouched), else a client that cannot be asked.
                let page = ways.contains(&Way::Page) && desk::installed().is_some();
                let layer = self.layer.clone();
                let inner = self.inner.clone();
                return Box::pin(async move {
                    let params = Payload::from(Value::Object(call.params.clone()));
                    let granted = layer.granted_for_good(&call.id, &call.tool, Some(&params));
                    let decision = match granted.await {
                        Some(granted) => granted,
                        None if page => layer.ask_on_the_page(&call).await,
                        None => layer.cannot_ask(&call.id, &call.tool),
                    };
                    settle(decision, inner.oneshot(env)).await
                });
            }
        };
        // Approved: the server gets its own state back, or none.
        match &server_state {
            Some(server) => call.params.insert("requestState".into(), json!(server)),
            None => call.params.remove("requestState"),
        };
        if let Message::Request(req) = &mut env.message {
            req.params = Some(Payload::from(Value::Object(std::mem::take(
                &mut call.params,
            ))));
        }
        let answer = self.inner.call(env);
        let layer = self.layer.clone();
        Box::pin(async move {
            super::service::record(decision);
            note::add(LAYER, json!({"decision": decision}));
            let mut out = answer.await?;
            // The server asks for input of its own: its state rides inside
            // an approved one, so the retry is not asked about again.
            if let Some(Message::Response(response)) = &mut out {
                if is_input_required(&response.result) {
                    let server = response.result.member("requestState").ok().flatten();
                    let server = server.and_then(|s| s.as_str().map(str::to_owned));
                    let state = State {
                        approved: true,
                        server,
                    };
                    let sealed = layer.shared.seal.state(&call.tool, &call.arguments, &state);
                    if response
                        .result
                        .set_member("requestState", json!(sealed))
                        .is_err()
                    {
                        let (_, refused) =
                            unreadable(&call.id, "the server's answer cannot be read");
                        return Ok(refused);
                    }
                }
            }
            Ok(out)
        })
    }

    /// The `input_required` result that asks the user, carrying the
    /// server's own state (if the call had one) under the seal.
    fn question(&self, call: &Call, server: Option<String>) -> Message {
        let state = State {
            approved: false,
            server,
        };
        let sealed = self
            .layer
            .shared
            .seal
            .state(&call.tool, &call.arguments, &state);
        let server = self.layer.session.server.as_ref().map(|s| s.name.as_str());
        let ask = elicitation(&call.tool, server, &call.arguments, false, false, true);
        let result = json!({
            "resultType": "input_required",
            INPUT_REQUESTS: {INPUT_KEY: {"method": method::ELICITATION_CREATE, "params": ask}},
            "requestState": sealed,
        });
        Message::response(call.id.clone(), result)
    }
}
