//! `mcp-chain pin list|accept`: what drifted from the pins of the config's
//! `pin` layer, shown to a person and accepted by them. The running proxy
//! reads the pin file again when it changes, so an accept here takes
//! effect there without a restart; with `[state]`, on every replica.

use crate::cli::PinAction;
use crate::config::Config;
use crate::layers::AnyLayer;
use mcp_chain_middleware::pin::file;
use mcp_chain_middleware::shown::shown;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// How much of a name a line shows (names are the server's to choose).
const MAX_NAME: usize = 128;

/// Names, for the replicas' shared pins (`[state]`), the server each pin
/// layer of `config` guards: `server` for the chain's (the process's
/// server, as grants name it), a gateway server's name for its own chain.
pub(crate) fn share_as(config: &Config, server: &str) {
    let pins = |chain: &[crate::layers::Entry]| -> Vec<std::path::PathBuf> {
        chain
            .iter()
            .filter_map(|entry| match &entry.layer {
                AnyLayer::Pin(pin) => Some(pin.pin_file().to_owned()),
                _ => None,
            })
            .collect()
    };
    for path in pins(&config.chain) {
        file::share_as(&path, server);
    }
    for each in config.gateway.iter().flat_map(|g| &g.servers) {
        for path in pins(&each.chain) {
            file::share_as(&path, &format!("server {}", each.name));
        }
    }
}

pub(crate) fn run(config: &Config, server: Option<&str>, action: &PinAction) -> ExitCode {
    if let Some(server) = server {
        share_as(config, server);
    }
    let files: Vec<&Path> = config
        .chain
        .iter()
        .filter_map(|entry| match &entry.layer {
            AnyLayer::Pin(pin) => Some(pin.pin_file()),
            _ => None,
        })
        .collect();
    if files.is_empty() {
        eprintln!("mcp-chain: the config has no pin layer (give one with --config)");
        return ExitCode::FAILURE;
    }
    let mut report = String::new();
    let mut failed = false;
    for path in files {
        let _ = writeln!(report, "{}:", path.display());
        match action {
            PinAction::List => match file::list(path) {
                Ok((drifts, pinned)) => {
                    // The names are the server's: escaped and cut, so none
                    // can repaint the terminal or pass for another line.
                    for d in &drifts {
                        let name = shown(&d.name, MAX_NAME);
                        let _ = writeln!(report, "  {:<18} {name:<24} {}", d.kind(), d.what());
                    }
                    for (kind, name) in &pinned {
                        let name = shown(name, MAX_NAME);
                        let _ = writeln!(report, "  {kind:<18} {name:<24} pinned");
                    }
                    if drifts.is_empty() && pinned.is_empty() {
                        report += "  nothing pinned yet\n";
                    }
                }
                Err(e) => {
                    failed = true;
                    let _ = writeln!(report, "  error: {e}");
                }
            },
            PinAction::Accept { names } => match accept(config, server.is_some(), path, names) {
                Ok(accepted) => {
                    for d in &accepted {
                        let name = shown(&d.name, MAX_NAME);
                        let _ = writeln!(report, "  accepted {} {name} ({})", d.kind(), d.what());
                    }
                    // What `scan` flags is accepted by name only: said, so
                    // it is never left behind unnoticed.
                    let left = file::list(path).map(|(d, _)| d).unwrap_or_default();
                    let flagged: Vec<_> = left.iter().filter(|d| !d.flagged.is_empty()).collect();
                    for d in &flagged {
                        let name = shown(&d.name, MAX_NAME);
                        let _ = writeln!(
                            report,
                            "  not accepted {} {name} ({}): accept it by name to pin it all the same",
                            d.kind(),
                            d.what()
                        );
                    }
                    if accepted.is_empty() && flagged.is_empty() {
                        report += "  no drift to accept\n";
                    }
                }
                Err(e) => {
                    failed = true;
                    let _ = writeln!(report, "  error: {e}");
                }
            },
        }
    }
    // stdout: this is the command's output, not the protocol channel.
    let _ = std::io::stdout().write_all(report.as_bytes());
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Accepts in the pin file; with `[state]`, in the replicas' shared pins
/// too (every running replica takes it up within a second).
fn accept(
    config: &Config,
    named: bool,
    path: &Path,
    names: &[String],
) -> Result<Vec<file::Drift>, String> {
    let Some(state) = &config.state else {
        return file::accept(path, names).map_err(|e| e.to_string());
    };
    if !named {
        // The replicas' pins are kept by the server they pin.
        return Err("with [state], the pins are the server's: name it in the config ([upstream] or [servers.*]); words after `pin accept` are names of drifts".into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        #[cfg(feature = "state")]
        crate::state::start(state)
            .await
            .map_err(|e| e.to_string())?;
        #[cfg(not(feature = "state"))]
        return Err(format!(
            "[state] {}: this mcp-chain was built without shared state (the `state` feature)",
            state.shown_url()
        ));
        #[cfg(feature = "state")]
        file::accept_shared(path, names)
            .await
            .map_err(|e| e.to_string())
    })
}
