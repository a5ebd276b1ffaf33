//! The ways a 2025-era call's approval is asked, tried in the order `ask`
//! gives them, all within the call's `timeout`:
//!
//! - `elicitation`: the client's own dialog (`elicitation/create`), for a
//!   client that declares form elicitation. One that does not answer within
//!   `elicitation_wait` (a client that declares it and never shows the
//!   form) has its question withdrawn (`notifications/cancelled`), and the
//!   next way is tried; a client that does not declare it is passed over
//!   at once.
//! - `page`: mcp-chain's approval page (the process's [`desk`]), where the
//!   person clicks Allow once / Allow for this session / Deny.
//!
//! `fallback` applies only when no way could ask at all.
//!
//! [`desk`]: super::desk

use super::book::{self, Grant};
use super::desk::{self, PageAnswer, Waiting};
use super::question::{answer_of, elicitation};
use super::service::{
    decided, record_session_grant, refusal, unreadable, ApproveLayer, Call, Decision,
};
use crate::message::method;
use crate::payload::Payload;
use crate::peer::ClientSlot;
use crate::{Message, RequestId};
use serde_json::{json, Map};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// A way to ask, as `ask` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    Elicitation,
    Page,
}

impl ApproveLayer {
    /// Whether some way can ask for this session now.
    pub(super) fn can_ask_somehow(&self) -> bool {
        self.shared.settings.ways.iter().any(|way| match way {
            Way::Elicitation => self.session.can_ask.load(Ordering::Relaxed),
            Way::Page => desk::installed().is_some(),
        })
    }

    /// Asks whether `tool` may run with what `params` holds, each way in
    /// turn, within the call's `timeout`; the decision recorded.
    pub(super) async fn ask(
        &self,
        id: &RequestId,
        tool: &str,
        params: Option<&Payload>,
    ) -> Decision {
        crate::decided!("approve", "asked");
        let arguments = match params.map(|p| p.member("arguments")) {
            None | Some(Ok(None)) => json!({}),
            Some(Ok(Some(arguments))) => arguments,
            Some(Err(e)) => return unreadable(id, &e.to_string()),
        };
        let call = Call {
            id: id.clone(),
            tool: tool.to_owned(),
            arguments,
            params: Map::new(),
        };
        let decision = self.ask_each_way(&call).await;
        self.record(&call.tool, &call.arguments, decision.0);
        decision
    }

    /// A 2026-07-28 call whose client cannot ask: the approval page alone,
    /// within the call's `timeout`, without "Allow for this session" (a
    /// sessionless request has no session to remember it in); the
    /// decision recorded.
    pub(super) async fn ask_on_the_page(&self, call: &Call) -> Decision {
        crate::decided!("approve", "asked");
        let deadline = Instant::now() + self.shared.settings.timeout;
        let asked = match desk::installed() {
            Some(desk) => self.on_page(&desk, call, deadline, false).await,
            None => None,
        };
        let decision = asked.unwrap_or_else(|| self.cannot_ask(&call.id, &call.tool));
        self.record(&call.tool, &call.arguments, decision.0);
        decision
    }

    async fn ask_each_way(&self, call: &Call) -> Decision {
        let settings = &self.shared.settings;
        let (id, tool) = (&call.id, call.tool.as_str());
        let deadline = Instant::now() + settings.timeout;
        let ways = &settings.ways;
        for (n, way) in ways.iter().enumerate() {
            let last = n + 1 == ways.len();
            let asked = match way {
                Way::Elicitation if self.session.can_ask.load(Ordering::Relaxed) => {
                    let wait = match last {
                        true => deadline,
                        false => deadline.min(Instant::now() + settings.elicitation_wait),
                    };
                    self.elicit(call, wait, last).await
                }
                Way::Page => match desk::installed() {
                    Some(desk) => {
                        let session_choice = settings.remember_session;
                        self.on_page(&desk, call, deadline, session_choice).await
                    }
                    None => None,
                },
                Way::Elicitation => None,
            };
            if let Some(decision) = asked {
                return decision;
            }
            if Instant::now() >= deadline {
                return timed_out(call, settings.timeout);
            }
        }
        self.cannot_ask(id, tool)
    }

    /// The client's own dialog, until `wait`. `None`: no answer by then
    /// (the question is withdrawn), or, with a way after this one (`last`
    /// false), the client answered the question with an error (it declared
    /// elicitation and cannot show it): the next way asks.
    async fn elicit(&self, call: &Call, wait: Instant, last: bool) -> Option<Decision> {
        let session = &self.session;
        let settings = &self.shared.settings;
        let titled = session.titled.load(Ordering::Relaxed);
        let params = elicitation(
            &call.tool,
            session.server.as_ref().map(|s| s.name.as_str()),
            &call.arguments,
            settings.remember_session,
            settings.remember_always,
            titled,
        );
        let n = session.asked.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("mcp-chain-approve-{n}"));
        let question = Message::request(id.clone(), method::ELICITATION_CREATE, Some(params));
        let mut open = Open {
            client: session.client.clone(),
            id: Some(id),
        };
        let asked = tokio::time::timeout_at(wait, session.client.send(question)).await;
        let answer = match asked {
            Ok(Ok(Some(Message::Response(r)))) => r.result.to_value().ok(),
            Ok(Ok(Some(Message::Error(_)))) if !last => {
                open.id = None; // answered, with an error
                return None;
            }
            Ok(Ok(Some(_))) | Ok(Err(_)) => None,
            Ok(Ok(None)) => Some(json!({"action": "cancel"})),
            // `open` withdraws the question as it goes.
            Err(_) => return None,
        };
        open.id = None; // answered
        let Some(answer) = answer else {
            return Some(refusal(
                &call.id,
                "unreadable",
                &format!("the client's answer to the approval of {:?} cannot be read; the call is refused", call.tool),
            ));
        };
        let answer = answer_of(&answer, settings.remember_session, settings.remember_always);
        let decision = decided(call, answer, |tool| record_session_grant(session, tool));
        if decision.0 == "allowed_always" {
            self.grant_for_good(call).await;
        }
        Some(decision)
    }

    /// mcp-chain's approval page, until `deadline`, offering "Allow for
    /// this session" with `session_choice`. `None`: the desk let the
    /// question go.
    async fn on_page(
        &self,
        desk: &std::sync::Arc<desk::Desk>,
        call: &Call,
        deadline: Instant,
        session_choice: bool,
    ) -> Option<Decision> {
        let settings = &self.shared.settings;
        let mut question = desk.ask(Waiting {
            id: 0,
            tool: call.tool.clone(),
            server: self.session.server.as_ref().map(|s| s.name.clone()),
            arguments: call.arguments.clone(),
            caller: self.session.caller.clone(),
            policy: settings.patterns.clone(),
            session_choice,
            always_choice: settings.remember_always,
            since: SystemTime::now(),
        });
        let answer = match tokio::time::timeout_at(deadline, question.answer()).await {
            Ok(answer) => answer?,
            Err(_) => return Some(timed_out(call, settings.timeout)),
        };
        Some(match answer {
            PageAnswer::AllowOnce => ("page_allowed", None),
            PageAnswer::AllowSession => {
                record_session_grant(&self.session, &call.tool);
                ("page_allowed", None)
            }
            PageAnswer::AllowAlways => {
                self.grant_for_good(call).await;
                ("page_allowed_always", None)
            }
            PageAnswer::Deny => refusal(
                &call.id,
                "page_denied",
                &format!(
                    "the user denied the call to {:?} on the approval page; it is refused",
                    call.tool
                ),
            ),
        })
    }
}

impl ApproveLayer {
    /// A lasting grant for this call (`remember = "always"`), if the book
    /// holds one: decided without asking, and recorded. A grant that
    /// cannot be looked up (the replicas' shared state away, with
    /// `on_unavailable = "refuse"`) refuses the call.
    pub(super) async fn granted_for_good(
        &self,
        id: &RequestId,
        tool: &str,
        params: Option<&Payload>,
    ) -> Option<Decision> {
        let settings = &self.shared.settings;
        if !settings.remember_always {
            return None;
        }
        let book = book::installed()?;
        // Arguments that cannot be read are asked about, never matched.
        let arguments = match params.map(|p| p.member("arguments")) {
            None | Some(Ok(None)) => json!({}),
            Some(Ok(Some(arguments))) => arguments,
            Some(Err(_)) => return None,
        };
        let hash = crate::pin::fingerprint::digest(&arguments);
        let server = self.server_in(&book);
        match book
            .granted_on(server, tool, &hash, &settings.revision)
            .await
        {
            Ok(true) => {}
            Ok(false) => return None,
            Err(why) => {
                let error = crate::shared::refusal(super::service::LAYER, &why);
                self.record(tool, &arguments, "state_unavailable");
                return Some((
                    "state_unavailable",
                    Some(Message::error(Some(id.clone()), error)),
                ));
            }
        }
        self.record(tool, &arguments, "remembered_always");
        Some(("remembered_always", None))
    }

    /// Keeps a lasting grant for `call` in the book (without one, the
    /// session's grant is all there is).
    async fn grant_for_good(&self, call: &Call) {
        let Some(book) = book::installed() else {
            tracing::warn!("approve: \"Always\" is not kept (there is no state directory to keep it in): this call alone is allowed");
            return;
        };
        let settings = &self.shared.settings;
        book.grant(Grant {
            server: self.server_in(&book).to_owned(),
            tool: call.tool.clone(),
            arguments: (!settings.always_tool)
                .then(|| crate::pin::fingerprint::digest(&call.arguments)),
            revision: settings.revision.clone(),
            granted_at: book::now(),
            caller: self.session.caller.clone(),
        })
        .await;
    }

    /// The server grants and records name: the gateway server this layer
    /// guards, else the book's (the process's server).
    fn server_in<'a>(&'a self, book: &'a book::Book) -> &'a str {
        match &self.session.server {
            Some(server) => &server.identity,
            None => book.server(),
        }
    }

    /// The record of a decision about `tool` with `arguments`.
    pub(super) fn record(&self, tool: &str, arguments: &serde_json::Value, decision: &str) {
        let Some(book) = book::installed() else {
            return;
        };
        let how = match decision {
            d if d.starts_with("page_") => "page",
            "remembered" | "remembered_always" => "remembered",
            "fallback_allowed" | "no_elicitation" | "timeout" => "none",
            _ => "elicitation",
        };
        book.record(
            self.server_in(&book),
            json!({
                "caller": self.session.caller,
                "tool": tool,
                "arguments_sha256": crate::pin::fingerprint::digest(arguments),
                "revision": self.shared.settings.revision,
                "asked": how,
                "decision": decision,
            }),
        );
    }
}

fn timed_out(call: &Call, timeout: Duration) -> Decision {
    refusal(
        &call.id,
        "timeout",
        &format!(
            "the user did not answer within {timeout:?}; the call to {:?} is refused",
            call.tool
        ),
    )
}

/// A question the client was asked and has not answered: dropped so (no
/// answer in time, or the call itself cancelled or given up by a layer
/// outside), it is withdrawn with `notifications/cancelled`, so the user
/// is not left with a dialog that no longer decides anything.
struct Open {
    client: ClientSlot,
    /// `None` once answered.
    id: Option<RequestId>,
}

impl Drop for Open {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let cancel =
            json!({"requestId": id, "reason": "mcp-chain approve: the call is no longer waiting"});
        let withdraw = Message::notification(method::NOTIFICATION_CANCELLED, Some(cancel));
        runtime.spawn(async move {
            let _ = client.send(withdraw).await;
        });
    }
}
