//! `rewrite`: rename or prefix tools and prompts (and map calls back),
//! replace descriptions, set or default arguments, and redact secrets.
//!
//! Why: a server's names and descriptions are the server author's; a team
//! may need `fs_read` instead of `read_file` next to another server's tools,
//! a description that says what the tool may be used for, an argument pinned
//! (`encoding = "utf-8"`), and no access key in what comes back.
//!
//! ```toml
//! [[middleware]]
//! type = "rewrite"
//! tool_prefix = "fs_"                  # every tool not renamed below
//! prompt_prefix = ""                   # the same for prompts
//! redact_arguments = false             # also redact tools/call and prompts/get arguments
//! [middleware.tools.read_file]         # keyed by the upstream name
//! name = "read"                        # the client sees "read" (no prefix)
//! description = "Read a file from the team share"
//! arguments = { encoding = "utf-8" }   # always set (override)
//! defaults  = { limit = 10 }           # set only when absent
//! [middleware.prompts.summarize]
//! name = "team_summary"
//! [[middleware.redact]]
//! pattern = "AKIA[0-9A-Z]{16}"         # a regex, unanchored
//! replacement = "[REDACTED]"           # the default; $1 / ${name} refer to groups
//! [[middleware.redact]]
//! pattern = "@github_token"            # a built-in pattern
//! ```
//!
//! Client → server: `tools/call` and `prompts/get` have the client's name
//! mapped back to the upstream one, then overrides and defaults set (and
//! strings redacted with `redact_arguments`); `completion/complete` for a
//! prompt is mapped back too. A name this layer never shows (an upstream name
//! that is renamed, or one without the prefix) is answered with -32602
//! `Unknown tool: NAME` / `Unknown prompt: NAME`, `data.layer = "rewrite"`,
//! `data.reason = "unknown_name"`, like a server's answer for a missing tool.
//!
//! Server → client: `tools/list`, `prompts/list` and `server/discover` show
//! the client's names and the configured descriptions; an overridden argument
//! is removed from the tool's `inputSchema` (or the prompt's `arguments`) and
//! a defaulted one is no longer required. An upstream item whose name a
//! rename has taken is left out (calls by that name reach the renamed item).
//! Redaction covers every `text` string and every `structuredContent` string
//! in `tools/call`, `tasks/result`, `resources/read` and `prompts/get`
//! results, the message of every error answer, and the `data` of
//! `notifications/message` log lines.
//!
//! At load time, every name the config produces must be 1 to 64 characters
//! of `A-Z a-z 0-9 _ - .`, two tools (or prompts) may not end up with one
//! name, and every regex must compile and not match the empty string.
//!
//! ```
//! use mcp_chain_middleware::rewrite::{ItemConfig, RewriteConfig};
//! use mcp_chain_middleware::{BoxError, Direction, Envelope, Message};
//! use serde_json::json;
//! use tower::{Layer, ServiceExt};
//!
//! let mut config = RewriteConfig { tool_prefix: "fs_".into(), ..Default::default() };
//! config.tools.insert("read_file".into(), ItemConfig { name: Some("read".into()), ..Default::default() });
//! let layer = config.validate().expect("valid names");
//! let server = tower::service_fn(|env: Envelope| async move {
//!     // The server sees its own name.
//!     assert_eq!(env.message.to_value()["params"]["name"], "read_file");
//!     let id = env.message.id().cloned().expect("a request");
//!     Ok::<_, BoxError>(Some(Message::response(id, json!({"content": []}))))
//! });
//! let call = Message::request(1, "tools/call", Some(json!({"name": "read"})));
//! let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
//! let answer = rt
//!     .block_on(layer.layer(server).oneshot(Envelope::new(Direction::ToServer, call)))
//!     .expect("answered");
//! assert!(matches!(answer, Some(Message::Response(_))));
//! ```

mod config;
mod edit;
mod layer;
mod names;
mod presets;
mod redact;
mod service;

pub use config::{ItemConfig, RedactConfig, RewriteConfig};
pub use layer::RewriteLayer;
pub use service::Rewrite;

#[cfg(test)]
mod tests;
