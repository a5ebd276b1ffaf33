//! `timeout`: a deadline on each client request. When the server has not
//! answered in time, the client gets error -32001 (the MCP SDKs' "request
//! timed out"), the server gets `notifications/cancelled` for the request so
//! it can stop working, and a response that arrives later is dropped: the
//! client has had its one answer.
//!
//! ```toml
//! [[middleware]]
//! type = "timeout"
//! default = "60s"                           # every request not named below
//! tools = { "slow_*" = "300s", "ping_*" = "5s", "long_job" = "none" }
//! methods = { "resources/read" = "10s" }    # by method; after `tools`
//! reset_on_progress = true                  # progress starts the deadline over
//! max_total = "30m"                         # ... but never past this
//! ```
//!
//! Which deadline applies: for `tools/call`, the first `tools` pattern that
//! matches the tool name (in the order written); otherwise the first
//! `methods` pattern that matches the method; otherwise `default`. `"none"`
//! means no deadline. Patterns are globs or `re:` regexes ([`crate::pattern`]).
//!
//! Only the client's requests are timed. Requests from the server (sampling,
//! elicitation, roots) usually wait on a person and are passed untimed.
//!
//! # Both directions
//!
//! The layer sits on the server-to-client path too, with the same state, so
//! with `reset_on_progress = true` a `notifications/progress` whose
//! `progressToken` is the `params._meta.progressToken` of a request in
//! flight starts that request's deadline over (the MCP specification allows
//! this and asks for a hard cap, which is `max_total`). The notification
//! itself passes on unchanged.
//!
//! # Ordering
//!
//! The request is forwarded in `call`; only the wait is in the returned
//! future, so a timed request never holds up the messages behind it. The
//! cancellation is sent through a clone of the inner service, readied first,
//! so it travels the same layers a client's own cancellation would, and
//! carries the request's id as this layer sees it (the upstream connector
//! translates it to the id the server knows).
//!
//! ```
//! use mcp_chain_middleware::timeout::TimeoutConfig;
//! use mcp_chain_middleware::{BoxError, Direction, Envelope, Message};
//! use tower::{Layer, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let config = TimeoutConfig { default: Some("2s".into()), ..Default::default() };
//! let layer = config.validate().expect("valid");
//! let server = tower::service_fn(|env: Envelope| async move {
//!     if env.message.method() == Some("tools/call") {
//!         std::future::pending::<()>().await; // never answers
//!     }
//!     Ok::<_, BoxError>(None)
//! });
//! let call = Message::request(7, "tools/call", Some(serde_json::json!({"name": "stuck"})));
//! let answer = layer.layer(server).oneshot(Envelope::new(Direction::ToServer, call)).await;
//! let Ok(Some(Message::Error(e))) = answer else { panic!("expected an error") };
//! assert_eq!(e.error.code.0, -32001);
//! # }
//! ```

mod config;
mod layer;
mod service;

pub use config::TimeoutConfig;
pub use layer::TimeoutLayer;
pub use service::Timeout;

#[cfg(test)]
mod tests;
