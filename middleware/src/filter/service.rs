//! [`Filter`]: judges each message in `call`, answers or drops what is
//! denied, and prunes hidden items from list results on the way back.

use super::inputs::{judge_result, prune_inputs};
use super::policy::{denial, unreadable_request, unreadable_result, Listing, Policy};
use crate::embedded::{mark_private, may_ask_for_input};
use crate::message::method;
use crate::message::Response;
use crate::target::{Kind, Target};
use crate::{BoxError, Direction, Envelope, Message, ResponseFuture};
use std::future::ready;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::Service;

/// Hides the tools, resources, templates, prompts and methods its policy
/// denies. See the [module docs](super) for what that means per message.
#[derive(Debug, Clone)]
pub struct Filter<S> {
    inner: S,
    policy: Arc<Policy>,
}

/// What `call` decided for one message.
#[derive(Debug)]
enum Verdict {
    /// Not this filter's business: forward untouched.
    Pass,
    /// Forward, then judge the answer: remove hidden items from a list
    /// result (`Some`), and denied requests embedded in it (`true`).
    After(Option<Listing>, bool),
    /// Answer the request here; the inner service never sees it.
    Answer(Box<Message>),
    /// A denied notification: it goes nowhere and gets no answer.
    Drop,
}

// === impl Filter ===

impl<S> Filter<S> {
    pub(super) fn new(inner: S, policy: Arc<Policy>) -> Self {
        Self { inner, policy }
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

    fn judge(&self, direction: Direction, msg: &Message) -> Verdict {
        let policy = &self.policy;
        match msg {
            Message::Request(req) => {
                if !policy.allows_method(&req.method) {
                    let rule = policy.refusing_rule(&req.method, None);
                    crate::decided!("filter", "denied", rule);
                    return Verdict::Answer(Box::new(denial(req.id.clone(), &req.method, None)));
                }
                if direction == Direction::ToClient {
                    // Server→client requests name no tool or prompt; only
                    // the method list applies to them.
                    return Verdict::Pass;
                }
                match Target::of(&req.method, req.params.as_ref()) {
                    Ok(Some(target)) if !policy.allows(&target) => {
                        let rule = policy.refusing_rule(&req.method, Some(&target));
                        crate::decided!("filter", "denied", rule);
                        let denial = denial(req.id.clone(), &req.method, Some(&target));
                        return Verdict::Answer(Box::new(denial));
                    }
                    Err(e) if Kind::of(&req.method).is_some_and(|k| policy.judges(k)) => {
                        crate::decided!("filter", "denied", rule = "unreadable target");
                        let refusal = unreadable_request(req.id.clone(), &req.method, &e);
                        return Verdict::Answer(Box::new(refusal));
                    }
                    _ => {}
                }
                let listing = Listing::of(&req.method).filter(|l| policy.prunes(*l));
                let inputs = policy.judges_methods() && may_ask_for_input(&req.method);
                if listing.is_some() || inputs {
                    Verdict::After(listing, inputs)
                } else {
                    Verdict::Pass
                }
            }
            Message::Notification(note) => {
                if !policy.allows_method(&note.method) {
                    return Verdict::Drop;
                }
                // `notifications/resources/updated` for a hidden resource
                // would reveal that it exists.
                match Target::of(&note.method, note.params.as_ref()) {
                    Ok(Some(target)) if !policy.allows(&target) => Verdict::Drop,
                    Err(_) if Kind::of(&note.method).is_some_and(|k| policy.judges(k)) => {
                        Verdict::Drop
                    }
                    _ => Verdict::Pass,
                }
            }
            Message::Response(_) | Message::Error(_) => Verdict::Pass,
        }
    }
}

impl<S> Service<Envelope> for Filter<S>
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

    fn call(&mut self, mut env: Envelope) -> ResponseFuture {
        // Judged and forwarded here, before the future is returned, so
        // messages leave in the order they arrived (docs/architecture.md, invariant 1).
        let mut verdict = self.judge(env.direction, &env.message);
        if let (Verdict::Pass, Message::Notification(note)) = (&verdict, &mut env.message) {
            // A task notification may carry requests for the client.
            let tasks = note.method == method::NOTIFICATION_TASKS && self.policy.judges_methods();
            if let (Some(params), true) = (note.params.as_mut(), tasks) {
                if let Err(e) = prune_inputs(&self.policy, params) {
                    tracing::warn!(layer = "filter", error = %e, "dropped a notification whose input requests it cannot read");
                    verdict = Verdict::Drop;
                }
            }
        }
        match verdict {
            Verdict::Pass => crate::boxed(self.inner.call(env)),
            Verdict::After(listing, inputs) => {
                let policy = self.policy.clone();
                let answer = self.inner.call(env);
                Box::pin(async move {
                    let mut answer = answer.await?;
                    if let Some(Message::Response(resp)) = &mut answer {
                        if let Some(instead) = judge_answer(&policy, listing, inputs, resp) {
                            answer = Some(instead);
                        }
                    }
                    Ok(answer)
                })
            }
            Verdict::Answer(msg) => {
                tracing::debug!(layer = "filter", direction = %env.direction,
                    method = env.message.method().unwrap_or(""), "denied request");
                Box::pin(ready(Ok(Some(*msg))))
            }
            Verdict::Drop => {
                crate::decided!("filter", "dropped");
                tracing::debug!(layer = "filter", direction = %env.direction,
                    method = env.message.method().unwrap_or(""), "dropped notification");
                Box::pin(ready(Ok(None)))
            }
        }
    }
}

/// Judges an answer on its way to the client: hidden list items removed
/// (and the list marked private to its caller), denied embedded requests
/// removed. The answer to send instead when it must not reach the client.
fn judge_answer(
    policy: &Policy,
    listing: Option<Listing>,
    inputs: bool,
    resp: &mut Response,
) -> Option<Message> {
    if let Some(listing) = listing {
        match policy.prune(listing, &mut resp.result) {
            Ok(false) => {}
            Ok(true) => {
                if let Err(e) = mark_private(&mut resp.result) {
                    return Some(unreadable_result(resp.id.clone(), &e));
                }
            }
            Err(e) => {
                tracing::warn!(layer = "filter", error = %e, "refused a list result it cannot read");
                return Some(unreadable_result(resp.id.clone(), &e));
            }
        }
    }
    if inputs {
        return judge_result(policy, &resp.id, &mut resp.result);
    }
    None
}
