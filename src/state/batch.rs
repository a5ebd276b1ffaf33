//! Takes from one bucket batched: the requests that come while a take is
//! on its way to Redis go together in the next one, one script call for
//! all of them, decided in their order at one instant of Redis's clock.
//! A lone request goes at once, asking in its own future (no waiting to
//! fill a batch, no hand-over to another task), so batching costs nothing
//! when there is nothing to batch; the requests that come meanwhile are
//! sent by a task of their own once it is answered (or dropped), and under
//! load Redis is asked once per batch, not once per request.

use mcp_chain_middleware::shared::{SharedBucket, StoreFuture, Unavailable};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::oneshot;

/// What one request is told: how long to wait for its token, or when to
/// try again.
pub(super) type Taken = Result<Result<Duration, Duration>, Unavailable>;

/// Requests in a batch at most (more wait for the next one).
const MAX_BATCH: usize = 256;

/// The requests waiting for each bucket's next batch.
#[derive(Default)]
pub(super) struct Batches {
    waiting: Mutex<HashMap<String, Waiting>>,
}

struct Waiting {
    bucket: SharedBucket,
    max_wait: Option<Duration>,
    answers: Vec<oneshot::Sender<Taken>>,
}

/// Asks Redis for `n` tokens of `bucket`: each request's answer, in order.
pub(super) type Ask = Arc<
    dyn Fn(SharedBucket, Option<Duration>, usize) -> StoreFuture<Result<Vec<Taken>, Unavailable>>
        + Send
        + Sync,
>;

impl Batches {
    /// Joins the next batch of `bucket`, starting one if none is on its
    /// way (it leaves at once, with whatever joins it before); the answer
    /// comes when the batch's does.
    pub(super) fn take(
        self: &Arc<Self>,
        bucket: &SharedBucket,
        max_wait: Option<Duration>,
        ask: &Ask,
    ) -> StoreFuture<Taken> {
        let (tx, rx) = oneshot::channel();
        let dropped = || Err(Unavailable("the batch was dropped".into()));
        {
            let mut waiting = lock(&self.waiting);
            if let Some(next) = waiting.get_mut(&bucket.key) {
                next.answers.push(tx);
                return Box::pin(async move { rx.await.unwrap_or_else(|_| dropped()) });
            }
            // None on its way: this request goes alone, at once; whoever
            // comes meanwhile waits for the next batch.
            waiting.insert(
                bucket.key.clone(),
                Waiting {
                    bucket: bucket.clone(),
                    max_wait,
                    answers: Vec::new(),
                },
            );
        }
        let asked = ask(bucket.clone(), max_wait, 1);
        let handover = Handover {
            batches: self.clone(),
            key: bucket.key.clone(),
            ask: ask.clone(),
        };
        Box::pin(async move {
            let answer = asked.await;
            drop(handover);
            match answer {
                Ok(mut taken) if taken.len() == 1 => taken.pop().unwrap_or_else(dropped),
                Ok(taken) => Err(Unavailable(format!(
                    "the bucket script answered {} for 1",
                    taken.len()
                ))),
                Err(why) => Err(why),
            }
        })
    }

    /// Sends the bucket's batches until no request waits.
    async fn send(self: Arc<Self>, key: String, ask: Ask) {
        while self.send_one(&key, &ask).await {}
    }

    /// Sends one batch of the bucket's waiting requests; true when more
    /// wait for the next one.
    async fn send_one(&self, key: &str, ask: &Ask) -> bool {
        let (bucket, max_wait, answers) = {
            let mut waiting = lock(&self.waiting);
            let Some(next) = waiting.get_mut(key) else {
                return false;
            };
            if next.answers.is_empty() {
                waiting.remove(key);
                return false;
            }
            let n = next.answers.len().min(MAX_BATCH);
            let answers: Vec<_> = next.answers.drain(..n).collect();
            (next.bucket.clone(), next.max_wait, answers)
        };
        match ask(bucket, max_wait, answers.len()).await {
            Ok(taken) if taken.len() == answers.len() => {
                for (tx, taken) in answers.into_iter().zip(taken) {
                    let _ = tx.send(taken);
                }
            }
            Ok(taken) => {
                let why = Unavailable(format!(
                    "the bucket script answered {} for {}",
                    taken.len(),
                    answers.len()
                ));
                for tx in answers {
                    let _ = tx.send(Err(why.clone()));
                }
            }
            Err(why) => {
                for tx in answers {
                    let _ = tx.send(Err(why.clone()));
                }
            }
        }
        let mut waiting = lock(&self.waiting);
        match waiting.get(key) {
            Some(next) if next.answers.is_empty() => {
                waiting.remove(key);
                false
            }
            Some(_) => true,
            None => false,
        }
    }
}

/// A lone request's duty once answered, or dropped (its session ended):
/// the requests that came meanwhile go in the next batch, sent by a task
/// of their own (their answers may not depend on a future that is gone).
struct Handover {
    batches: Arc<Batches>,
    key: String,
    ask: Ask,
}

impl Drop for Handover {
    fn drop(&mut self) {
        let mut waiting = lock(&self.batches.waiting);
        match waiting.get(&self.key) {
            Some(next) if next.answers.is_empty() => {
                waiting.remove(&self.key);
            }
            Some(_) => {
                drop(waiting);
                let (batches, key, ask) =
                    (self.batches.clone(), self.key.clone(), self.ask.clone());
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) => {
                        runtime.spawn(batches.send(key, ask));
                    }
                    // No runtime left (the process is ending): the waiting
                    // requests' answers are dropped with it, as they are.
                    Err(_) => {
                        lock(&batches.waiting).remove(&key);
                    }
                }
            }
            None => {}
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn bucket() -> SharedBucket {
        SharedBucket {
            key: "rl:x:all:0".into(),
            per_second: 1.0,
            burst: 3,
        }
    }

    /// A Redis whose bucket holds `tokens`: each ask takes in order.
    fn redis(tokens: usize, asks: Arc<Mutex<Vec<usize>>>) -> Ask {
        let left = Arc::new(AtomicUsize::new(tokens));
        Arc::new(move |_, _, n| {
            asks.lock().expect("lock").push(n);
            let answers = (0..n)
                .map(|_| {
                    let had =
                        left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| l.checked_sub(1));
                    Ok(match had {
                        Ok(_) => Ok(Duration::ZERO),
                        Err(_) => Err(Duration::from_secs(1)),
                    })
                })
                .collect();
            Box::pin(async move {
                tokio::task::yield_now().await;
                Ok(answers)
            })
        })
    }

    #[tokio::test]
    async fn requests_that_come_together_go_in_one_ask_in_their_order() {
        let asks = Arc::new(Mutex::new(Vec::new()));
        let ask = redis(3, asks.clone());
        let batches = Arc::new(Batches::default());
        let waiting: Vec<_> = (0..10)
            .map(|_| batches.take(&bucket(), None, &ask))
            .collect();
        let mut answers = Vec::new();
        for w in waiting {
            answers.push(w.await.expect("answered"));
        }
        let taken: Vec<bool> = answers.iter().map(Result::is_ok).collect();
        assert_eq!(
            taken,
            [true, true, true, false, false, false, false, false, false, false]
        );
        let asks = asks.lock().expect("lock").clone();
        assert!(
            asks.len() < 10 && asks.iter().sum::<usize>() == 10,
            "{asks:?}"
        );
        assert!(
            batches.waiting.lock().expect("lock").is_empty(),
            "nothing left behind"
        );
    }

    #[tokio::test]
    async fn a_lone_request_dropped_on_its_way_leaves_no_one_behind() {
        let asks = Arc::new(Mutex::new(Vec::new()));
        let ask = redis(5, asks.clone());
        let batches = Arc::new(Batches::default());
        let lone = batches.take(&bucket(), None, &ask);
        let behind: Vec<_> = (0..3)
            .map(|_| batches.take(&bucket(), None, &ask))
            .collect();
        drop(lone);
        for w in behind {
            assert_eq!(w.await, Ok(Ok(Duration::ZERO)), "sent after all");
        }
        assert_eq!(*asks.lock().expect("lock"), [1, 3]);
        assert!(batches.waiting.lock().expect("lock").is_empty());
    }

    #[tokio::test]
    async fn a_failed_ask_answers_every_request_of_its_batch() {
        let ask: Ask = Arc::new(|_, _, _| Box::pin(async { Err(Unavailable("down".into())) }));
        let batches = Arc::new(Batches::default());
        let waiting: Vec<_> = (0..4)
            .map(|_| batches.take(&bucket(), None, &ask))
            .collect();
        for w in waiting {
            assert_eq!(w.await, Err(Unavailable("down".into())));
        }
    }
}
