//! [`Timeout`]: races each client request against its deadline.

use super::layer::Shared;
use crate::message::method;
use crate::payload::Payload;
use crate::units::DisplayDuration;
use crate::ResponseFuture;
use crate::{BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message, RequestId};
use serde_json::{json, Value};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};
use tower::{Service, ServiceExt};

/// The layer name in refusals, `data.layer` and logs.
pub(super) const LAYER: &str = "timeout";

/// Answers a request the server did not answer in time with -32001, tells
/// the server `notifications/cancelled`, and drops the late response.
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    shared: Arc<Shared>,
}

// === impl Timeout ===

impl<S> Timeout<S> {
    pub(super) fn new(inner: S, shared: Arc<Shared>) -> Self {
        Self { inner, shared }
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

impl<S> Service<Envelope> for Timeout<S>
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
        let rules = &self.shared.rules;
        let (limit, id, token) = match (&env.direction, &env.message) {
            // Deadlines are for the client's requests; the server's requests
            // (sampling, elicitation) wait on a human and pass untimed.
            (Direction::ToServer, Message::Request(req)) => match rules.deadline_for(req) {
                Some(limit) => (limit, req.id.clone(), progress_token(req.params.as_ref())),
                None => return crate::boxed(self.inner.call(env)),
            },
            (Direction::ToClient, Message::Notification(n))
                if rules.reset_on_progress && n.method == method::NOTIFICATION_PROGRESS =>
            {
                if let Some(token) = progress_token_of_notification(n.params.as_ref()) {
                    self.shared.progressed(&token);
                }
                return crate::boxed(self.inner.call(env));
            }
            _ => return crate::boxed(self.inner.call(env)),
        };
        let direction = env.direction;
        // Registered before the request is forwarded, so no progress for it
        // can come back unseen.
        let watch = token
            .filter(|_| rules.reset_on_progress)
            .map(|t| self.shared.watch(t));
        let max_total = rules.max_total;
        // `self.inner` was readied by poll_ready and is the one called; the
        // clone is readied before it sends the cancellation.
        let canceller = self.inner.clone();
        let answer = self.inner.call(env);
        Box::pin(async move {
            let start = Instant::now();
            let hard_stop = max_total.map(|m| start + m);
            let deadline = |from: Instant| {
                let soft = from + limit;
                hard_stop.map_or(soft, |h| soft.min(h))
            };
            {
                let mut answer = pin!(answer);
                let mut sleep = pin!(sleep_until(deadline(start)));
                let notify = watch.as_ref().map(|w| w.notify.clone());
                let mut progress = pin!(next_progress(notify.as_deref()));
                let answered = poll_fn(|cx| {
                    if let Poll::Ready(result) = answer.as_mut().poll(cx) {
                        return Poll::Ready(Some(result));
                    }
                    if progress.as_mut().poll(cx).is_ready() {
                        // Progress: start the deadline over, and poll again
                        // so the next progress wait registers its waker.
                        progress.set(next_progress(notify.as_deref()));
                        sleep.as_mut().reset(deadline(Instant::now()));
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    sleep.as_mut().poll(cx).map(|()| None)
                })
                .await;
                if let Some(result) = answered {
                    return result;
                }
                // The answer's future is dropped here: a late response has
                // no one left to go to.
            }
            drop(watch);
            let hit_cap = hard_stop.is_some_and(|h| Instant::now() >= h);
            let waited = match max_total {
                Some(total) if hit_cap => total,
                _ => limit,
            };
            crate::decided!(
                "timeout",
                "fired",
                waited_ms = waited.as_secs_f64() * 1000.0,
                cap = hit_cap
            );
            cancel(canceller, direction, &id, waited).await;
            Ok(Some(Message::error(Some(id), expired(waited))))
        })
    }
}

/// Tells the server to stop working on `id`. A failure here is only logged:
/// the client's answer does not depend on it.
async fn cancel<S>(mut inner: S, direction: Direction, id: &RequestId, waited: Duration)
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
{
    let params = json!({
        "requestId": id.to_value(),
        "reason": format!("mcp-chain {LAYER}: no response within {}", DisplayDuration(waited)),
    });
    let note = Envelope::new(
        direction,
        Message::notification(method::NOTIFICATION_CANCELLED, Some(params)),
    );
    let sent = match inner.ready().await {
        Ok(ready) => ready.call(note).await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        tracing::debug!(%id, error = %e, "timeout: could not send notifications/cancelled");
    }
}

/// The -32001 answer the client gets.
fn expired(waited: Duration) -> ErrorObject {
    let mut error = ErrorObject::refusal(
        ErrorCode::REQUEST_TIMEOUT,
        LAYER,
        "timed_out",
        &format!(
            "request timed out: the server did not answer within {}",
            DisplayDuration(waited)
        ),
    );
    if let Some(Value::Object(data)) = &mut error.data {
        let ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
        data.insert("timeoutMs".into(), ms.into());
    }
    error
}

/// Resolves on the next progress notification for the request, or never
/// when the request is not watching progress. One function so that each new
/// wait has the same type as the one it replaces.
async fn next_progress(notify: Option<&Notify>) {
    match notify {
        Some(n) => n.notified().await,
        None => std::future::pending().await,
    }
}

/// `params._meta.progressToken` of a request. Only `_meta` is read: the
/// arguments (a file's contents, say) stay unparsed.
fn progress_token(params: Option<&Payload>) -> Option<RequestId> {
    RequestId::from_value(params?.member("_meta").ok()??.get("progressToken")?)
}

/// `params.progressToken` of a `notifications/progress`.
fn progress_token_of_notification(params: Option<&Payload>) -> Option<RequestId> {
    RequestId::from_value(&params?.member("progressToken").ok()??)
}
