//! The server→client requests a 2026-07-28 server embeds in a result or a
//! task notification (`inputRequests`, see [`crate::embedded`]), judged as
//! the same requests sent on their own: a denied method never reaches the
//! client.
//!
//! A denied one is removed from the map; the client answers the others and
//! retries, and the server, finding no answer for it, treats it as one the
//! client did not fulfil, as the multi round-trip flow provides. When none
//! is left of a `"resultType": "input_required"` result, nothing the client
//! could do would satisfy the server, so the client gets an error (403,
//! `data.reason = "denied"`) instead of a retry loop. A map that cannot be
//! read, or a request whose method cannot be read, is judged denied.

use super::policy::{Policy, LAYER, REASON};
use crate::embedded::{is_input_required, InputRequests};
use crate::message::{ErrorCode, ErrorObject, Message, RequestId};
use crate::payload::{Payload, Unreadable};
use serde_json::json;

/// The embedded requests this policy removed from a payload.
#[derive(Debug)]
pub(super) struct Removed {
    pub(super) methods: Vec<String>,
    /// How many are left.
    pub(super) left: usize,
}

/// Removes the embedded requests whose method this policy denies (or
/// cannot read). `Ok(None)` when nothing was removed.
pub(super) fn prune_inputs(
    policy: &Policy,
    payload: &mut Payload,
) -> Result<Option<Removed>, Unreadable> {
    let Some(requests) = InputRequests::of(payload)? else {
        return Ok(None);
    };
    let total = requests.len();
    let methods = requests.retain_in(payload, |m| m.is_some_and(|m| policy.allows_method(m)))?;
    Ok((!methods.is_empty()).then(|| Removed {
        left: total - methods.len(),
        methods,
    }))
}

/// Judges the embedded requests of a result on its way to the client. The
/// answer to send instead when the result must not reach it.
pub(super) fn judge_result(
    policy: &Policy,
    id: &RequestId,
    result: &mut Payload,
) -> Option<Message> {
    match prune_inputs(policy, result) {
        Ok(None) => None,
        Ok(Some(removed)) => {
            tracing::info!(layer = LAYER, methods = ?removed.methods, "removed denied input requests");
            (removed.left == 0 && is_input_required(result)).then(|| {
                let message = format!(
                    "the server asked for input this policy denies: {}",
                    removed.methods.join(", ")
                );
                let data = json!({"layer": LAYER, "reason": REASON, "methods": removed.methods});
                let error = ErrorObject::new(ErrorCode::REFUSED, message).with_data(data);
                Message::error(Some(id.clone()), error)
            })
        }
        Err(e) => {
            tracing::warn!(layer = LAYER, error = %e, "refused a result whose input requests it cannot read");
            Some(super::policy::unreadable_result(id.clone(), &e))
        }
    }
}
