//! Shared driver for the layer fuzz targets: runs a script of messages
//! through one layer, both directions, with an inner service that answers
//! whatever the script tells it to.
//!
//! # Script
//!
//! The input's first byte picks one of the target's configs; the rest is
//! read as text (invalid UTF-8 replaced), one op per line:
//!
//! - `c<json>`: a line from the client (to the server); a batch is split
//!   the way the relay splits it. Invalid messages are skipped, as the
//!   relay answers them before any layer sees them.
//! - `s<json>`: a line from the server (to the client).
//! - `a<json>`: queue an answer for the inner service's next request:
//!   an object becomes the message (its `id` set to the request's),
//!   `"none"` no answer, `"err"` a failure, `"pending"` an answer that
//!   never comes; anything else is a success `result`.
//! - `w<ms>`: let the (paused) clock run that long.
//!
//! A request's answer future runs on a task of its own, as in the relay, so
//! a cancel or a progress notification can arrive while it is in flight.
//!
//! # What must hold
//!
//! - no panic, no hang (the clock is paused, so every deadline fires);
//! - a request's answer, when there is one, is a response or an error with
//!   the request's own id; a notification gets none;
//! - whatever a layer sends on or answers serializes and parses back equal;
//! - a target's own check on each line a layer passes on ([`run_checked`]).

use mcp_chain_middleware::message::Incoming;
use mcp_chain_middleware::{BoxError, Direction, Envelope, Message};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::util::BoxCloneService;
use tower::{Service, ServiceExt};

/// The inner service every layer wraps in these targets.
pub type Inner = BoxCloneService<Envelope, Option<Message>, BoxError>;

/// Longest wait a script may ask for in one `w` op (paused clock: free).
const MAX_WAIT: Duration = Duration::from_secs(600);
/// How long the driver waits for an answer before calling it "never".
/// Longer than any deadline the targets configure.
const ANSWER_WAIT: Duration = Duration::from_secs(3 * 3600);
/// Scripts longer than this are cut: libFuzzer rewards speed.
const MAX_OPS: usize = 64;

/// Picks the config (by the first byte) and runs the script through it.
/// `build` wraps the inner service in the layer a config text describes.
/// Validates each config of a target once; the layers are shared by every
/// input (only for layers that keep no state between messages).
pub fn validate_all<C, L>(configs: &[&str], validate: impl Fn(&C) -> Result<L, String>) -> Vec<L>
where
    C: serde::de::DeserializeOwned,
{
    configs
        .iter()
        .map(|text| {
            let config: C = toml::from_str(text).expect("the target's config parses");
            validate(&config).expect("the target's config is valid")
        })
        .collect()
}

pub fn run(data: &[u8], configs: &[&str], build: impl Fn(&str, Inner) -> Option<Inner>) {
    run_indexed(data, configs.len(), |i, inner| build(configs[i], inner));
}

/// Like [`run`], with the config given by its index: for targets that keep
/// their validated (stateless) layers between inputs, since compiling the
/// patterns dominates an input's cost under the sanitizer.
pub fn run_indexed(data: &[u8], count: usize, build: impl Fn(usize, Inner) -> Option<Inner>) {
    run_checked(data, count, build, |_, _, _| {});
}

/// Like [`run_indexed`], with `forwarded(config, line)` called on the line
/// of every message the layer passes on to its inner service, as it would
/// be written: a target checks there that what is forwarded, read again
/// from its bytes, is what the layer judged.
pub fn run_checked(
    data: &[u8],
    count: usize,
    build: impl Fn(usize, Inner) -> Option<Inner>,
    forwarded: fn(usize, Direction, &[u8]),
) {
    let Some((&pick, script)) = data.split_first() else {
        return;
    };
    let config = usize::from(pick) % count;
    // A config that does not validate is a bug in the target, not a find.
    let answers: Arc<Mutex<VecDeque<Value>>> = Arc::default();
    let check = move |direction, line: &[u8]| forwarded(config, direction, line);
    let service = build(config, inner(answers.clone(), Arc::new(check)))
        .expect("the target's own configs are valid");
    let script = String::from_utf8_lossy(script);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    rt.block_on(drive(service, answers, &script));
}

/// A request's id, to compare its answer with.
fn expected_id(message: &Message) -> Option<Value> {
    match message {
        Message::Request(r) => Some(r.id.to_value()),
        _ => None,
    }
}

async fn drive(mut service: Inner, answers: Arc<Mutex<VecDeque<Value>>>, script: &str) {
    let mut tasks = Vec::new();
    for line in script.lines().take(MAX_OPS) {
        let Some(op) = line.chars().next() else {
            continue;
        };
        let rest = &line[op.len_utf8()..];
        let direction = match op {
            'c' => Direction::ToServer,
            's' => Direction::ToClient,
            'a' => {
                if let Ok(v) = serde_json::from_str(rest) {
                    answers.lock().expect("answers lock").push_back(v);
                }
                continue;
            }
            'w' => {
                let ms = rest.trim().parse::<u64>().unwrap_or(1);
                tokio::time::sleep(Duration::from_millis(ms).min(MAX_WAIT)).await;
                continue;
            }
            _ => continue,
        };
        let Ok(incoming) = Incoming::parse(rest.as_bytes()) else {
            continue;
        };
        let items = match incoming {
            Incoming::Single(item) => vec![item],
            Incoming::Batch(items) => items,
        };
        for message in items.into_iter().flatten() {
            // Answers never enter a chain: the relay hands them to the
            // task waiting for them.
            if matches!(message, Message::Response(_) | Message::Error(_)) {
                continue;
            }
            let expected = expected_id(&message);
            let envelope = Envelope::new(direction, message);
            let ready = match service.ready().await {
                Ok(ready) => ready,
                Err(_) => return,
            };
            let future = ready.call(envelope);
            tasks.push(tokio::spawn(async move {
                let answer = tokio::time::timeout(ANSWER_WAIT, future).await;
                check_answer(expected, answer);
            }));
            // Let spawned futures and timers make progress between messages.
            tokio::task::yield_now().await;
        }
    }
    for task in tasks {
        if let Err(e) = task.await {
            if e.is_panic() {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
}

fn check_answer(
    expected: Option<Value>,
    answer: Result<Result<Option<Message>, BoxError>, tokio::time::error::Elapsed>,
) {
    let Ok(Ok(Some(message))) = answer else {
        return;
    };
    round_trips(&message);
    match expected {
        Some(id) => match &message {
            Message::Response(r) => assert_eq!(r.id.to_value(), id, "answer to another id"),
            Message::Error(e) => assert_eq!(
                e.id.as_ref().map(|i| i.to_value()),
                Some(id),
                "error answer to another id"
            ),
            other => panic!("a request was answered with {other:?}"),
        },
        None => panic!("a notification was answered with {message:?}"),
    }
}

/// What a layer emits is one line that parses back to itself.
pub fn round_trips(message: &Message) {
    let mut line = Vec::new();
    message.write_line(&mut line);
    assert_eq!(line.pop(), Some(b'\n'));
    assert!(!line.contains(&b'\n'), "a message must stay on one line");
    match Incoming::parse(&line) {
        Ok(Incoming::Single(Ok(again))) => {
            // Byte for byte: `Value` equality ignores key order, and the
            // relay keeps it (this target once found it shuffled).
            let mut line_again = Vec::new();
            again.write_line(&mut line_again);
            if EXACT_FLOATS {
                assert_eq!(
                    String::from_utf8_lossy(&line_again[..line_again.len() - 1]),
                    String::from_utf8_lossy(&line),
                    "written twice, differently"
                );
            }
            if again != *message {
                // Tolerated only while EXACT_FLOATS is off: see its doc.
                assert!(
                    values_match(&again.to_value(), &message.to_value()),
                    "round trip changed it:\n  was {message:?}\n  now {again:?}"
                );
            }
        }
        other => panic!(
            "{} does not parse back: {other:?}",
            String::from_utf8_lossy(&line)
        ),
    }
}

/// Whether floats must come back exactly. serde_json without its
/// `float_roundtrip` feature parsed some decimals (halfway cases) to the
/// neighbouring f64, so the relay wrote another number than it read: found
/// by this target, fixed by enabling the feature (regression test
/// `numbers_reach_the_server_unchanged` in tests/hostile.rs). `false`
/// tolerates a few units in the last place, should that ever be needed.
pub const EXACT_FLOATS: bool = true;

/// Equal, or (while [`EXACT_FLOATS`] is off) equal but for float rounding.
pub fn values_match(a: &Value, b: &Value) -> bool {
    a == b || (!EXACT_FLOATS && same_but_floats(a, b))
}

/// Equal, except that floats may differ by a few units in the last place.
fn same_but_floats(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x != y => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
                (x - y).abs() <= (x.abs().max(y.abs()) * 4.0 * f64::EPSILON)
            }
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_but_floats(x, y))
        }
        // Order-insensitive, as `Value`'s own equality is.
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, vx)| y.get(k).is_some_and(|vy| same_but_floats(vx, vy)))
        }
        _ => a == b,
    }
}

/// What the inner service calls with each line it is handed.
type Forwarded = Arc<dyn Fn(Direction, &[u8]) + Send + Sync>;

/// The inner service: answers requests from the script, and hands the
/// line of each message it gets to `forwarded`.
fn inner(answers: Arc<Mutex<VecDeque<Value>>>, forwarded: Forwarded) -> Inner {
    BoxCloneService::new(tower::service_fn(move |env: Envelope| {
        round_trips(&env.message);
        let mut line = Vec::new();
        env.message.write_line(&mut line);
        forwarded(env.direction, &line[..line.len() - 1]);
        let scripted = answers.lock().expect("answers lock").pop_front();
        async move {
            let Message::Request(request) = env.message else {
                return Ok(None);
            };
            let id = request.id;
            let answer = match scripted {
                None => Message::response(id, serde_json::json!({"content": []})),
                Some(Value::String(s)) if s == "none" => return Ok(None),
                Some(Value::String(s)) if s == "err" => return Err(BoxError::from("inner failed")),
                Some(Value::String(s)) if s == "pending" => {
                    std::future::pending::<()>().await;
                    return Ok(None);
                }
                Some(Value::Object(mut map)) => {
                    map.insert("jsonrpc".into(), "2.0".into());
                    map.insert("id".into(), id.to_value());
                    match Message::from_value(Value::Object(map.clone())) {
                        Ok(m @ (Message::Response(_) | Message::Error(_))) => m,
                        _ => Message::response(id, Value::Object(map)),
                    }
                }
                Some(other) => Message::response(id, other),
            };
            Ok(Some(answer))
        }
    }))
}
