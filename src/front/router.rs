//! A session's router: the task that takes what the chain queued for the
//! client (the same queue a pipe's writer takes from) and sends each
//! message where [`Routes`](super::routes) says it goes, until the queue
//! closes; then it answers every request still waiting with an error, so
//! no HTTP client waits for a session that is gone.

use super::reply::Outgoing;
use super::routes::{lock, Shared};
use crate::transport::queue::{Queue, Taken};
use bytes::Bytes;
use mcp_chain_middleware::{ErrorCode, ErrorObject, Message};

pub(super) async fn run(queue: Queue, routes: Shared) {
    let mut taken = Taken::default();
    while queue.take(&mut taken).await {
        for queued in taken.messages.drain(..) {
            let (targets, shared) = {
                let mut routes = lock(&routes);
                (routes.targets(queued), routes.stateless)
            };
            for (tx, outgoing) in targets {
                // A session of one client waits for its client (the
                // server is slowed, nothing is lost); a shared one never
                // waits for any: `targets` sent only what has room.
                let sent = match shared {
                    false => tx.send(outgoing).await.is_ok(),
                    true => tx.try_send(outgoing).is_ok(),
                };
                if !sent {
                    tracing::debug!("the HTTP client went away before this message; dropped");
                }
            }
        }
        taken.clear();
    }
    let ended = lock(&routes).end();
    for (tx, waiting) in ended {
        for id in waiting {
            let error = ErrorObject::new(
                ErrorCode::CONNECTION_CLOSED,
                "mcp-chain: the session ended before the server answered",
            )
            .with_data(serde_json::json!({"layer": "front", "reason": "session_ended"}));
            let mut line = Vec::new();
            Message::error(Some(id), error).write_line(&mut line);
            line.pop();
            let _ = tx.send(Outgoing::Answer(Bytes::from(line))).await;
        }
    }
}
