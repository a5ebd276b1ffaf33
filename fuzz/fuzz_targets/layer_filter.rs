//! The filter layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_middleware::filter::{FilterConfig, FilterLayer};
use mcp_chain_middleware::message::Incoming;
use mcp_chain_middleware::{BoxError, Direction, Envelope};
use std::sync::{Arc, Mutex, OnceLock};
use tower::util::BoxCloneService;
use tower::{Layer, Service};

const CONFIGS: &[&str] = &[
    r#"
tools = { deny = ["*secret*", "re:(?i)admin.*"] }
resources = { deny = ["file:///etc/**", "mem://secret/*"] }
prompts = { allow = ["greet", "summ?ry"] }
methods = { deny = ["sampling/createMessage", "notifications/roots/*", "logging/setLevel"] }
"#,
    r#"
tools = { allow = ["read_*", "echo", "[a-c]*"], deny = ["read_secret"] }
resource_templates = { deny = ["re:db://.*"] }
resources = { allow = ["file:///srv/**"] }
"#,
    r#"
methods = { allow = ["initialize", "ping", "tools/*", "notifications/*"] }
"#,
    "",
];

/// The layers, validated once: they hold no state between messages (no
/// lock, no atomic), so sharing them across inputs keeps runs reproducible.
fn layers() -> &'static [FilterLayer] {
    static LAYERS: OnceLock<Vec<FilterLayer>> = OnceLock::new();
    LAYERS.get_or_init(|| mcp_chain_fuzz::validate_all(CONFIGS, FilterConfig::validate))
}

fuzz_target!(|data: &[u8]| {
    let build = |i: usize, inner| Some(BoxCloneService::new(layers()[i].clone().layer(inner)));
    mcp_chain_fuzz::run_checked(data, CONFIGS.len(), build, judged_as_forwarded);
});

/// What the filter passed on is what it judged: the line it forwarded,
/// parsed again from its bytes and put before the same filter, is passed
/// on again, unchanged. A message judged on one reading and forwarded as
/// another (a duplicate key, an escape, a payload edited behind the
/// verdict) fails here.
fn judged_as_forwarded(config: usize, direction: Direction, line: &[u8]) {
    let Ok(Incoming::Single(Ok(message))) = Incoming::parse(line) else {
        panic!("forwarded a line that is not one message: {}", String::from_utf8_lossy(line));
    };
    let again = Arc::new(Mutex::new(None));
    let record = again.clone();
    let recorder = tower::service_fn(move |env: Envelope| {
        *record.lock().expect("lock") = Some(env.message);
        std::future::ready(Ok::<_, BoxError>(None))
    });
    let mut filter = layers()[config].clone().layer(recorder);
    // The verdict is given in `call`: the future is not needed.
    drop(filter.call(Envelope::new(direction, message.clone())));
    let passed = again.lock().expect("lock").take();
    assert_eq!(
        passed.as_ref(),
        Some(&message),
        "forwarded, but judged otherwise from its bytes: {}",
        String::from_utf8_lossy(line)
    );
}
