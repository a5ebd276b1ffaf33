//! The `_meta` keys a 2026-07-28 request carries about itself, in place
//! of a session's handshake: its revision and its client's capabilities.

/// The protocol revision a request speaks.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The capabilities of the client that sent it (`elicitation`, …).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
