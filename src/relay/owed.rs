//! The answers owed to one peer, awaited together by one task.
//!
//! Each request a peer sends is answered by the future its chain returns.
//! One that is not ready at once (the usual case: it waits for the other
//! peer) goes to this peer's answering task, which polls all of them and
//! writes each answer as it comes in. A task of its own for every request
//! cost more than the rest of relaying the request: an aligned allocation,
//! a move of the whole future into it, and a trip through the scheduler.
//!
//! Shutdown waits on the [`TaskTracker`] as before: every owed answer holds
//! one of its tokens until it is written.

use super::answer::write_answer;
use crate::transport::queue::Queue;
use futures_util::stream::{FuturesUnordered, StreamExt};
use mcp_chain_middleware::{BoxError, DeliveryTicket, Message, RequestId, ResponseFuture};
use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{ready, Context, Poll, Waker};
use tokio_util::task::task_tracker::TaskTrackerToken;
use tokio_util::task::TaskTracker;

/// Hands answers owed to one peer to its answering task, started with the
/// first one.
#[derive(Debug)]
pub(crate) struct Owed {
    tracker: TaskTracker,
    inbox: Option<Arc<Inbox>>,
}

impl Owed {
    pub(crate) fn new(tracker: TaskTracker) -> Self {
        Self {
            tracker,
            inbox: None,
        }
    }

    /// The tracker shutdown waits on; batches are answered from tasks it
    /// tracks.
    pub(super) fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    /// Writes the answer `future` yields to `reply` once it is ready, then
    /// drops `ticket`.
    pub(super) fn push(
        &mut self,
        future: ResponseFuture,
        id: Option<RequestId>,
        ticket: Option<DeliveryTicket>,
        reply: &Queue,
        peer: &'static str,
    ) {
        let owing = Owing {
            future,
            done: Some(Done {
                id,
                ticket,
                _token: self.tracker.token(),
            }),
        };
        // The task ends only once this side is gone and all it was handed
        // is written, or if the runtime drops it at exit; one found gone is
        // started anew rather than leave this answer unwritten.
        let left = match &self.inbox {
            // Handed back if the task is gone.
            Some(inbox) => inbox.tell(|state| {
                if state.task_gone {
                    return Some(owing);
                }
                state.owing.push(owing);
                None
            }),
            None => Some(owing),
        };
        let Some(owing) = left else {
            return;
        };
        let inbox = Arc::new(Inbox::default());
        inbox.lock().owing.push(owing);
        tokio::spawn(answer(Receiver(inbox.clone()), reply.clone(), peer));
        self.inbox = Some(inbox);
    }
}

impl Drop for Owed {
    fn drop(&mut self) {
        if let Some(inbox) = &self.inbox {
            inbox.tell(|state| state.sender_gone = true);
        }
    }
}

/// Answers handed to the answering task and not yet taken in by it: a
/// vector under a lock rather than a channel, so that a burst of requests
/// costs no allocation once the vectors have grown to the burst's size.
#[derive(Debug, Default)]
struct Inbox(Mutex<InboxState>);

#[derive(Default)]
struct InboxState {
    owing: Vec<Owing>,
    /// The task's, while it waits for answers to be handed over.
    waker: Option<Waker>,
    /// No more will come: the task ends once it has written what it holds.
    sender_gone: bool,
    /// The task was dropped (the runtime is going away).
    task_gone: bool,
}

impl std::fmt::Debug for InboxState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxState")
            .field("owing", &self.owing.len())
            .field("sender_gone", &self.sender_gone)
            .field("task_gone", &self.task_gone)
            .finish_non_exhaustive()
    }
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, InboxState> {
        // Nothing panics while holding the lock; if it ever did, the state
        // is still whole.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the state under the lock, then wakes the task if it is
    /// waiting (outside the lock: it may run at once).
    fn tell<T>(&self, change: impl FnOnce(&mut InboxState) -> T) -> T {
        let (out, waker) = {
            let mut state = self.lock();
            let out = change(&mut state);
            (out, state.waker.take())
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        out
    }
}

/// The answering task's end of the inbox: marks it gone when the task is
/// dropped, so the next answer starts a new task.
struct Receiver(Arc<Inbox>);

impl Receiver {
    /// Moves what was handed over into `into`; `false` when nothing was and
    /// nothing more will be. Registers the task to be woken otherwise.
    fn take(&self, into: &mut Vec<Owing>, cx: &mut Context<'_>) -> bool {
        let mut inbox = self.0.lock();
        std::mem::swap(&mut inbox.owing, into);
        if inbox.sender_gone {
            return !into.is_empty();
        }
        match &inbox.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => inbox.waker = Some(cx.waker().clone()),
        }
        true
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let owing = {
            let mut inbox = self.0.lock();
            inbox.task_gone = true;
            inbox.waker = None;
            std::mem::take(&mut inbox.owing)
        };
        // Dropped outside the lock: a future's drop may run a layer's code.
        drop(owing);
    }
}

/// An answer on its way.
struct Owing {
    future: ResponseFuture,
    /// Taken when the future is ready.
    done: Option<Done>,
}

/// What an answer needs once it is there.
struct Done {
    id: Option<RequestId>,
    ticket: Option<DeliveryTicket>,
    /// Held until the answer is written.
    _token: TaskTrackerToken,
}

impl Future for Owing {
    type Output = (Result<Option<Message>, BoxError>, Done);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // A layer that panics fails its own request (-32603), not every
        // answer this task owes.
        let poll = catch_unwind(AssertUnwindSafe(|| self.future.as_mut().poll(cx)));
        let out = match poll {
            Ok(poll) => ready!(poll),
            Err(_) => Err("a layer failed while answering this request".into()),
        };
        let done = self
            .done
            .take()
            .expect("an owed answer is polled after it is done");
        Poll::Ready((out, done))
    }
}

/// The answering task: takes in owed answers, writes each as it is ready,
/// and ends when no more can come and none is left.
async fn answer(incoming: Receiver, reply: Queue, peer: &'static str) {
    let mut owing = FuturesUnordered::new();
    let mut taken = Vec::new();
    let mut open = true;
    loop {
        let next = poll_fn(|cx| {
            if open {
                open = incoming.take(&mut taken, cx);
                for one in taken.drain(..) {
                    owing.push(one);
                }
            }
            match owing.poll_next_unpin(cx) {
                Poll::Ready(Some(ready)) => Poll::Ready(Some(ready)),
                Poll::Ready(None) if !open => Poll::Ready(None),
                // None owed now: the inbox wakes us for the next one.
                Poll::Ready(None) | Poll::Pending => Poll::Pending,
            }
        })
        .await;
        let Some((out, done)) = next else {
            return;
        };
        write_answer(&reply, out, done.id, peer, done.ticket).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::queue::Taken;
    use mcp_chain_middleware::envelope::delivery;
    use serde_json::{json, Value};
    use tokio::sync::oneshot;

    fn answer_to(id: u64) -> Message {
        let line = json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string();
        match mcp_chain_middleware::message::Incoming::parse(line.as_bytes()) {
            Ok(mcp_chain_middleware::message::Incoming::Single(Ok(msg))) => msg,
            _ => unreachable!("a valid answer"),
        }
    }

    async fn written(queue: &Queue) -> Vec<Value> {
        let mut taken = Taken::default();
        // Bounded: an answer that never comes fails the test, not hangs it.
        let take = tokio::time::timeout(std::time::Duration::from_secs(10), queue.take(&mut taken));
        assert!(take.await.expect("an answer is written"));
        taken
            .joined()
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).expect("a JSON line"))
            .collect()
    }

    #[tokio::test]
    async fn answers_are_written_as_they_come_and_a_panic_fails_only_its_own() {
        let tracker = TaskTracker::new();
        let mut owed = Owed::new(tracker.clone());
        let queue = Queue::default();
        let (first_tx, first_rx) = oneshot::channel::<Message>();
        let (second_tx, second_rx) = oneshot::channel::<Message>();
        let (ticket, mut delivered) = delivery();
        let wait = |rx: oneshot::Receiver<Message>| -> ResponseFuture {
            Box::pin(async move { Ok(Some(rx.await.expect("sent"))) })
        };
        owed.push(
            wait(first_rx),
            Some(1u64.into()),
            Some(ticket),
            &queue,
            "client",
        );
        owed.push(wait(second_rx), Some(2u64.into()), None, &queue, "client");
        let panics: ResponseFuture = Box::pin(async {
            tokio::task::yield_now().await;
            panic!("a layer's bug")
        });
        owed.push(panics, Some(3u64.into()), None, &queue, "client");

        // The second comes first; the panic is answered with an error.
        second_tx.send(answer_to(2)).expect("owed");
        let mut out = written(&queue).await;
        while out.len() < 2 {
            out.extend(written(&queue).await);
        }
        let ids: Vec<_> = out.iter().map(|m| m["id"].clone()).collect();
        assert!(
            ids.contains(&json!(2)) && ids.contains(&json!(3)),
            "{out:?}"
        );
        let failed = out.iter().find(|m| m["id"] == 3).expect("answered");
        assert_eq!(failed["error"]["code"], -32603, "{failed}");
        assert!(!delivered.is_done(), "the first is not written yet");

        tracker.close();
        assert!(!tracker.is_empty(), "one answer is still owed");
        first_tx.send(answer_to(1)).expect("owed");
        let out = written(&queue).await;
        assert_eq!(out[0]["id"], 1);
        tracker.wait().await;
        delivered.wait().await;
    }
}
