//! mcp-chain: an MCP middleware proxy.
//!
//! To the client it is an ordinary MCP server on stdin/stdout (or over
//! HTTP: the front); to the server (a child process, or a URL) an ordinary
//! client. Every message, both ways, passes through a tower stack of
//! layers declared in TOML.
//!
//! # Layout
//!
//! - [`cli`]: the command line (clap).
//! - `logging`: tracing to stderr.
//! - [`config`]: TOML → checked [`config::Config`] (`${VAR}`, places in errors).
//! - `transport`: how bytes cross a pipe: newline-delimited JSON framing,
//!   our stdio, the outgoing queues and their writer task, the process's
//!   budget of bytes in flight.
//! - `peer`: either end of a session as the relay sees it (a source of
//!   messages parsed once, a sink, a lifecycle), whatever carries its bytes.
//! - `connector`: the innermost service of each chain: id mapping, pending answers.
//! - `layers`: the one table of the layers a `[[middleware]]` entry names.
//! - `chain`: `[[middleware]]` → the two tower stacks.
//! - [`relay`]: a reading side built from each of two peers, dispatch, and
//!   shutdown order.
//! - `upstream`: the server end (a child and its supervisor, or a URL),
//!   started as a peer.
//! - `mcp_http`: MCP over HTTP as the front and URL upstreams both speak
//!   it (header names, revisions, the routing headers both ways).
//! - `front`: the chain served over Streamable HTTP (and legacy HTTP+SSE)
//!   to many clients: sessions, their routers, the guard (hosts, origins,
//!   tokens), the OAuth resource server, 2026-07-28 requests without a
//!   session.
//! - `pool`: the shared pool of server connections the front's sessions
//!   use with `upstream_sessions = "shared"`.
//! - `oauth`: mcp-chain as the OAuth client of a server at a URL:
//!   discovery, registration, the browser login, the token store, and the
//!   `login`, `logout` and `auth status` commands.
//! - `callers`: `when` and `unless`, a layer for some callers only.
//! - `reload`: SIGHUP and a watched config taken up without a restart.
//! - `telemetry`: OpenTelemetry spans, metrics and `/metrics`.
//! - `args`: what the command line makes of the config and of the server after `--`.
//! - `bundle`: `mcp-chain bundle`, a Desktop Extension (.mcpb) of a guarded server.
//! - `clients`: `mcp-chain clients`, `wrap`, `unwrap`: MCP clients' config files.
//! - `check`: `mcp-chain check`, the effective config as a person reads it.
//! - `listed`: `mcp-chain check --list`, what a client would be offered.
//! - `pins`: `mcp-chain pin list|accept`.
//! - `memory`: how the allocator is asked to keep memory it reuses.
//! - `platform`: what differs between Linux, macOS and Windows (process
//!   trees, a dead parent, stop signals, the browser), one module per
//!   concern.
//!
//! The message model and the layers live in the `mcp-chain-middleware` crate.

// Built without remote upstreams (the macOS check), the code the front
// shares with them (routing headers, answers read back) has fewer users.
#![cfg_attr(not(feature = "remote"), allow(dead_code))]

pub mod cli;
pub mod config;
pub mod logging;
pub mod memory;
pub mod relay;

mod approvals;
mod args;
mod books;
mod bundle;
mod callers;
mod chain;
mod check;
mod clients;
mod connector;
mod console;
mod front;
mod gateway;
mod layers;
mod listed;
mod mcp_http;
#[cfg(feature = "remote")]
mod oauth;
mod peer;
mod pins;
mod platform;
mod pool;
mod reload;
mod serve;
#[cfg(feature = "state")]
mod state;
#[cfg(feature = "telemetry")]
mod telemetry;
mod transport;
mod upstream;

use cli::{Cli, Command};
use config::Config;
use relay::Ending;
use std::process::ExitCode;

/// Reloading the config while serving: a config read from a file can be
/// read again (SIGHUP, `[proxy] watch_config`).
#[derive(Default)]
struct Reloading(Option<(reload::Reloader, reload::Followed)>);

impl Reloading {
    fn of(config: &Config) -> Self {
        Self(reload::Reloader::new(config))
    }

    /// Starts following the triggers (within the runtime); the policy the
    /// sessions follow. Without a file, a SIGHUP is said to change nothing
    /// (rather than end mcp-chain, its default action).
    fn start(self, watch: bool) -> Option<reload::Followed> {
        let Some((reloader, followed)) = self.0 else {
            let (tx, mut rx) = tokio::sync::mpsc::channel(1);
            platform::signals::reloads(tx);
            tokio::spawn(async move {
                while rx.recv().await.is_some() {
                    tracing::warn!("SIGHUP: no config file to read again (--config names one)");
                }
            });
            return None;
        };
        let triggers = reload::Triggers::new(reloader.path(), watch);
        tokio::spawn(reloader.run(triggers));
        Some(followed)
    }
}

/// A task serving beside the sessions (telemetry's `/metrics`).
type Background = Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>;

/// Telemetry as `main` runs it: on when configured, nothing otherwise.
#[derive(Default)]
struct Telemetry {
    #[cfg(feature = "telemetry")]
    on: Option<telemetry::Telemetry>,
}

impl Telemetry {
    #[cfg(feature = "telemetry")]
    fn start(config: &Config) -> Result<Self, telemetry::TelemetryError> {
        let settings = config.telemetry.resolve(|name| std::env::var(name).ok());
        let on = settings
            .as_ref()
            .map(telemetry::Telemetry::start)
            .transpose()?;
        Ok(Self { on })
    }

    /// Without the `telemetry` feature, a `[telemetry]` table is refused
    /// at start rather than ignored.
    #[cfg(not(feature = "telemetry"))]
    fn start(config: &Config) -> Result<Self, &'static str> {
        match config.telemetry.resolve(|name| std::env::var(name).ok()) {
            Some(_) => Err("telemetry is configured, but this mcp-chain was built without it (the `telemetry` feature)"),
            None => Ok(Self::default()),
        }
    }

    fn tracing_layer(&mut self) -> Option<logging::Telemetry> {
        #[cfg(feature = "telemetry")]
        return self
            .on
            .as_mut()
            .and_then(telemetry::Telemetry::tracing_layer);
        #[cfg(not(feature = "telemetry"))]
        None
    }

    fn background(&mut self) -> Background {
        #[cfg(feature = "telemetry")]
        if let Some(task) = self
            .on
            .as_mut()
            .and_then(telemetry::Telemetry::serve_metrics)
        {
            return Some(Box::pin(task));
        }
        None
    }

    fn shutdown(self) {
        #[cfg(feature = "telemetry")]
        if let Some(on) = self.on {
            on.shutdown();
        }
    }
}

/// Runs the command line; the exit code says how it went.
pub fn main(mut cli: Cli) -> ExitCode {
    args::take_policy_override(&mut cli);
    let level = cli.log_level.as_deref();
    let config = match args::effective_config(&cli) {
        Ok(config) => config,
        Err(message) => {
            logging::init(level, None, false);
            eprintln!("mcp-chain: {message}");
            return ExitCode::FAILURE;
        }
    };
    // Telemetry is for serving: `check`, `pin`, `login` export nothing.
    let mut telemetry = match cli.command.is_none() {
        true => match Telemetry::start(&config) {
            Ok(telemetry) => telemetry,
            Err(message) => {
                logging::init(level, None, false);
                eprintln!("mcp-chain: {message}");
                return ExitCode::FAILURE;
            }
        },
        false => Telemetry::default(),
    };
    let console = cli.command.is_none() && config.console.is_some();
    logging::init(level, telemetry.tracing_layer(), console);
    let code = run(&cli, config, telemetry.background());
    telemetry.shutdown();
    code
}

/// What `cli` asks for, logging and telemetry up.
fn run(cli: &Cli, config: Config, background: Background) -> ExitCode {
    let reloading = match cli.command {
        None => Reloading::of(&config),
        Some(_) => Reloading::default(),
    };
    match &cli.command {
        Some(Command::Check { server, list }) => {
            check::run(&config, &args::upstream_for(&config, cli, server), *list)
        }
        Some(Command::Pin { action }) => {
            let server = match &config.gateway {
                Some(gateway) => Some(approvals::gateway_of(gateway)),
                None => args::upstream_for(&config, cli, &cli.server)
                    .ok()
                    .map(|upstream| approvals::server_of(&upstream)),
            };
            pins::run(&config, server.as_deref(), action)
        }
        Some(Command::Console) => console::run_command(cli.config.as_deref()),
        Some(Command::Approve { action }) => approvals::run(&config, action),
        Some(Command::Clients) => clients::run_clients(),
        Some(Command::Bundle(args)) => bundle::run(args),
        Some(Command::Wrap {
            target,
            policy,
            gateway,
        }) => clients::run_wrap(target, policy.as_deref(), *gateway),
        Some(Command::Unwrap { target }) => clients::run_unwrap(target),
        Some(command @ (Command::Login { .. } | Command::Logout { .. } | Command::Auth { .. })) => {
            auth_command(&config, command)
        }
        None if config.gateway.is_some() => serve_gateway(config, cli, background, reloading),
        None => match args::upstream_for(&config, cli, &cli.server) {
            Ok(upstream) => {
                let server = approvals::server_of(&upstream);
                let served = relay::Served::One(upstream);
                serve_or_listen(config, served, server, cli, background, reloading)
            }
            Err(message) => {
                eprintln!("mcp-chain: {message}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Serves `[servers.*]` behind one mcp-chain, over stdio or the front.
fn serve_gateway(
    config: Config,
    cli: &Cli,
    background: Background,
    reloading: Reloading,
) -> ExitCode {
    let Some(gateway) = config.gateway.clone() else {
        return ExitCode::FAILURE;
    };
    if !cli.server.is_empty() {
        eprintln!("mcp-chain: the command after `--` and [servers.*] both name what to serve; give one or the other");
        return ExitCode::FAILURE;
    }
    let server = approvals::gateway_of(&gateway);
    let served = relay::Served::Many(gateway::Gateway::new(&config, gateway));
    serve_or_listen(config, served, server, cli, background, reloading)
}

/// Serves `served` over the HTTP front when one listens, else over stdio.
fn serve_or_listen(
    config: Config,
    served: relay::Served,
    server: String,
    cli: &Cli,
    background: Background,
    reloading: Reloading,
) -> ExitCode {
    match config.front.listen {
        Some(_) => listen(
            config,
            served,
            server,
            cli.allow_unauthenticated,
            background,
            reloading,
        ),
        None => serve(&config, &served, server, background, reloading),
    }
}

/// `login`, `logout`, `auth status`.
#[cfg(feature = "remote")]
fn auth_command(config: &Config, command: &Command) -> ExitCode {
    match command {
        Command::Login { url } => match runtime() {
            Ok(runtime) => runtime.block_on(oauth::commands::run_login(config, url)),
            Err(code) => code,
        },
        Command::Logout { url } => match runtime() {
            Ok(runtime) => runtime.block_on(oauth::commands::run_logout(config, url)),
            Err(code) => code,
        },
        _ => match runtime() {
            Ok(runtime) => runtime.block_on(oauth::commands::run_status(config)),
            Err(code) => code,
        },
    }
}

#[cfg(not(feature = "remote"))]
fn auth_command(_: &Config, _: &Command) -> ExitCode {
    eprintln!("mcp-chain: this mcp-chain was built without remote upstreams (the `remote` feature), and so without OAuth");
    ExitCode::FAILURE
}

/// One thread: the relay is I/O-bound, and hand-offs between threads would
/// cost more per message than the work itself.
fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("mcp-chain: cannot start the runtime: {e}");
            ExitCode::FAILURE
        })
}

/// What runs beside the chain, before anything is served: telemetry's
/// background, the shared state (`[state]`), the approvals' book and the
/// console.
fn start_beside(
    runtime: &tokio::runtime::Runtime,
    config: &Config,
    server: String,
    background: Background,
) -> Result<(), ExitCode> {
    if let Some(task) = background {
        runtime.spawn(task);
    }
    if let Some(state) = &config.state {
        #[cfg(feature = "state")]
        let started = runtime
            .block_on(state::start(state))
            .map_err(|e| e.to_string());
        #[cfg(not(feature = "state"))]
        let started: Result<(), String> = Err(format!(
            "[state] {}: this mcp-chain was built without shared state (the `state` feature)",
            state.shown_url()
        ));
        if let Err(message) = started {
            eprintln!("mcp-chain: {message}");
            return Err(ExitCode::FAILURE);
        }
    }
    pins::share_as(config, &server);
    approvals::install_book(server.clone());
    console::serve_beside(runtime, config, server)
}

/// Serves the chain over HTTP (`--listen`, `[front] listen`).
fn listen(
    config: Config,
    upstream: relay::Served,
    server: String,
    allow_unauthenticated: bool,
    background: Background,
    reloading: Reloading,
) -> ExitCode {
    let Some(addr) = config.front.listen else {
        return ExitCode::FAILURE;
    };
    if let Err(message) = front::check_exposure(&config.front, addr, allow_unauthenticated) {
        eprintln!("mcp-chain: {message}");
        return ExitCode::FAILURE;
    }
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    if let Err(code) = start_beside(&runtime, &config, server, background) {
        return code;
    }
    let stop = || platform::signals::shutdown(false);
    let watch = config.watch_config;
    let served = runtime.block_on(async {
        let policy = reloading.start(watch);
        front::run(config, upstream, addr, stop(), policy).await
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp-chain: {message}");
            ExitCode::FAILURE
        }
    }
}

fn serve(
    config: &Config,
    upstream: &dyn relay::Starts,
    server: String,
    background: Background,
    reloading: Reloading,
) -> ExitCode {
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    if let Err(code) = start_beside(&runtime, config, server, background) {
        return code;
    }
    let result = runtime.block_on(async {
        let stdin = transport::stdio::stdin().map_err(|e| format!("stdin: {e}"))?;
        let stdout = transport::stdio::stdout().map_err(|e| format!("stdout: {e}"))?;
        // If whoever started us dies without closing our stdin, stop anyway.
        let stop = platform::signals::shutdown(true);
        let policy = reloading.start(config.watch_config).map(|f| f.policy);
        relay::run(config, upstream, stdin, stdout, stop, policy)
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
