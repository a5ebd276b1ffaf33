//! MCP over HTTP, as both ends of mcp-chain speak it: the HTTP front (to
//! remote clients) and URL upstreams (to remote servers) follow the same
//! Streamable HTTP rules from opposite sides, so the rules live here once
//! and neither side imports the other.
//!
//! - this module: the header names and the revisions;
//! - [`encoding`]: the `=?base64?…?=` form of a header value;
//! - [`params`]: the `Mcp-Param-*` marks a server puts on a tool's
//!   parameters, learnt from its listings;
//! - [`routing`]: the routing headers of a 2026-07-28 request, computed for
//!   a message that leaves (upstream) and checked against one that arrives
//!   (front): two methods of one type;
//! - [`sse`]: how a message is framed as a server-sent event.

pub(crate) mod encoding;
pub(crate) mod params;
pub(crate) mod routing;
pub(crate) mod sse;

pub(crate) use params::ToolParams;
pub(crate) use routing::Routing;

use hyper::header::HeaderName;

/// The session a server gave (2025-03-26 to 2025-11-25).
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The revision a request is of.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// Where a resumed event stream starts again.
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// 2026-07-28: the method of the request in the body.
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// 2026-07-28: the name (tool, prompt) or URI (resource) it is about.
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// 2026-07-28: the prefix of a marked argument's header.
pub(crate) const MCP_PARAM_PREFIX: &str = "mcp-param-";
/// The media type of an event stream.
pub(crate) const EVENT_STREAM: &str = "text/event-stream";

/// The revisions mcp-chain speaks, oldest first; a client may name any of
/// them in `MCP-Protocol-Version`.
pub(crate) const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The revisions without sessions: each request stands alone and names
/// its own version.
pub(crate) const SESSIONLESS: [&str; 1] = ["2026-07-28"];

/// Whether `version` is a revision mcp-chain speaks.
pub(crate) fn is_known(version: &[u8]) -> bool {
    REVISIONS.iter().any(|v| v.as_bytes() == version)
}
