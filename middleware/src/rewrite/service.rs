//! [`Rewrite`]: edits each request in `call`, before forwarding it, and the
//! answer on its way back.

use super::layer::Rules;
use super::redact::tally;
use crate::{BoxError, Direction, Envelope, Message, ResponseFuture};
use std::future::ready;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::Service;

/// Renames, re-describes, sets arguments and redacts. See the
/// [module docs](super) for what it does to each message.
#[derive(Debug, Clone)]
pub struct Rewrite<S> {
    inner: S,
    rules: Arc<Rules>,
}

// === impl Rewrite ===

impl<S> Rewrite<S> {
    pub(super) fn new(inner: S, rules: Arc<Rules>) -> Self {
        Self { inner, rules }
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

impl<S> Service<Envelope> for Rewrite<S>
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
        // Edited and forwarded here, before the future is returned, so
        // messages leave in the order they arrived (docs/architecture.md, invariant 1).
        let post = match (env.direction, &mut env.message) {
            (Direction::ToServer, Message::Request(req)) => {
                let (post, redacted) = tally::counted(|| self.rules.request(req));
                noted_redactions(redacted, "arguments");
                match post {
                    Ok(post) => post,
                    Err(answer) => return Box::pin(ready(Ok(Some(*answer)))),
                }
            }
            (Direction::ToClient, msg) => {
                let (keep, redacted) = tally::counted(|| self.rules.server_message(msg));
                noted_redactions(redacted, "notification");
                if !keep {
                    return Box::pin(ready(Ok(None)));
                }
                Default::default()
            }
            _ => Default::default(),
        };
        let answer = self.inner.call(env);
        if post.is_nothing() {
            return crate::boxed(answer);
        }
        let rules = self.rules.clone();
        Box::pin(async move {
            let mut answer = answer.await?;
            if let Some(msg) = &mut answer {
                let ((), redacted) = tally::counted(|| rules.answer(post, msg));
                noted_redactions(redacted, "answer");
            }
            Ok(answer)
        })
    }
}

/// The decision event of the redactions an edit made, if it made any.
fn noted_redactions(count: usize, what: &'static str) {
    if count > 0 {
        crate::decided!(
            "rewrite",
            "redacted",
            count = crate::decision::int(count),
            what
        );
    }
}
