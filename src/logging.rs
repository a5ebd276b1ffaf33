//! Logs go to stderr, always: stdout is the protocol channel.

use tracing_subscriber::EnvFilter;

/// Filter used when neither `--log-level` nor `RUST_LOG` says otherwise:
/// quiet enough for Claude Desktop's log file, loud enough for problems,
/// and everything a configured `log` layer writes.
const DEFAULT_LEVEL: &str = "warn,mcp_chain::messages=trace";

/// What a bare level leaves out: the HTTP libraries' own chatter (each
/// connection pooled and reused) drowns mcp-chain's at debug. Name them to
/// see it (`--log-level debug,hyper_util=debug`).
const QUIET_LIBRARIES: &str = "hyper=info,hyper_util=info,reqwest=info,rustls=info";

pub fn init(level: Option<&str>) {
    let filter = match level {
        Some(level) if !level.contains('=') => {
            EnvFilter::try_new(format!("{level},{QUIET_LIBRARIES}"))
        }
        Some(level) => EnvFilter::try_new(level),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new(DEFAULT_LEVEL)),
    }
    .unwrap_or_else(|e| {
        // Logging is not up yet; this is the one message that cannot use it.
        eprintln!("mcp-chain: bad log level ({e}); using {DEFAULT_LEVEL}");
        EnvFilter::new(DEFAULT_LEVEL)
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .init();
}
