//! `approve`: the user says yes, in their own client. A call to a matched
//! tool is held and the user is asked through the client's elicitation
//! (`elicitation/create`, form mode: the tool, its arguments summarised,
//! "Allow once" / "Deny", and "Allow for this session" with
//! `remember = "session"`). Accepted: the call goes on. Declined,
//! cancelled, denied, unanswered within `timeout`, unreadable: refused
//! with an error that says which.
//!
//! ```toml
//! [[middleware]]
//! type = "approve"
//! tools = ["write_*", "delete_*", "re:^run_.*"]
//! remember = "session"    # or "once" (the default)
//! fallback = "refuse"     # or "allow": a client that cannot ask
//! timeout = "2m"
//! ```
//!
//! A 2025-era client is asked with a request of mcp-chain's own, sent down
//! the server → client stack (so the audit records the question and the
//! answer). A 2026-07-28 client gets the question as an `input_required`
//! result (multi round-trip requests): an `elicitation/create` under
//! `inputRequests["mcp-chain-approve"]`, and a `requestState` sealed with a
//! key drawn at start-up (HMAC-SHA256 over the tool, its arguments, the
//! decision and an expiry), so an answer cannot be forged, replayed after
//! `timeout`, or moved to another call. The retry's answer is read and
//! taken out before the server sees it; the server's own state, if it had
//! one, rides inside the seal and is handed back to it.
//!
//! A guard fails closed: a client without the elicitation capability (form
//! mode) is refused with a message saying why, unless `fallback = "allow"`.
//! Each decision is noted in the audit line of the call.

pub mod book;
mod config;
pub mod desk;
mod modern;
mod question;
mod service;
mod ways;

pub use config::ApproveConfig;
pub use service::{Approve, ApproveLayer};

#[cfg(test)]
mod tests;
