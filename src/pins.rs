//! `mcp-chain pin list|accept`: what drifted from the pins of the config's
//! `pin` layer, shown to a person and accepted by them. The running proxy
//! reads the pin file again when it changes, so an accept here takes
//! effect there without a restart.

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

pub(crate) fn run(config: &Config, action: &PinAction) -> ExitCode {
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
            PinAction::Accept { names } => match file::accept(path, names) {
                Ok(accepted) if accepted.is_empty() => report += "  no drift to accept\n",
                Ok(accepted) => {
                    for d in &accepted {
                        let name = shown(&d.name, MAX_NAME);
                        let _ = writeln!(report, "  accepted {} {name} ({})", d.kind(), d.what());
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
