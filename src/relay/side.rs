//! One peer's reading side: what it sends goes down a chain toward the other
//! peer; the answers it sends settle the requests it was sent.

use super::answer::{invalid_answer, settle, write_answer};
use super::owed::Owed;
use crate::chain::ChainService;
use crate::connector::Connector;
use crate::peer::{Read, Source};
use crate::transport::queue::Outgoing;
use crate::transport::queue::Queue;
use mcp_chain_middleware::envelope::delivery;
use mcp_chain_middleware::message::{Incoming, Invalid};
use mcp_chain_middleware::{
    Delivered, DeliveryTicket, Direction, Envelope, ErrorCode, ErrorObject, Message, RequestId,
    ResponseFuture,
};
use std::task::{Context, Poll, Waker};
use tower::{Service, ServiceExt};
/// One peer's reading side: its messages go down `chain`, answers to its
/// requests go back on `reply`, and its answers settle `own`'s requests.
pub(crate) struct Side<S> {
    pub(crate) source: S,
    pub(crate) chain: ChainService,
    /// Where a reload's chain comes from, when the layers can change.
    pub(crate) next: Option<super::build::Next>,
    /// The connector that sends requests *to* this peer.
    pub(crate) own: Connector,
    pub(crate) reply: Queue,
    /// Which way this peer's messages travel.
    pub(crate) direction: Direction,
    /// The answers owed to this peer that were not ready at once.
    pub(crate) owed: Owed,
    /// Answers this peer sent that are on their way back through the
    /// layers. Answers may pass each other (they are matched by id, and
    /// waiting for each in turn would cost a write per answer), but no
    /// request or notification from this peer overtakes them.
    pub(crate) unwritten: Unwritten,
}

/// The answers a peer sent that are not written yet.
#[derive(Debug, Default)]
pub(crate) struct Unwritten {
    pending: Vec<Delivered>,
    /// Length at which to drop the ones already written: doubled past what
    /// is left, so a burst of answers costs amortized O(1) each, and a peer
    /// that only ever answers keeps the list short.
    prune_at: usize,
}

/// The least `prune_at`.
const PRUNE_UNWRITTEN_AT: usize = 64;

impl Unwritten {
    fn push(&mut self, delivered: Delivered) {
        self.pending.push(delivered);
        if self.pending.len() >= self.prune_at.max(PRUNE_UNWRITTEN_AT) {
            self.pending.retain_mut(|d| !d.is_done());
            self.prune_at = self.pending.len() * 2;
        }
    }

    /// Waits until every one of them is written.
    async fn written(&mut self) {
        for delivered in self.pending.drain(..) {
            delivered.wait().await;
        }
        self.prune_at = 0;
    }
}

impl<S: Source> Side<S> {
    fn peer(&self) -> &'static str {
        match self.direction {
            Direction::ToServer => "client",
            Direction::ToClient => "server",
        }
    }

    /// Reads until end of input.
    pub(crate) async fn run(&mut self) {
        loop {
            let incoming = match self.source.next().await {
                Ok(Some(Read::Parsed(incoming))) => incoming,
                Ok(Some(Read::Unparsable { error, id })) => {
                    let message = format!("mcp-chain: parse error: {error}");
                    self.unreadable(id, ErrorCode::PARSE_ERROR, message).await;
                    continue;
                }
                Ok(Some(Read::OverBudget { len, why, id })) => {
                    let message =
                        format!("mcp-chain: a message of {len} bytes or more was refused: {why}");
                    self.unreadable(id, ErrorCode::OVER_BUDGET, message).await;
                    continue;
                }
                Ok(Some(Read::TooLong { len, limit, id })) => {
                    let message = format!(
                        "mcp-chain: message of {len} bytes is over the limit of {limit} bytes (proxy.max_message_bytes); skipped"
                    );
                    self.unreadable(id, ErrorCode::INVALID_REQUEST, message)
                        .await;
                    continue;
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(peer = self.peer(), error = %e, "reading failed; treating it as end of input");
                    return;
                }
            };
            match incoming {
                Incoming::Single(Ok(msg)) => self.handle(msg).await,
                Incoming::Single(Err(invalid)) => self.invalid(invalid).await,
                Incoming::Batch(items) => self.batch(items).await,
            }
        }
    }

    async fn handle(&mut self, msg: Message) {
        match msg {
            Message::Response(_) | Message::Error(_) => {
                if let Some(delivered) = self.own.resolve(msg) {
                    self.unwritten.push(delivered);
                }
            }
            // The server's notifications name the client's requests by
            // the ids the server knows: give them the client's.
            Message::Notification(note) if self.direction == Direction::ToClient => {
                let msg = Message::Notification(self.own.translate_from_peer(note));
                let (answer, ticket) = self.dispatch(msg).await;
                self.deliver(answer, ticket).await;
            }
            Message::Request(request) if self.direction == Direction::ToClient => {
                let msg = Message::Request(self.own.translate_request_from_peer(request));
                let (answer, ticket) = self.dispatch(msg).await;
                self.deliver(answer, ticket).await;
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
    async fn dispatch(&mut self, msg: Message) -> (Answer, Option<DeliveryTicket>) {
        // Answers this peer sent before this message go out first.
        self.unwritten.written().await;
        let id = msg.id().cloned();
        let (ticket, delivered) = match id {
            Some(_) => {
                let (ticket, delivered) = delivery();
                (Some(ticket), Some(delivered))
            }
            None => (None, None),
        };
        let env = Envelope {
            direction: self.direction,
            delivered,
            message: msg,
        };
        // A reload's chain is taken up here, between messages.
        if let Some(next) = &mut self.next {
            next.update(&mut self.chain);
        }
        let future = match self.chain.ready().await {
            Ok(svc) => svc.call(env),
            Err(e) => Box::pin(async move { Err(e) }) as ResponseFuture,
        };
        (Answer { future, id }, ticket)
    }

    /// Writes an answer when it is ready: at once if it already is (a
    /// notification, a refusal), else from this peer's answering task.
    async fn deliver(&mut self, mut answer: Answer, ticket: Option<DeliveryTicket>) {
        let now = answer
            .future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        if let Poll::Ready(out) = now {
            write_answer(&self.reply, out, answer.id, self.peer(), ticket).await;
            return;
        }
        let peer = self.peer();
        self.owed
            .push(answer.future, answer.id, ticket, &self.reply, peer);
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
        self.owed.tracker().spawn(async move {
            for (answer, ticket) in answers {
                ready.extend(settle(answer.future.await, answer.id, peer));
                // Released as soon as the answer is in hand, not when the
                // batch is written: the peer may answer the batch's requests
                // in any order, and its reader must go on to the next one.
                drop(ticket);
            }
            // A batch of notifications only gets no answer at all.
            if !ready.is_empty() {
                reply.send(Outgoing::Batch(ready)).await;
            }
        });
    }

    async fn invalid(&mut self, invalid: Invalid) {
        let answer = invalid_answer(invalid);
        self.reply.send(Outgoing::One(answer)).await;
    }

    /// Deals with a line that could not be read whole (not JSON, nested too
    /// deep, over the cap). From the client: answered with `code` (id
    /// `null`: JSON-RPC cannot know it). From the server: logged, since
    /// servers print banners and debug output on stdout and an error answer
    /// would only confuse them; but when it is an answer whose id can still
    /// be found, the request it answers gets an error instead of nothing.
    async fn unreadable(&mut self, answer_to: Option<RequestId>, code: ErrorCode, message: String) {
        if self.direction == Direction::ToServer {
            let error = ErrorObject::new(code, message);
            self.reply
                .send(Outgoing::One(Message::error(None, error)))
                .await;
            return;
        }
        tracing::warn!(peer = "server", "{message}");
        if let Some(id) = answer_to {
            let error = ErrorObject::new(
                ErrorCode::INTERNAL_ERROR,
                format!("mcp-chain: the server's answer could not be relayed ({message})"),
            )
            .with_data(serde_json::json!({"layer": "upstream", "reason": "unreadable_answer"}));
            self.handle(Message::error(Some(id), error)).await;
        }
    }
}

/// The answer a request is waiting for.
struct Answer {
    future: ResponseFuture,
    /// `None` for a notification.
    id: Option<RequestId>,
}
