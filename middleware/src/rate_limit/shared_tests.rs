//! Buckets kept in a shared state (`[state]`): replicas meet in one bucket,
//! whose key names no caller; an unavailable store refuses or falls back
//! as the deployment chose.

use super::bucket::Bucket;
use super::*;
use crate::message::method;
use crate::shared::{Fallback, SharedBucket, SharedState, StoreFuture, Unavailable};
use crate::{BoxError, Direction, Envelope, ErrorCode, Message};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};

/// A store as Redis keeps it: one bucket per key, whoever asks.
#[derive(Debug, Default)]
struct Store {
    buckets: Mutex<HashMap<String, Bucket>>,
    down: AtomicBool,
    fallback: Fallback,
}

impl SharedState for Store {
    fn take(
        &self,
        bucket: &SharedBucket,
        max_wait: Option<Duration>,
    ) -> StoreFuture<Result<Result<Duration, Duration>, Unavailable>> {
        if self.down.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(Unavailable("down".into()))));
        }
        let mut buckets = self.buckets.lock().expect("lock");
        let b = buckets
            .entry(bucket.key.clone())
            .or_insert_with(|| Bucket::earning(bucket.per_second, bucket.burst));
        let now = Instant::now();
        let answer = match max_wait {
            None => b.take(now).map(|()| Duration::ZERO),
            Some(max) => b.reserve(now, max),
        };
        Box::pin(std::future::ready(Ok(answer)))
    }

    fn refund(&self, bucket: &SharedBucket) -> StoreFuture<()> {
        if let Some(b) = self.buckets.lock().expect("lock").get_mut(&bucket.key) {
            b.refund(Instant::now());
        }
        Box::pin(std::future::ready(()))
    }

    fn fallback(&self) -> Fallback {
        self.fallback
    }
}

type Inner = BoxCloneService<Envelope, Option<Message>, BoxError>;

fn server() -> Inner {
    BoxCloneService::new(tower::service_fn(|env: Envelope| {
        let answer = match env.message {
            Message::Request(req) => Some(Message::response(req.id, json!({}))),
            _ => None,
        };
        async move { Ok::<_, BoxError>(answer) }
    }))
}

/// A replica's layer: the config validated anew, as each process does.
fn replica(config: &Value, store: &Arc<Store>) -> RateLimitLayer {
    let config: RateLimitConfig = serde_json::from_value(config.clone()).expect("parses");
    let store: Arc<dyn SharedState> = store.clone();
    config.validate().expect("valid").with_store(store)
}

fn call(id: u64) -> Envelope {
    let params = json!({"name": "search", "arguments": {}});
    Envelope::new(
        Direction::ToServer,
        Message::request(id, method::TOOLS_CALL, Some(params)),
    )
}

async fn send(svc: &mut RateLimit<Inner>, env: Envelope) -> Option<Message> {
    svc.ready()
        .await
        .expect("ready")
        .call(env)
        .await
        .expect("answered")
}

fn let_through(answers: &[Option<Message>]) -> usize {
    answers
        .iter()
        .filter(|a| matches!(a, Some(Message::Response(_))))
        .count()
}

#[tokio::test(start_paused = true)]
async fn three_replicas_let_through_what_one_would() {
    let store = Arc::new(Store::default());
    let config = json!({"rules": [{"tool": "search", "rate": "5/min"}]});
    let mut replicas: Vec<_> = (0..3)
        .map(|_| replica(&config, &store).layer(server()))
        .collect();
    let mut answers = Vec::new();
    for id in 0..15 {
        answers.push(send(&mut replicas[id as usize % 3], call(id)).await);
    }
    assert_eq!(let_through(&answers), 5, "one bucket of 5, not three");
    let Some(Message::Error(refused)) = &answers[14] else {
        panic!("{:?}", answers[14])
    };
    assert_eq!(refused.error.code, ErrorCode::RATE_LIMITED);
    assert!(refused.error.data.as_ref().expect("data")["retryAfterMs"].as_u64() > Some(0));
}

#[tokio::test(start_paused = true)]
async fn each_caller_has_its_bucket_named_by_a_digest_only() {
    let store = Arc::new(Store::default());
    let config = json!({"scope": "principal", "rules": [{"rate": "2/min"}]});
    let (a, b) = (replica(&config, &store), replica(&config, &store));
    let secret = "token\u{0}static-token-0123456789";
    let mut on_a = a.for_session(Some(secret)).layer(server());
    let mut on_b = b.for_session(Some(secret)).layer(server());
    let mut other = b
        .for_session(Some("issuer\u{0}someone-else"))
        .layer(server());
    let answers = vec![
        send(&mut on_a, call(1)).await,
        send(&mut on_b, call(2)).await,
        send(&mut on_a, call(3)).await,
    ];
    assert_eq!(
        let_through(&answers),
        2,
        "one caller's bucket on both replicas"
    );
    assert_eq!(
        let_through(&[send(&mut other, call(4)).await]),
        1,
        "another caller's own"
    );
    let keys: Vec<String> = store
        .buckets
        .lock()
        .expect("lock")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(
        keys.iter()
            .all(|k| !k.contains("static-token") && !k.contains("someone")),
        "{keys:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn sessions_keep_their_own_buckets_here() {
    let store = Arc::new(Store::default());
    let config = json!({"scope": "session", "rules": [{"rate": "1/min"}]});
    let layer = replica(&config, &store);
    let mut one = layer.for_session(None).layer(server());
    let mut two = layer.for_session(None).layer(server());
    assert_eq!(
        let_through(&[send(&mut one, call(1)).await, send(&mut two, call(2)).await]),
        2
    );
    assert!(
        store.buckets.lock().expect("lock").is_empty(),
        "a session lives on one replica"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unavailable_store_refuses_what_needed_it_or_falls_back() {
    let store = Arc::new(Store {
        down: AtomicBool::new(true),
        ..Store::default()
    });
    let config = json!({"rules": [{"tool": "search", "rate": "1/min"}]});
    let mut svc = replica(&config, &store).layer(server());
    let Some(Message::Error(refused)) = send(&mut svc, call(1)).await else {
        panic!("refused")
    };
    assert_eq!(refused.error.code, ErrorCode::STATE_UNAVAILABLE);
    let data = refused.error.data.expect("data");
    assert_eq!(
        (&data["layer"], &data["reason"]),
        (&json!("rate_limit"), &json!("state_unavailable"))
    );
    // What no rule limits goes on.
    let ping = Envelope::new(Direction::ToServer, Message::request(2, method::PING, None));
    assert!(matches!(
        send(&mut svc, ping).await,
        Some(Message::Response(_))
    ));
    store.down.store(false, Ordering::SeqCst);
    assert_eq!(
        let_through(&[send(&mut svc, call(3)).await]),
        1,
        "back without a restart"
    );

    let local = Arc::new(Store {
        down: AtomicBool::new(true),
        fallback: Fallback::Local,
        ..Store::default()
    });
    let mut svc = replica(&config, &local).layer(server());
    let answers = vec![send(&mut svc, call(1)).await, send(&mut svc, call(2)).await];
    assert_eq!(
        let_through(&answers),
        1,
        "this process's own bucket meanwhile"
    );
}

#[tokio::test(start_paused = true)]
async fn a_held_request_cancelled_gives_its_token_back_to_the_shared_bucket() {
    let store = Arc::new(Store::default());
    let config = json!({"on_limit": "wait", "max_wait": "10s", "rules": [{"tool": "search", "rate": "1/s", "burst": 1}]});
    let layer = replica(&config, &store);
    let mut svc = layer.layer(server());
    assert_eq!(let_through(&[send(&mut svc, call(1)).await]), 1);
    let held = tokio::spawn({
        let mut svc = svc.clone();
        async move { send(&mut svc, call(2)).await }
    });
    tokio::task::yield_now().await;
    let cancel = Envelope::new(
        Direction::ToServer,
        Message::notification(
            method::NOTIFICATION_CANCELLED,
            Some(json!({"requestId": 2})),
        ),
    );
    assert!(send(&mut svc, cancel).await.is_none());
    assert!(held.await.expect("joined").is_none(), "released, no answer");
    tokio::task::yield_now().await;
    let tokens = {
        let mut buckets = store.buckets.lock().expect("lock");
        let bucket = buckets.values_mut().next().expect("one bucket");
        bucket.reserve(Instant::now(), Duration::from_secs(10))
    };
    assert_eq!(
        tokens,
        Ok(Duration::from_secs(1)),
        "the refunded token is there for the next"
    );
}
