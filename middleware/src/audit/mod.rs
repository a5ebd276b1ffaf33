//! `audit`: an append-only record of what passed through the proxy, one
//! JSON line per event, for people who must be able to say afterwards which
//! tool was called, by whom, with what outcome.
//!
//! ```toml
//! [[middleware]]
//! type = "audit"
//! path = "/var/log/mcp/fs.jsonl"   # "-" = stderr; created 0600, appended to
//! payloads = false                 # true: also params, result and error
//! on_write_error = "refuse"        # or "forward"
//! ```
//!
//! A line for a request, then one for its answer:
//!
//! ```json
//! {"time":"2025-06-18T09:30:00.123456Z","direction":"client_to_server","kind":"request","id":4,"method":"tools/call","tool":"search","size":87}
//! {"time":"2025-06-18T09:30:00.131002Z","direction":"client_to_server","kind":"response","id":4,"method":"tools/call","tool":"search","outcome":"ok","duration_ms":7.546,"size":412}
//! ```
//!
//! Every message in either direction gets a line (`kind` = `request` or
//! `notification`); every request gets a second line when its answer comes
//! back (`kind` = `response`), carrying the request's `direction`, `id`,
//! `method` and target so the two pair up. `outcome` is one of `ok`,
//! `input_required` (a 2026-07-28 result asking for the input its
//! `input_requests` field names first), `tool_error` (a `tools/call` or
//! `tasks/result` result with `isError:
//! true`), `error` (with `code`),
//! `denied`, `rate_limited` or `timed_out` (answered by the mcp-chain
//! layer named in `layer`, with `reason`, read from the answer's
//! `error.data`), `cancelled` (no answer, as the protocol wants for a
//! cancelled request), `failed` (the upstream failed; `failure` says how)
//! or `abandoned` (an outer layer stopped waiting for it).
//!
//! # Placement
//!
//! Put it first (outermost) to record what the client asked and what it was
//! told, including the refusals of the layers after it; the results it sees
//! have been through those layers' redaction. Put it last to record exactly
//! what the server sees.
//!
//! # Durability
//!
//! A request's line is written and flushed in `call`, synchronously, before
//! the request is passed on: if the proxy is killed the moment after it
//! forwards a request, the line is already in the file. That is the reason
//! for the plain blocking write: the lines are small, the file is local, and
//! the record must exist before the forward. If the line cannot be written
//! (disk full, file gone read-only), the request is refused with error 403
//! (`data.reason = "audit_write_failed"`) unless `on_write_error =
//! "forward"`. Notifications and answers cannot be refused; a failure to
//! record them is logged to stderr.

mod config;
mod layer;
mod record;
pub(crate) use record::Timestamp;
mod service;
mod sink;

pub use config::{AuditConfig, OnWriteError};
pub use layer::AuditLayer;
pub use service::Audit;

#[cfg(test)]
mod tests;
