//! The rewrite layer's request and response paths, both directions, driven by a
//! script (see the `mcp_chain_fuzz` crate doc) under each config below.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_middleware::rewrite::{RewriteConfig, RewriteLayer};
use std::sync::OnceLock;
use tower::util::BoxCloneService;
use tower::Layer;

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
    // Prefixes alone: list names are spliced into the server's text.
    r#"
tool_prefix = "b_"
prompt_prefix = "q_"
"#,
    "",
];

/// The layers, validated once: they hold no state between messages (no
/// lock, no atomic), so sharing them across inputs keeps runs reproducible.
fn layers() -> &'static [RewriteLayer] {
    static LAYERS: OnceLock<Vec<RewriteLayer>> = OnceLock::new();
    LAYERS.get_or_init(|| mcp_chain_fuzz::validate_all(CONFIGS, RewriteConfig::validate))
}

fuzz_target!(|data: &[u8]| {
    mcp_chain_fuzz::run_indexed(data, CONFIGS.len(), |i, inner| {
        Some(BoxCloneService::new(layers()[i].clone().layer(inner)))
    });
});
