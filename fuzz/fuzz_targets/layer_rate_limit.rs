//! The rate_limit layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_middleware::rate_limit::RateLimitConfig;
use tower::util::BoxCloneService;
use tower::Layer;

const CONFIGS: &[&str] = &[
    r#"
rules = [
  { tool = "search*", rate = "5/s", burst = 2 },
  { method = "resources/*", rate = "100/min" },
  { method = "sampling/createMessage", rate = "1/min", direction = "server_to_client" },
  { rate = "200/s" },
]
"#,
    r#"
on_limit = "wait"
max_wait = "2s"
rules = [
  { tool = "*", rate = "2/s", burst = 1 },
  { method = "ping", rate = "1/10s", direction = "both" },
]
"#,
    r#"
on_limit = "wait"
rules = [{ rate = "1/min", burst = 1, direction = "both" }]
"#,
];

fuzz_target!(|data: &[u8]| {
    mcp_chain_fuzz::run(data, CONFIGS, |text, inner| {
        let layer = toml::from_str::<RateLimitConfig>(text)
            .ok()?
            .validate()
            .ok()?;
        Some(BoxCloneService::new(layer.layer(inner)))
    });
});
