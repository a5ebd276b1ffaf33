//! The validate layer's request and response paths, both directions, driven
//! by a script (see the `mcp_chain_fuzz` crate doc): listings teach it
//! schemas (whatever the script lists, compiled or not), calls are checked
//! against them, and a call before any listing makes it ask for one through
//! the script's server.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_middleware::validate::ValidateConfig;
use tower::util::BoxCloneService;
use tower::Layer;

const CONFIGS: &[&str] = &["output = true", "output = false"];

fuzz_target!(|data: &[u8]| {
    mcp_chain_fuzz::run(data, CONFIGS, |text, inner| {
        let layer = toml::from_str::<ValidateConfig>(text).ok()?.validate().ok()?;
        Some(BoxCloneService::new(layer.layer(inner)))
    });
});
