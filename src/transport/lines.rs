//! The messages taken off a queue of messages ([`Queue::of_messages`]):
//! a transport to a remote server must know each message's kind and id to
//! choose where it goes (a POST of its own, a WebSocket frame), and sends
//! its bytes; each is written here, once, and never parsed back. (The
//! HTTP front's router writes its own, once, after giving a renamed
//! request's client its id back: `front/routes.rs`.)
//!
//! [`Queue::of_messages`]: crate::transport::queue::Queue::of_messages

use crate::transport::queue::{Outgoing, Taken};
use bytes::Bytes;
use mcp_chain_middleware::{Message, RequestId};

/// One line for a peer: its bytes (without the newline) and what it is.
pub(crate) struct Line {
    pub(crate) bytes: Bytes,
    /// `None` for a batch's answers.
    pub(crate) message: Option<Message>,
    /// Set for a request only: an answer to the server's request has an id
    /// too, and gets no answer.
    pub(crate) id: Option<RequestId>,
}

impl Line {
    fn of(outgoing: Outgoing) -> Self {
        let mut bytes = Vec::new();
        match outgoing {
            Outgoing::One(message) => {
                message.write_line(&mut bytes);
                bytes.pop();
                let id = match &message {
                    Message::Request(request) => Some(request.id.clone()),
                    _ => None,
                };
                Self {
                    bytes: Bytes::from(bytes),
                    message: Some(message),
                    id,
                }
            }
            Outgoing::Batch(messages) => {
                Message::write_batch(&messages, &mut bytes);
                bytes.pop();
                Self {
                    bytes: Bytes::from(bytes),
                    message: None,
                    id: None,
                }
            }
        }
    }

    pub(crate) fn method(&self) -> Option<&str> {
        self.message.as_ref().and_then(Message::method)
    }
}

/// The lines of what was taken off a queue of messages.
pub(crate) fn lines(taken: &mut Taken) -> Vec<Line> {
    debug_assert!(taken.bytes.is_empty(), "a queue of bytes read as messages");
    let lines = taken.messages.drain(..).map(Line::of).collect();
    taken.clear();
    lines
}
