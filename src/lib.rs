//! mcp-chain: an MCP middleware proxy.
//!
//! To the client it is an ordinary MCP server on stdin/stdout; to the server
//! (a child process) an ordinary client. Every message, both ways, passes
//! through a tower stack of layers declared in TOML.
//!
//! # Layout
//!
//! - [`cli`]: the command line (clap).
//! - `logging`: tracing to stderr.
//! - [`config`]: TOML → checked [`config::Config`] (`${VAR}`, places in errors).
//! - `transport`: how bytes reach a peer: newline-delimited JSON framing, our
//!   stdio pipes, the child process (spawn, stderr drain, process-group
//!   shutdown), the outgoing queues and their writer task.
//! - `connector`: the innermost service of each chain: id mapping, pending answers.
//! - `layers`: the one table of the layers a `[[middleware]]` entry names.
//! - `chain`: `[[middleware]]` → the two tower stacks.
//! - [`relay`]: the read loops, dispatch, and shutdown order.
//!
//! The message model and the layers live in the `mcp-chain-middleware` crate.

pub mod cli;
pub mod config;
pub mod logging;
pub mod memory;
pub mod relay;

mod chain;
mod connector;
mod layers;
mod transport;
mod upstream;

use cli::{Cli, Command};
use config::{Config, UpstreamConfig};
use relay::Ending;
use std::io::Write;
use std::process::ExitCode;

/// Runs the command line; the exit code says how it went.
pub fn main(cli: Cli) -> ExitCode {
    let config = match effective_config(&cli) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("mcp-chain: {message}");
            return ExitCode::FAILURE;
        }
    };
    match &cli.command {
        Some(Command::Check { server }) => check(&config, server),
        None => serve(&config, &cli.server),
    }
}

fn effective_config(cli: &Cli) -> Result<Config, String> {
    let mut config = match &cli.config {
        Some(path) => Config::load(path).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    if let Some(bytes) = cli.max_message_bytes {
        config.max_message_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    if let Some(grace) = &cli.shutdown_grace {
        config.shutdown_grace =
            config::parse_duration(grace).map_err(|e| format!("--shutdown-grace: {e}"))?;
    }
    Ok(config)
}

/// The server to run: the command after `--`, else `[upstream]`.
fn upstream_for(config: &Config, server: &[String]) -> Result<UpstreamConfig, String> {
    if let Some((command, args)) = server.split_first() {
        let mut upstream = config.upstream.clone().unwrap_or_default();
        command.clone_into(&mut upstream.command);
        upstream.args = args.to_vec();
        return Ok(upstream);
    }
    config.upstream.clone().ok_or_else(|| {
        "no server to run: give one after `--` (mcp-chain -- npx -y @modelcontextprotocol/server-everything) or in [upstream] of --config".to_owned()
    })
}

fn check(config: &Config, server: &[String]) -> ExitCode {
    let upstream = upstream_for(config, server);
    let mut out = std::io::stdout().lock();
    let origin = config.path.as_ref().map_or_else(
        || "(no config file)".to_owned(),
        |p| p.display().to_string(),
    );
    let mut report = format!("{origin}: ok\n");
    match &upstream {
        Ok(u) => {
            report += &format!("upstream: {} {}\n", u.command, u.args.join(" "));
            if !u.env.is_empty() {
                let keys: Vec<_> = u.env.keys().map(String::as_str).collect();
                report += &format!("  env: {}\n", keys.join(", "));
            }
            if let Some(cwd) = &u.cwd {
                report += &format!("  cwd: {}\n", cwd.display());
            }
            if u.restart.on_failure {
                report += &format!(
                    "  restart: on-failure (at most {}, backoff from {:?})\n",
                    u.restart.max_restarts, u.restart.backoff
                );
            }
        }
        Err(_) => report += "upstream: none (give one after `--` when running)\n",
    }
    report += &format!(
        "proxy: max_message_bytes = {}, shutdown_grace = {:?}\n",
        config.max_message_bytes, config.shutdown_grace
    );
    let names = config.layer_names();
    if names.is_empty() {
        report += "chain: empty (a transparent relay)\n";
    } else {
        report += "chain, client → server (the server → client path is the reverse):\n";
        for (i, name) in names.iter().enumerate() {
            report += &format!("  {}. {name}\n", i + 1);
        }
    }
    // `check` prints its report on stdout: it is not a proxy session.
    if out.write_all(report.as_bytes()).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn serve(config: &Config, server: &[String]) -> ExitCode {
    let upstream = match upstream_for(config, server) {
        Ok(u) => u,
        Err(message) => {
            eprintln!("mcp-chain: {message}");
            return ExitCode::FAILURE;
        }
    };
    // If whoever started us dies without closing our stdin, stop anyway.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM));
    // One thread: the relay is I/O-bound, and hand-offs between threads
    // would cost more per message than the work itself.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-chain: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let stdin = transport::stdio::stdin().map_err(|e| format!("stdin: {e}"))?;
        let stdout = transport::stdio::stdout().map_err(|e| format!("stdout: {e}"))?;
        relay::run(config, &upstream, stdin, stdout, signals())
            .await
            .map_err(|e| e.to_string())
    });
    match result {
        Ok(Ending::Clean) => ExitCode::SUCCESS,
        Ok(Ending::ServerGone(reason)) => {
            eprintln!("mcp-chain: {reason}");
            ExitCode::FAILURE
        }
        Err(message) => {
            eprintln!("mcp-chain: {message}");
            ExitCode::FAILURE
        }
    }
}

/// One message per SIGINT or SIGTERM: the first starts a graceful
/// shutdown, a second cuts it short.
fn signals() -> tokio::sync::mpsc::Receiver<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                    if tx.send(()).await.is_err() {
                        break;
                    }
                }
            });
        }
        _ => tracing::warn!(
            "cannot listen for signals; SIGINT and SIGTERM will end mcp-chain at once"
        ),
    }
    rx
}
