//! `filter`: allow/deny lists for tools, resources, resource templates,
//! prompts and methods. What it denies looks missing, everywhere.
//!
//! Why: a third-party server exposes what it exposes; policy decides what a
//! client may see and use. A hidden tool must not show up in any list, must
//! not be callable by name, and must not be told apart from a tool that does
//! not exist, or the filter leaks what it hides.
//!
//! ```toml
//! [[middleware]]
//! type = "filter"
//! tools              = { allow = ["read_*", "list_*"], deny = ["*secret*"] }
//! resources          = { deny = ["file:///etc/**"] }      # by URI
//! resource_templates = { deny = ["re:db://.*"] }          # by uriTemplate
//! prompts            = { allow = ["*"] }
//! methods            = { deny = ["sampling/createMessage"] }   # either direction
//! ```
//!
//! Patterns are globs (`*`, `?`, `[..]`) or, after `re:`, anchored regexes;
//! for URIs `*` stops at `/` and `**` crosses it ([`crate::pattern`]). Deny
//! wins over allow; an `allow` list means everything else of its kind is
//! denied. A resource template must pass both `resources` and
//! `resource_templates` (its `uriTemplate` is matched as written). URIs,
//! the requested ones and the patterns alike, are compared in the normal
//! form of [`crate::pattern::uri`], so every spelling the server reads as
//! the same resource is judged alike; a URI with no normal form is refused
//! wherever resources are judged. Names are compared byte for byte.
//!
//! Client → server:
//!
//! - `tools/list`, `resources/list`, `resources/templates/list`,
//!   `prompts/list` and `server/discover` results lose their hidden items;
//!   each page is pruned on its own and keeps its `nextCursor`.
//! - `tools/call` of a hidden tool → -32602 `Unknown tool: NAME`;
//!   `prompts/get` → -32602 `Unknown prompt: NAME`; `resources/read`,
//!   `resources/subscribe`, `resources/unsubscribe` of a hidden URI → -32002
//!   `Resource not found: URI`; `completion/complete` for a hidden prompt or
//!   template → -32602. The server never sees these requests.
//! - a denied method → -32601 `Method not found: METHOD`; a denied
//!   notification is dropped.
//!
//! Server → client:
//!
//! - a denied request (say `sampling/createMessage`) is answered to the
//!   server with -32601 and never reaches the client;
//! - a denied notification, or `notifications/resources/updated` for a
//!   hidden URI, is dropped.
//!
//! Every denial's `data` carries `layer = "filter"` and `reason = "denied"`
//! for programs and the audit log; code and message are those of a missing
//! item.
//!
//! ```
//! use mcp_chain_middleware::filter::FilterConfig;
//! use mcp_chain_middleware::pattern::AllowDenyConfig;
//! use mcp_chain_middleware::{BoxError, Direction, Envelope, Message};
//! use serde_json::json;
//! use tower::{Layer, ServiceExt};
//!
//! let config = FilterConfig {
//!     tools: AllowDenyConfig { allow: None, deny: vec!["*secret*".into()] },
//!     ..FilterConfig::default()
//! };
//! let layer = config.validate().expect("valid patterns");
//! let server = tower::service_fn(|env: Envelope| async move {
//!     let id = env.message.id().cloned().expect("a request");
//!     Ok::<_, BoxError>(Some(Message::response(id, json!({"content": []}))))
//! });
//! let call = Message::request(1, "tools/call", Some(json!({"name": "get_secret"})));
//! let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
//! let answer = rt
//!     .block_on(layer.layer(server).oneshot(Envelope::new(Direction::ToServer, call)))
//!     .expect("answered");
//! let Some(Message::Error(e)) = answer else { panic!("denied") };
//! assert_eq!(e.error.code.0, -32602);
//! assert_eq!(e.error.message, "Unknown tool: get_secret");
//! ```

mod config;
mod inputs;
mod layer;
mod policy;
mod service;

pub use config::FilterConfig;
pub use layer::FilterLayer;
pub use service::Filter;

#[cfg(test)]
mod tests;
