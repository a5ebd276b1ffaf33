//! `search`: a short list for a thousand tools. A model pays for every tool
//! it is shown and chooses worse among many; with this layer the client's
//! `tools/list` holds the tools named in `always` and two of the layer's
//! own: `search_tools` (a query, optionally a server) and `call_tool` (a
//! tool's name and its arguments). The rest is found by searching.
//!
//! ```toml
//! [[middleware]]
//! type = "search"
//! always = ["files__read_file", "time__*"]   # globs or re:, whole names, as in filter
//! max_results = 8
//! describe = true   # results carry each tool's inputSchema (false: describe_tool gives it)
//! ```
//!
//! - The index is the server's tools as the layers *after* this one show
//!   them (it lists through them): what a filter hides, or a pin holds
//!   back, is never found, never described. It is ranked with BM25 over
//!   the tools' names (split at `_`, `-`, `.` and case), titles,
//!   descriptions and parameters' names and descriptions.
//! - `call_tool` becomes a plain `tools/call` of the named tool on its way
//!   in: the layers after this one judge it exactly as a direct call
//!   (filter, validate, approve, pin, rate_limit; the audit names the real
//!   tool). Layers before it see `search_tools` and `call_tool`.
//! - The list the client sees stays the same while the server's tools
//!   change: `notifications/tools/list_changed` renews the index and is
//!   passed on only when `always` names tools (whose set may have
//!   changed).
//! - A direct `tools/call` of any other name is passed in as it is.

mod config;
pub(super) mod index;
mod service;
mod tools;

pub use config::SearchConfig;
pub use service::{Search, SearchLayer};

#[cfg(test)]
mod tests;
