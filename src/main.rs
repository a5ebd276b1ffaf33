//! The `mcp-chain` binary: a thin shell over the library.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    mcp_chain::memory::tune_allocator();
    let cli = mcp_chain::cli::Cli::parse();
    mcp_chain::logging::init(cli.log_level.as_deref());
    mcp_chain::main(cli)
}
