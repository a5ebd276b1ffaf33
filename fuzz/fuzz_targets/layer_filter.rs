//! The filter layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_middleware::filter::{FilterConfig, FilterLayer};
use std::sync::OnceLock;
use tower::util::BoxCloneService;
use tower::Layer;

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
    mcp_chain_fuzz::run_indexed(data, CONFIGS.len(), |i, inner| {
        Some(BoxCloneService::new(layers()[i].clone().layer(inner)))
    });
});
