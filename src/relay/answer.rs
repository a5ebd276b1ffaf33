//! Writing an answer to a peer: the one place what a chain returned becomes
//! the line that peer gets (a leftover failure becomes a JSON-RPC error for
//! its id, so no request goes unanswered). The read loops and the answering
//! task both write through here.

use crate::transport::queue::{Outgoing, Queue};
use mcp_chain_middleware::message::Invalid;
use mcp_chain_middleware::{BoxError, DeliveryTicket, ErrorCode, ErrorObject, Message, RequestId};

/// Writes what the chain returned (if anything), then lets the peer's
/// reader go on (the ticket).
pub(super) async fn write_answer(
    reply: &Queue,
    out: Result<Option<Message>, BoxError>,
    id: Option<RequestId>,
    peer: &str,
    ticket: Option<DeliveryTicket>,
) {
    if let Some(msg) = settle(out, id, peer) {
        reply.send(Outgoing::One(msg)).await;
    }
    drop(ticket);
}

pub(crate) fn invalid_answer(invalid: Invalid) -> Message {
    Message::error(
        invalid.id,
        ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            format!("mcp-chain: invalid request: {}", invalid.reason),
        ),
    )
}

/// Turns what the chain returned into the message to write, if any: the
/// one place a leftover `BoxError` becomes a JSON-RPC error, so no request
/// goes unanswered.
pub(super) fn settle(
    out: Result<Option<Message>, BoxError>,
    id: Option<RequestId>,
    peer: &str,
) -> Option<Message> {
    match (out, id) {
        (Ok(Some(msg)), Some(_)) => Some(msg),
        (Ok(None), _) => None,
        (Ok(Some(msg)), None) => {
            tracing::warn!(
                peer,
                kind = msg.kind(),
                "a layer answered a notification; dropping the answer"
            );
            None
        }
        (Err(e), Some(id)) => Some(Message::error(
            Some(id),
            ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("mcp-chain: {e}")),
        )),
        (Err(e), None) => {
            tracing::warn!(peer, error = %e, "a notification could not be relayed");
            None
        }
    }
}
