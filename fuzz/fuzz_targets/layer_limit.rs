//! The limit layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below: a
//! result is passed, cut (and then fits, as valid JSON) or refused, never
//! anything else.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_middleware::limit::LimitConfig;
use tower::util::BoxCloneService;
use tower::Layer;

const CONFIGS: &[&str] = &[
    r#"
max_result_bytes = 64
action = "truncate"
tools = { "big_*" = "1KiB", "free" = "none" }
methods = { "resources/read" = 48, "tools/list" = 200 }
max_list_items = 2
"#,
    r#"
max_result_bytes = 16
"#,
    r#"
max_list_items = 1
"#,
];

fuzz_target!(|data: &[u8]| {
    mcp_chain_fuzz::run(data, CONFIGS, |text, inner| {
        let layer = toml::from_str::<LimitConfig>(text).ok()?.validate().ok()?;
        Some(BoxCloneService::new(layer.layer(inner)))
    });
});
