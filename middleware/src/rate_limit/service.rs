//! [`RateLimit`]: checks each request against its rule's bucket.

use super::config::OnLimit;
use super::layer::{Settings, Shared};
use crate::message::method;
use crate::shared::{Fallback, SharedBucket, SharedState};
use crate::units::DisplayDuration;
use crate::{BoxError, Envelope, ErrorCode, ErrorObject, Message, RequestId, ResponseFuture};
use serde_json::Value;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{sleep_until, Instant};
use tower::{Service, ServiceExt};

/// The layer name in refusals, `data.layer` and logs.
pub(super) const LAYER: &str = "rate_limit";

/// Refuses (or, in `wait` mode, holds back) requests over their rule's rate.
#[derive(Debug, Clone)]
pub struct RateLimit<S> {
    inner: S,
    shared: Arc<Shared>,
}

// === impl RateLimit ===

impl<S> RateLimit<S> {
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

impl<S> Service<Envelope> for RateLimit<S>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    /// Only the inner service's readiness: a limit is never enforced here,
    /// because a service that is not ready stalls every message behind it,
    /// and a throttled tool must not hold up a ping.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        let (id, settings, rule) = match &env.message {
            Message::Request(req) => {
                let settings = self.shared.settings_for(req);
                match settings.rule_for(env.direction, req) {
                    Some(rule) => (req.id.clone(), settings, rule),
                    None => return crate::boxed(self.inner.call(env)),
                }
            }
            Message::Notification(n)
                if self.shared.settings.on_limit == OnLimit::Wait
                    && n.method == method::NOTIFICATION_CANCELLED =>
            {
                // A cancellation for a request still held here: release it
                // and keep the notification, since the other side never saw
                // the request it names.
                let target = n.params.as_ref().map(|p| p.member("requestId"));
                if let Some(id) = target.and_then(|t| RequestId::from_value(&t.ok()??)) {
                    if self.shared.cancel_held(env.direction, id) {
                        return Box::pin(std::future::ready(Ok(None)));
                    }
                }
                return crate::boxed(self.inner.call(env));
            }
            _ => return crate::boxed(self.inner.call(env)),
        };
        // The bucket's key is made only where a store keeps it: without
        // `[state]` a limited call formats nothing.
        let store = self
            .shared
            .store
            .clone()
            .or_else(|| crate::shared::installed().cloned());
        let shared = store.and_then(|store| {
            let bucket = self.shared.shared_bucket(&settings, rule)?;
            Some((store, bucket))
        });
        let Some((store, bucket)) = shared else {
            let now = Instant::now();
            return match decide_locally(&settings, rule, now) {
                Ok(wait) if wait.is_zero() => crate::boxed(self.inner.call(env)),
                Ok(wait) => self.hold(env, id, settings, rule, now + wait, None),
                Err(retry_after) => answered(refused(id, &settings, rule, retry_after)),
            };
        };
        // Kept with the other replicas: decided by the store, in this
        // request's own future (nothing waits behind it).
        let max_wait = (settings.on_limit == OnLimit::Wait).then_some(settings.max_wait);
        let taking = store.take(&bucket, max_wait);
        let mut this = self.clone();
        Box::pin(async move {
            let (wait, refund) = match taking.await {
                Ok(Ok(wait)) => (wait, Some((store, bucket))),
                Ok(Err(retry_after)) => return Ok(Some(refused(id, &settings, rule, retry_after))),
                Err(unavailable) if store.fallback() == Fallback::Refuse => {
                    crate::decided!("rate_limit", "refused", reason = "state_unavailable");
                    let error = crate::shared::refusal(LAYER, &unavailable);
                    return Ok(Some(Message::error(Some(id), error)));
                }
                // This process's own buckets meanwhile (the binary says so).
                Err(_) => match decide_locally(&settings, rule, Instant::now()) {
                    Ok(wait) => (wait, None),
                    Err(retry_after) => return Ok(Some(refused(id, &settings, rule, retry_after))),
                },
            };
            if wait.is_zero() {
                return this.inner.ready().await?.call(env).await;
            }
            this.hold(env, id, settings, rule, Instant::now() + wait, refund)
                .await
        })
    }
}

impl<S> RateLimit<S>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    /// Holds `env` until `until` (its token reserved), then forwards it;
    /// a cancellation meanwhile releases it with no answer, and the token
    /// goes back (to the shared bucket it came from, if it did).
    fn hold(
        &self,
        env: Envelope,
        id: RequestId,
        settings: Arc<Settings>,
        rule: usize,
        until: Instant,
        shared: Option<(Arc<dyn SharedState>, SharedBucket)>,
    ) -> ResponseFuture {
        crate::decided!(
            "rate_limit",
            "held",
            rule = crate::decision::int(rule),
            wait_ms = until
                .saturating_duration_since(Instant::now())
                .as_secs_f64()
                * 1000.0
        );
        // Held back on purpose: only this request waits, in its own future;
        // the service stays ready for the messages behind it.
        let hold = self.shared.hold(settings, env.direction, id, rule, shared);
        let mut inner = self.inner.clone();
        Box::pin(async move {
            let cancelled = {
                let mut sleep = pin!(sleep_until(until));
                let mut notified = pin!(hold.cancelled.notified());
                poll_fn(|cx| {
                    if notified.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(true);
                    }
                    sleep.as_mut().poll(cx).map(|()| false)
                })
                .await
            };
            if cancelled {
                // The client gave up on it: no answer, token refunded.
                return Ok(None);
            }
            hold.use_token();
            // The clone is readied here, after the wait, so no slot of the
            // inner service is reserved while the request sleeps.
            inner.ready().await?.call(env).await
        })
    }
}

/// Takes (or in `wait` mode reserves) a token of this process's own
/// bucket: how long to wait for it, or when to try again.
fn decide_locally(settings: &Settings, rule: usize, now: Instant) -> Result<Duration, Duration> {
    let limit = &settings.rules[rule];
    match settings.on_limit {
        OnLimit::Reject => limit.take(now).map(|()| Duration::ZERO),
        OnLimit::Wait => limit.reserve(now, settings.max_wait),
    }
}

/// The refusal of a request over its rule's limit.
fn refused(id: RequestId, settings: &Settings, rule: usize, retry_after: Duration) -> Message {
    let why = match settings.on_limit {
        OnLimit::Reject => String::new(),
        OnLimit::Wait => format!(
            ", and the wait would pass max_wait {}",
            DisplayDuration(settings.max_wait)
        ),
    };
    let retry_after_ms = retry_after.as_secs_f64() * 1000.0;
    crate::decided!(
        "rate_limit",
        "refused",
        rule = crate::decision::int(rule),
        retry_after_ms
    );
    let error = refusal(&settings.rules[rule].to_string(), rule, retry_after, &why);
    Message::error(Some(id), error)
}

fn answered(message: Message) -> ResponseFuture {
    Box::pin(std::future::ready(Ok(Some(message))))
}

/// The 429 answer: says which rule, and when to try again.
fn refusal(rule: &str, index: usize, retry_after: Duration, why: &str) -> ErrorObject {
    // Rounded up, so a client that waits exactly this long finds a token.
    let retry_ms = u64::try_from(retry_after.as_micros().div_ceil(1000)).unwrap_or(u64::MAX);
    let mut error = ErrorObject::refusal(
        ErrorCode::RATE_LIMITED,
        LAYER,
        "rate_limited",
        &format!("rate limit exceeded for {rule}{why}; retry in {retry_ms}ms"),
    );
    if let Some(Value::Object(data)) = &mut error.data {
        data.insert("retryAfterMs".into(), retry_ms.into());
        data.insert("rule".into(), index.into());
    }
    error
}
