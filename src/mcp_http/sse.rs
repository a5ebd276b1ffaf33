//! Server-sent events as MCP over HTTP frames them: one event per message,
//! `event: message` and the message's JSON on one `data:` line (JSON as
//! mcp-chain writes it has no raw newline), an `id:` first when the
//! stream can be resumed; and the comment an idle stream carries so that
//! a client that went away is noticed.

use bytes::Bytes;

/// An idle stream's comment.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// One event of type `event` carrying `data`, with `id` when the stream
/// can be resumed.
pub(crate) fn event(event: &str, id: Option<u64>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + event.len() + 32);
    if let Some(id) = id {
        out.extend_from_slice(format!("id: {id}\n").as_bytes());
    }
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(event.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_framed_with_its_id_first() {
        assert_eq!(
            &event("message", Some(7), br#"{"a":1}"#)[..],
            b"id: 7\nevent: message\ndata: {\"a\":1}\n\n"
        );
        assert_eq!(
            &event("endpoint", None, b"/messages?sessionId=x")[..],
            b"event: endpoint\ndata: /messages?sessionId=x\n\n"
        );
    }
}
