//! The relay: both pipes, both chains, and the order of shutdown.
//!
//! ```text
//! client ─▶ client reader ─▶ to_server chain ─▶ upstream connector ─▶ server writer ─▶ child stdin
//! client ◀─ client writer ◀─ to_client chain ◀─ server reader ◀──────────────────────── child stdout
//! ```
//!
//! Each reader reads one message at a time. A request or notification goes
//! down the chain toward the other peer; `call` does the request-side work
//! and queues the write before the next message is read (invariant 1). The
//! answer's future runs on a task of its own, so a slow tool call holds up
//! nothing else (invariant 2). An answer from a peer is handed to the task
//! waiting for it, and the reader waits until that task has written it
//! before reading on, so an answer is never overtaken by what its sender
//! sent after it.

use crate::chain::{self, ChainService};
use crate::config::{Config, UpstreamConfig};
use crate::connector::Connector;
use crate::front::codec::{Frame, FrameReader};
use crate::front::stdio::{Reader, Writer};
use crate::front::writer::{self, Outgoing, WRITE_QUEUE_MESSAGES};
use crate::upstream::{Upstream, UpstreamError};
use mcp_chain_middleware::envelope::delivery;
use mcp_chain_middleware::message::{Incoming, Invalid};
use mcp_chain_middleware::{
    BoxError, DeliveryTicket, Direction, Envelope, ErrorCode, ErrorObject, Message, RequestId,
    ResponseFuture,
};
use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::AsyncRead;
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;
use tower::{Service, ServiceExt};

/// After the server exits, how long its output may still be read: what it
/// wrote before exiting is already in the pipe, so this is only a bound.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// Why the relay loop stopped.
enum Stop {
    Client,
    ServerOutputClosed,
    ServerExited(std::io::Result<std::process::ExitStatus>),
}

/// How a session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// The client closed stdin, or a signal asked us to stop.
    Clean,
    /// The server went away on its own; the reason is one line.
    ServerGone(String),
}

/// The session could not start (the server could not be spawned).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunError(String);

impl From<UpstreamError> for RunError {
    fn from(e: UpstreamError) -> Self {
        Self(e.to_string())
    }
}

/// Runs one session: starts the server, relays until the client leaves, a
/// signal arrives or the server exits, then shuts down in order.
pub async fn run(
    config: &Config,
    upstream: &UpstreamConfig,
    client_in: Reader,
    client_out: Writer,
    shutdown: impl Future<Output = ()>,
) -> Result<Ending, RunError> {
    let mut child = Upstream::spawn(upstream)?;
    let child_stdin = child
        .stdin
        .take()
        .ok_or(UpstreamError::MissingPipe("stdin"))?;
    let child_stdout = child
        .stdout
        .take()
        .ok_or(UpstreamError::MissingPipe("stdout"))?;

    let (client_tx, client_rx) = mpsc::channel(WRITE_QUEUE_MESSAGES);
    let (server_tx, server_rx) = mpsc::channel(WRITE_QUEUE_MESSAGES);
    let (close_client, client_closed) = oneshot::channel();
    let (close_server, server_closed) = oneshot::channel();
    let client_writer = tokio::spawn(writer::run(client_rx, client_out, client_closed, "client"));
    let server_writer = tokio::spawn(writer::run(server_rx, child_stdin, server_closed, "server"));

    let upstream_conn = Connector::new(server_tx.clone(), "server");
    let downstream_conn = Connector::new(client_tx.clone(), "client");
    let to_server = chain::to_server(&config.chain, ChainService::new(upstream_conn.clone()));
    let to_client = chain::to_client(&config.chain, ChainService::new(downstream_conn.clone()));

    // Answers owed to the client: shutdown waits for these.
    let owed = TaskTracker::new();
    let mut server_side = Side {
        reader: FrameReader::new(child_stdout, config.max_message_bytes),
        chain: to_client,
        own: upstream_conn.clone(),
        reply: server_tx,
        direction: Direction::ToClient,
        owed: TaskTracker::new(),
    };
    let mut server_side = tokio::spawn(async move { server_side.run().await });
    let mut client_side = Side {
        reader: FrameReader::new(client_in, config.max_message_bytes),
        chain: to_server,
        own: downstream_conn.clone(),
        reply: client_tx,
        direction: Direction::ToServer,
        owed: owed.clone(),
    };

    let stop = tokio::select! {
        () = client_side.run() => {
            tracing::info!("the client closed its input; finishing");
            Stop::Client
        }
        () = shutdown => {
            tracing::info!("asked to stop; finishing");
            Stop::Client
        }
        _ = &mut server_side => Stop::ServerOutputClosed,
        status = child.wait() => Stop::ServerExited(status),
    };
    drop(client_side);
    let ending = match stop {
        Stop::Client => Ending::Clean,
        Stop::ServerOutputClosed => {
            let status = tokio::time::timeout(config.shutdown_grace, child.wait()).await;
            Ending::ServerGone(match status {
                Ok(Ok(status)) => format!("the server exited ({status})"),
                _ => "the server closed its output".to_owned(),
            })
        }
        Stop::ServerExited(status) => {
            // What it wrote before exiting is still in the pipe; a
            // grandchild holding the pipe open must not keep us waiting.
            let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, &mut server_side).await;
            Ending::ServerGone(match status {
                Ok(status) => format!("the server exited ({status})"),
                Err(e) => format!("the server could not be waited for: {e}"),
            })
        }
    };

    let grace = config.shutdown_grace;
    if let Ending::ServerGone(reason) = &ending {
        upstream_conn.close(reason);
    } else {
        // Keep relaying until every answer owed to the client is written.
        owed.close();
        if tokio::time::timeout(grace, owed.wait()).await.is_err() {
            tracing::warn!(
                unanswered = upstream_conn.in_flight(),
                "shutdown grace ran out with answers still owed; answering them with errors"
            );
        }
        upstream_conn.close("mcp-chain is shutting down");
    }
    owed.close();
    let _ = tokio::time::timeout(grace, owed.wait()).await;

    // Close the child's stdin (after what is queued), then end its group.
    let _ = close_server.send(());
    let _ = tokio::time::timeout(grace, server_writer).await;
    let status = child.shutdown(grace).await;
    tracing::info!(?status, "the server has stopped");
    // A server that failed on its own makes the session a failure, even
    // when the client left first; one we had to terminate does not.
    let ending = match (ending, status) {
        (Ending::Clean, Some(status)) if status.code().is_some_and(|c| c != 0) => {
            Ending::ServerGone(format!("the server exited ({status})"))
        }
        (ending, _) => ending,
    };
    server_side.abort();
    downstream_conn.close("mcp-chain is shutting down");

    let _ = close_client.send(());
    let _ = tokio::time::timeout(grace, client_writer).await;
    Ok(ending)
}

/// One peer's reading side: its messages go down `chain`, answers to its
/// requests go back on `reply`, and its answers settle `own`'s requests.
struct Side<R> {
    reader: FrameReader<R>,
    chain: ChainService,
    /// The connector that sends requests *to* this peer.
    own: Connector,
    reply: mpsc::Sender<Outgoing>,
    direction: Direction,
    owed: TaskTracker,
}

impl<R: AsyncRead + Unpin> Side<R> {
    fn peer(&self) -> &'static str {
        match self.direction {
            Direction::ToServer => "client",
            Direction::ToClient => "server",
        }
    }

    /// Reads until end of input.
    async fn run(&mut self) {
        loop {
            let incoming = match self.reader.next().await {
                Ok(Some(Frame::Line(line))) => Incoming::parse(line),
                Ok(Some(Frame::TooLong(len))) => {
                    let message = format!(
                        "mcp-chain: message of {len} bytes is over the limit of {} bytes (proxy.max_message_bytes); skipped",
                        self.reader.max_line_bytes()
                    );
                    self.reject(ErrorCode::INVALID_REQUEST, message).await;
                    continue;
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(peer = self.peer(), error = %e, "reading failed; treating it as end of input");
                    return;
                }
            };
            match incoming {
                Err(e) => {
                    self.reject(
                        ErrorCode::PARSE_ERROR,
                        format!("mcp-chain: parse error: {e}"),
                    )
                    .await
                }
                Ok(Incoming::Single(Ok(msg))) => self.handle(msg).await,
                Ok(Incoming::Single(Err(invalid))) => self.invalid(invalid).await,
                Ok(Incoming::Batch(items)) => self.batch(items).await,
            }
        }
    }

    async fn handle(&mut self, msg: Message) {
        match msg {
            Message::Response(_) | Message::Error(_) => {
                if let Some(delivered) = self.own.resolve(msg) {
                    delivered.wait().await;
                }
            }
            Message::Request(_) | Message::Notification(_) => {
                let (answer, ticket) = self.dispatch(msg).await;
                self.deliver(answer, ticket).await;
            }
        }
    }

    /// Sends a request or notification down the chain. For a request,
    /// returns the future of its answer and the ticket to drop once it is
    /// written.
    async fn dispatch(&mut self, msg: Message) -> (Answer, DeliveryTicket) {
        let id = msg.id().cloned();
        let (ticket, delivered) = delivery();
        let env = Envelope {
            direction: self.direction,
            delivered: id.is_some().then_some(delivered),
            message: msg,
        };
        let future = match self.chain.ready().await {
            Ok(svc) => svc.call(env),
            Err(e) => Box::pin(async move { Err(e) }) as ResponseFuture,
        };
        (Answer { future, id }, ticket)
    }

    /// Writes an answer when it is ready: at once if it already is (a
    /// notification, a refusal), else from a task of its own.
    async fn deliver(&mut self, mut answer: Answer, ticket: DeliveryTicket) {
        let now = answer
            .future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        if let Poll::Ready(out) = now {
            if let Some(msg) = settle(out, answer.id, self.peer()) {
                let _ = self.reply.send(Outgoing::One(msg)).await;
            }
            drop(ticket);
            return;
        }
        let reply = self.reply.clone();
        let peer = self.peer();
        self.owed.spawn(async move {
            if let Some(msg) = settle(answer.future.await, answer.id, peer) {
                let _ = reply.send(Outgoing::One(msg)).await;
            }
            drop(ticket);
        });
    }

    /// A batch: each element goes its way; the answers go back as one array.
    async fn batch(&mut self, items: Vec<Result<Message, Invalid>>) {
        let mut answers = Vec::new();
        let mut ready = Vec::new();
        for item in items {
            match item {
                Err(invalid) => ready.push(invalid_answer(invalid)),
                Ok(msg @ (Message::Response(_) | Message::Error(_))) => self.handle(msg).await,
                Ok(msg) => answers.push(self.dispatch(msg).await),
            }
        }
        let reply = self.reply.clone();
        let peer = self.peer();
        self.owed.spawn(async move {
            for (answer, ticket) in answers {
                ready.extend(settle(answer.future.await, answer.id, peer));
                // Released as soon as the answer is in hand, not when the
                // batch is written: the peer may answer the batch's requests
                // in any order, and its reader must go on to the next one.
                drop(ticket);
            }
            // A batch of notifications only gets no answer at all.
            if !ready.is_empty() {
                let _ = reply.send(Outgoing::Batch(ready)).await;
            }
        });
    }

    async fn invalid(&mut self, invalid: Invalid) {
        let answer = invalid_answer(invalid);
        let _ = self.reply.send(Outgoing::One(answer)).await;
    }

    /// Answers something that could not be read at all. To the server,
    /// unreadable lines are only logged: servers print banners and debug
    /// output on stdout, and an error answer would confuse them more.
    async fn reject(&mut self, code: ErrorCode, message: String) {
        if self.direction == Direction::ToClient {
            tracing::warn!(peer = "server", "{message}");
            return;
        }
        let error = ErrorObject::new(code, message);
        let _ = self
            .reply
            .send(Outgoing::One(Message::error(None, error)))
            .await;
    }
}

/// The answer a request is waiting for.
struct Answer {
    future: ResponseFuture,
    /// `None` for a notification.
    id: Option<RequestId>,
}

fn invalid_answer(invalid: Invalid) -> Message {
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
fn settle(
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
