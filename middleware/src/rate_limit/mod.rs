//! `rate_limit`: token buckets that cap how often requests may be made, per
//! tool, per method or overall, so a runaway agent cannot hammer a server
//! (or a paid API behind it).
//!
//! ```toml
//! [[middleware]]
//! type = "rate_limit"
//! on_limit = "reject"             # or "wait" (bounded by max_wait)
//! max_wait = "2s"                 # wait mode only; default 1s
//! rules = [
//!   { tool = "search*", rate = "5/s", burst = 5 },     # tools/call by tool name
//!   { method = "resources/*", rate = "100/min" },       # by method
//!   { method = "sampling/createMessage", rate = "10/min", direction = "server_to_client" },
//!   { rate = "200/s" },                                 # everything else
//! ]
//! ```
//!
//! Each rule has its own bucket holding up to `burst` tokens (default: the
//! rate's count), refilled continuously at `rate`. A request takes a token
//! from the bucket of the *first* rule that matches it, and only that one;
//! a request no rule matches is not limited. Rules apply to the client's
//! requests unless `direction` says `server_to_client` or `both`.
//! Notifications and responses are never limited: they cannot be refused.
//!
//! # Over the limit
//!
//! - `reject` (default): the request is answered at once with error 429,
//!   `data.retryAfterMs` (when the bucket will have a token) and
//!   `data.layer = "rate_limit"`, and never reaches the other side.
//! - `wait`: the request is held until its token is there, then forwarded.
//!   Tokens are reserved in arrival order, so the wait is known up front: a
//!   request that would wait longer than `max_wait` is refused with 429 at
//!   once rather than after a pointless wait. A cancellation from the client
//!   for a held request releases it (the server never hears of either) and
//!   gives its token back.
//!
//! # Why not `poll_ready`
//!
//! tower's `RateLimit` delays through readiness, which would stall the whole
//! read loop behind one throttled tool (STYLE.md, Async). Here readiness is
//! only the inner service's; a refusal is answered in `call`, and a held
//! request waits in its own future while every other message flows past it.
//! Holding is the one place a message is deliberately reordered.

mod bucket;
mod config;
mod layer;
mod service;

pub use config::{OnLimit, RateLimitConfig, RuleConfig, RuleDirection, DEFAULT_MAX_WAIT};
pub use layer::RateLimitLayer;
pub use service::RateLimit;

#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;
