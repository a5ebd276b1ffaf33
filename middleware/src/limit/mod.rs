//! `limit`: results that fit. A client (and the model behind it) is not
//! handed a result bigger than it was meant to take: past `max_result_bytes`
//! a result is refused with an error naming its size and the limit, or,
//! with `action = "truncate"`, its text is shortened so it fits.
//!
//! ```toml
//! [[middleware]]
//! type = "limit"
//! max_result_bytes = "256KiB"                # every result not named below
//! tools = { "read_*" = "1MiB", "export" = "none" }
//! methods = { "resources/read" = "512KiB" }  # by method; after `tools`
//! action = "truncate"                        # or "refuse" (the default)
//! max_list_items = 200                       # tools, prompts, resources, templates
//! ```
//!
//! Which limit applies: for `tools/call`, the first `tools` pattern that
//! matches the tool name (in the order written); otherwise the first
//! `methods` pattern that matches the method; otherwise, for the results
//! that carry content (`tools/call`, `resources/read`, `prompts/get`,
//! `tasks/get`, `tasks/result`), `max_result_bytes`. The handshake and
//! listings are held only to what `methods` names for them (and listings to
//! `max_list_items`).
//! `"none"` means no limit. A size is a number of bytes or a string with a
//! unit (`"512KiB"`, `"1MiB"`, `"2MB"`). The size of a result is that of its
//! JSON as it would be written, `result` alone.
//!
//! Truncating keeps the result valid JSON and valid MCP: only text is cut —
//! the `text` of `tools/call` content items and of `resources/read`
//! contents — at a UTF-8 boundary, the longest first, with a notice
//! appended to what was cut. What cannot be cut without changing its
//! meaning is refused instead: a tool result with `structuredContent` (the
//! client would check a cut object against its schema), a result that is
//! still over the limit once its text is gone (images, blobs), and results
//! of other methods.
//!
//! `max_list_items` keeps the first N items of a `tools/list`,
//! `prompts/list`, `resources/list` or `resources/templates/list` result
//! (`nextCursor` is left as the server gave it). A listing that cannot be
//! read is refused, never passed whole.
//!
//! Only the answers to the client's requests are limited: what the client
//! sends the server (sampling answers, elicitation) is the client's own.

mod config;
mod cut;
mod service;

pub use config::{BadSize, LimitConfig, Size};
pub use service::{Limit, LimitLayer};

#[cfg(test)]
mod tests;
