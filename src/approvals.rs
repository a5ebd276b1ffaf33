//! The approve book as mcp-chain keeps it: in the state directory
//! (`approve/`: `grants.json`, `decisions.jsonl`, private to the user),
//! for the server this process guards, or with `[state]` in Redis for
//! every replica; and `mcp-chain approve list|revoke`, which read and
//! change the grants every running instance reads at its next gated call.

use crate::cli::ApproveAction;
use crate::config::UpstreamConfig;
use mcp_chain_middleware::approve::book::{self, Book, Grant};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

fn dir() -> Option<PathBuf> {
    crate::platform::dirs::state_dir()
        .ok()
        .map(|d| d.join("approve"))
}

/// The server as a grant, a record and a switch name it: the program and a
/// fingerprint of its command line (never its arguments, which may hold a
/// secret), or the URL without its query or user info.
pub(crate) fn server_of(upstream: &UpstreamConfig) -> String {
    match upstream {
        UpstreamConfig::Command(c) => book::command_server(&c.command, &c.args),
        UpstreamConfig::Url(u) => {
            format!("{}{}", u.url.origin().ascii_serialization(), u.url.path())
        }
    }
}

/// Installs the process's book for `server` (as [`server_of`] names
/// it), when there is a state directory (without one, "Always" holds for
/// the session only).
pub(crate) fn install_book(server: String) {
    if let Some(dir) = dir() {
        book::install(Arc::new(Book::new(dir, server)));
    }
}

/// The servers of a gateway, as grants and switches name them: each
/// server's name, in order.
pub(crate) fn gateway_of(gateway: &crate::config::GatewayConfig) -> String {
    let names: Vec<&str> = gateway.servers.iter().map(|s| s.name.as_str()).collect();
    format!("gateway ({})", names.join(", "))
}

/// `mcp-chain approve list|revoke`: the grants of this machine's state
/// directory, or, with `[state]` in the config, those every replica
/// shares.
pub(crate) fn run(config: &crate::config::Config, action: &ApproveAction) -> ExitCode {
    let Some(dir) = dir() else {
        eprintln!("mcp-chain approve: no state directory (set MCP_CHAIN_STATE_DIR)");
        return ExitCode::FAILURE;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-chain approve: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(act(config, Book::new(dir, String::new()), action)) {
        Ok(out) => {
            let _ = std::io::stdout().write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("mcp-chain approve: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn act(
    config: &crate::config::Config,
    book: Book,
    action: &ApproveAction,
) -> Result<String, String> {
    if let Some(state) = &config.state {
        #[cfg(feature = "state")]
        crate::state::start(state)
            .await
            .map_err(|e| e.to_string())?;
        #[cfg(not(feature = "state"))]
        return Err(format!(
            "[state] {}: this mcp-chain was built without shared state (the `state` feature)",
            state.shown_url()
        ));
    }
    let grants = book.all().await.map_err(|e| e.to_string())?;
    match action {
        ApproveAction::List => {
            let mut out = String::new();
            if grants.is_empty() {
                out.push_str("no lasting approvals\n");
            }
            for (n, grant) in grants.iter().enumerate() {
                out.push_str(&listed(n, grant));
            }
            Ok(out)
        }
        ApproveAction::Revoke { index, all } => {
            let gone: Vec<&Grant> = match (index, all) {
                (_, true) => grants.iter().collect(),
                (Some(n), false) => match grants.get(*n) {
                    Some(grant) => vec![grant],
                    None => {
                        return Err(format!(
                        "revoke: there is no approval {n} (`mcp-chain approve list` numbers them)"
                    ))
                    }
                },
                (None, false) => return Err("revoke: name an approval's number, or --all".into()),
            };
            for grant in &gone {
                book.revoke(grant).await.map_err(|e| e.to_string())?;
            }
            Ok(format!(
                "revoked {}; running instances ask again from their next call\n",
                gone.len()
            ))
        }
    }
}

/// One grant as `list` shows it (names escaped and cut: a server chose them).
fn listed(n: usize, grant: &Grant) -> String {
    let shown = |t: &str| mcp_chain_middleware::shown::shown(t, 200);
    let arguments = match &grant.arguments {
        Some(hash) => format!("these arguments ({hash})"),
        None => "any arguments".to_owned(),
    };
    format!(
        "{n}: {} on {}, {arguments}; granted at {} by {}; rule {}\n",
        shown(&grant.tool),
        shown(&grant.server),
        grant.granted_at,
        grant
            .caller
            .as_deref()
            .map_or("this machine".to_owned(), shown),
        grant.revision,
    )
}
