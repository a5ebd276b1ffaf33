//! The audit layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_middleware::audit::AuditConfig;
use tower::util::BoxCloneService;
use tower::Layer;

const CONFIGS: &[&str] = &[
    r#"
path = "/dev/null"
payloads = true
"#,
    r#"
path = "/dev/null"
"#,
    r#"
path = "/dev/full"
on_write_error = "refuse"
payloads = true
"#,
    r#"
path = "/dev/full"
on_write_error = "forward"
"#,
];

fuzz_target!(|data: &[u8]| {
    mcp_chain_fuzz::run(data, CONFIGS, |text, inner| {
        let layer = toml::from_str::<AuditConfig>(text).ok()?.validate().ok()?;
        Some(BoxCloneService::new(layer.layer(inner)))
    });
});
