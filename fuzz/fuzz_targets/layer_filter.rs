//! The filter layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tower::util::BoxCloneService;
use tower::Layer;
use mcp_chain_middleware::filter::FilterConfig;

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

fuzz_target!(|data: &[u8]| {
    mcp_chain_fuzz::run(data, CONFIGS, |text, inner| {
        let layer = toml::from_str::<FilterConfig>(text).ok()?.validate().ok()?;
        Some(BoxCloneService::new(layer.layer(inner)))
    });
});
