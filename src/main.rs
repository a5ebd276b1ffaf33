//! The `mcp-chain` binary: a thin shell over the library.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    mcp_chain::memory::tune_allocator();
    let cli = mcp_chain::cli::Cli::parse();
    let code = mcp_chain::main(cli);
    if std::env::var_os("MCP_CHAIN_COUNT_LINES").is_some() {
        // For tests of the one-parse rule: every message parsed once where
        // it enters and written once where it leaves.
        use mcp_chain_middleware::counts;
        eprintln!(
            "mcp-chain: lines parsed {}, written {}",
            counts::parsed(),
            counts::written()
        );
    }
    code
}
