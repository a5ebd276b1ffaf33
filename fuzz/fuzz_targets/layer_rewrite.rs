//! The rewrite layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tower::util::BoxCloneService;
use tower::Layer;
use mcp_chain_middleware::rewrite::RewriteConfig;

const CONFIGS: &[&str] = &[
    r#"
tool_prefix = "fs_"
redact_arguments = true
[tools.read_file]
name = "read"
description = "Read a file from the team share"
arguments = { encoding = "utf-8" }
defaults = { limit = 10 }
[tools.echo]
name = "say"
[prompts.summarize]
name = "team_summary"
[[redact]]
pattern = "AKIA[0-9A-Z]{16}"
[[redact]]
pattern = "@github_token"
"#,
    r#"
prompt_prefix = "p_"
[tools.echo]
defaults = { text = "default", nested = { a = [1, 2] } }
[[redact]]
pattern = "(secret)-(\\d+)"
replacement = "$1-***"
[[redact]]
pattern = "(?<word>pass\\w*)"
replacement = "${word}:[REDACTED]"
"#,
    "",
];

fuzz_target!(|data: &[u8]| {
    mcp_chain_fuzz::run(data, CONFIGS, |text, inner| {
        let layer = toml::from_str::<RewriteConfig>(text).ok()?.validate().ok()?;
        Some(BoxCloneService::new(layer.layer(inner)))
    });
});
