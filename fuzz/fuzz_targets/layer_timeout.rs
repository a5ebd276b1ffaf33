//! The timeout layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_middleware::timeout::TimeoutConfig;
use tower::util::BoxCloneService;
use tower::Layer;

const CONFIGS: &[&str] = &[
    r#"
default = "2s"
tools = { "slow_*" = "300s", "long_job" = "none", "re:fast.*" = "10ms" }
methods = { "resources/read" = "10s", "ping" = "none" }
reset_on_progress = true
max_total = "30s"
"#,
    r#"
tools = { "*" = "1s" }
"#,
    r#"
default = "50ms"
reset_on_progress = true
"#,
];

fuzz_target!(|data: &[u8]| {
    mcp_chain_fuzz::run(data, CONFIGS, |text, inner| {
        let layer = toml::from_str::<TimeoutConfig>(text)
            .ok()?
            .validate()
            .ok()?;
        Some(BoxCloneService::new(layer.layer(inner)))
    });
});
