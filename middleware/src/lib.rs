//! mcp-chain's middleware: the JSON-RPC message model and the layers a chain
//! is built from. Pure logic: no process, pipe or stdio lives here, so every
//! layer is testable with a `tower::service_fn` inner service.
//!
//! # The service shape
//!
//! Every layer is a `tower::Layer` whose service is
//! `Service<Envelope, Response = Option<Message>, Error = BoxError>`:
//!
//! - a request goes in and its response (or an error answer) comes out as
//!   `Some`; a notification gives `None`; a request the peer cancelled also
//!   gives `None`, because a cancelled request gets no answer;
//! - the chain is built twice from the same layer values: once for messages
//!   from the client (`Direction::ToServer`, first layer outermost) and once
//!   for messages from the server (`Direction::ToClient`, last layer
//!   outermost), so a layer sits at the same place on the path whichever
//!   side speaks. State a layer keeps is shared by both.
//! - request-side work is done in `call`, before the future is returned, so
//!   the order messages are written in is the order they were read in.
//!
//! # Layout
//!
//! - [`message`]: `Message` (request, notification, response, error), ids,
//!   error codes, method names.
//! - [`payload`]: `params` and `result`, kept as the sender's text until
//!   a layer reads them; list edits item by item.
//! - [`envelope`]: `Envelope`, `Direction`, the delivery signal.
//! - [`log`]: a pass-through layer that traces every message.
//! - [`pattern`]: globs and `re:` regexes, allow/deny lists.
//! - [`target`]: the tool, resource or prompt a request is about.
//! - [`embedded`]: what a 2026-07-28 result carries inside it: server
//!   requests (`inputRequests`), task results, cache hints.
//! - [`filter`]: allow/deny lists; what is denied looks missing.
//! - [`rewrite`]: renames, descriptions, arguments, redaction.
//! - [`audit`]: one JSON line per message and outcome, written before the
//!   request is forwarded.
//! - [`rate_limit`]: token buckets per tool, method or overall; refuse
//!   (429) or hold a request back, never stalling other traffic.
//! - [`timeout`]: a deadline per request; -32001 to the client, a
//!   cancellation to the server.
//! - [`validate`]: a tool's arguments checked against its inputSchema
//!   before the server sees them.
//! - [`limit`]: results that fit: refused or cut past a size, listings
//!   trimmed to a number of items.
//! - [`approve`]: a person asked (through the client's elicitation) before
//!   a gated call goes on.
//! - [`pin`]: tool definitions pinned by hash; a drifted tool is hidden
//!   until a person accepts it.
//! - [`peer`]: the way from a layer back to the client, for the layers
//!   that speak first (`approve` asks, `pin` says the list changed).
//! - `json`: the ground floor of the message model: JSON text read as
//!   serde_json reads it, with the checks it skips for a value it passes
//!   over.
//! - `listing`: a listing a layer asks the server for itself, every page
//!   (`validate` needs a schema, `pin` a fingerprint).
//! - [`decision`]: what a layer decided, as an event telemetry turns
//!   into a span event and a count.
//! - [`note`]: what a layer decided, left for the audit line of the
//!   request it answered.
//! - [`servers`]: which server of a gateway a name the client sees is for.
//! - [`session`]: who a session of the HTTP front serves (the audit says).
//! - [`shown`]: untrusted text escaped and cut where a person reads it.
//! - [`switch`]: the console's off switch, outermost in every chain.
//! - [`counts`]: lines parsed and written, for tests of the one-parse rule.
//! - [`config_error`]: a layer config problem and the key it is about.
//! - [`units`]: durations (`"2s"`) and rates (`"5/s"`) as written in configs.

#![forbid(unsafe_code)]

pub mod approve;
pub mod audit;
pub mod config_error;
pub mod counts;
pub mod decision;
pub mod embedded;
pub mod envelope;
pub mod filter;
mod json;
pub mod limit;
pub(crate) mod listing;
pub mod log;
pub mod message;
pub mod note;
pub mod pattern;
pub mod payload;
pub mod peer;
pub mod pin;
pub mod rate_limit;
pub mod rewrite;
pub mod scan;
pub mod search;
pub mod servers;
pub mod session;
pub mod shared;
pub mod shown;
pub mod switch;
pub mod target;
#[cfg(test)]
mod testing;
pub mod timeout;
pub mod units;
pub mod validate;

pub use envelope::{Delivered, DeliveryTicket, Direction, Envelope};
pub use message::{ErrorCode, ErrorObject, Message, RequestId};

use std::future::Future;
use std::pin::Pin;

/// A layer's lock, poisoned or not: every critical section in the layers
/// leaves its data whole (an update, an insert, a remove), so a panic
/// elsewhere while it was held does not make it unsafe to read.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A failure (not a protocol answer): upstream gone, pipe broken.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The future every layer's service returns.
pub type ResponseFuture = Pin<Box<dyn Future<Output = Result<Option<Message>, BoxError>> + Send>>;

/// `future` as a [`ResponseFuture`]: boxed, unless it is one already. A
/// layer with nothing to do once the answer comes hands on its inner
/// service's future, which in a chain is a `ResponseFuture` (every layer's
/// and both connectors' are); a second box around it would cost an
/// allocation and an indirect poll per layer per request.
pub(crate) fn boxed<F>(future: F) -> ResponseFuture
where
    F: Future<Output = Result<Option<Message>, BoxError>> + Send + 'static,
{
    let mut future = Some(future);
    let any: &mut dyn std::any::Any = &mut future;
    match any.downcast_mut::<Option<ResponseFuture>>() {
        Some(boxed) => boxed.take(),
        None => future.take().map(|f| Box::pin(f) as ResponseFuture),
    }
    .expect("taken once")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a boxed future lives.
    fn address(future: &ResponseFuture) -> *const u8 {
        let future: &(dyn Future<Output = Result<Option<Message>, BoxError>> + Send) = &**future;
        std::ptr::from_ref(future).cast()
    }

    #[tokio::test]
    async fn a_response_future_is_passed_on_in_its_own_box() {
        let inner: ResponseFuture = Box::pin(async { Ok(None) });
        let at = address(&inner);
        let passed = boxed(inner);
        assert_eq!(address(&passed), at, "the same box, not a new one");
        assert!(matches!(passed.await, Ok(None)));
        // Any other future is boxed.
        let other = boxed(async { Ok(Some(Message::notification("x", None))) });
        assert!(matches!(other.await, Ok(Some(Message::Notification(_)))));
    }
}
