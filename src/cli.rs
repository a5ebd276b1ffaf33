//! The command line.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// mcp-chain: an MCP middleware proxy.
///
/// Speaks MCP on stdin/stdout, starts the real server as a child process (or
/// reaches it at a URL) and passes every message, both ways, through the
/// layers of a TOML config (audit, filter, rewrite, rate_limit, timeout,
/// limit, validate, pin, approve, log).
///
/// Examples:
///   mcp-chain -- npx -y @modelcontextprotocol/server-everything
///   mcp-chain -- https://mcp.example.com/mcp
///   mcp-chain --config fs.toml
///   mcp-chain --config fs.toml -- uvx mcp-server-time
///   mcp-chain --listen 127.0.0.1:8080 -- npx -y @modelcontextprotocol/server-everything
///   mcp-chain check --config fs.toml
///   mcp-chain pin list --config fs.toml
///   mcp-chain login https://mcp.example.com/mcp
///   mcp-chain auth status
#[derive(Debug, Parser)]
#[command(name = "mcp-chain", version, verbatim_doc_comment)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// TOML file with [upstream], [proxy] and [[middleware]] tables.
    #[arg(
        long,
        short = 'c',
        value_name = "FILE",
        env = "MCP_CHAIN_CONFIG",
        global = true
    )]
    pub config: Option<PathBuf>,

    /// A policy file that replaces --config's: what a Desktop Extension
    /// (`mcp-chain bundle`) passes when its user chose one. Empty, or a
    /// `${user_config.…}` the host left unfilled, means none.
    #[arg(long, value_name = "FILE", global = true)]
    pub policy_override: Option<String>,

    /// Log level for mcp-chain's own logs on stderr (error, warn, info,
    /// debug, trace, or a tracing filter such as "mcp_chain=debug");
    /// RUST_LOG is used when this is not given. Default: warn.
    #[arg(long, value_name = "LEVEL", global = true)]
    pub log_level: Option<String>,

    /// Largest message accepted on either pipe, in bytes; a longer line is
    /// answered with an error and skipped. Overrides proxy.max_message_bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_message_bytes: Option<u64>,

    /// At shutdown, how long to wait for owed answers and then for the server
    /// to exit before it is terminated ("250ms", "5s"). Overrides
    /// proxy.shutdown_grace.
    #[arg(long, value_name = "DURATION")]
    pub shutdown_grace: Option<String>,

    /// Serve the chain over HTTP on this address (127.0.0.1:8080) instead
    /// of stdio: Streamable HTTP at /mcp, legacy HTTP+SSE at /sse, one
    /// server session per client session. Overrides front.listen.
    #[arg(long, value_name = "ADDR", global = true)]
    pub listen: Option<String>,

    /// Listen on an address other than loopback without front.tokens:
    /// anyone who can reach the port can use the server.
    #[arg(long)]
    pub allow_unauthenticated: bool,

    /// A header sent with every request to a URL upstream, as "NAME: VALUE";
    /// repeatable, added to [upstream] headers. Prefer `headers` in the
    /// config with ${VAR} for secrets: a command line is visible to ps.
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME: VALUE",
        global = true
    )]
    pub headers: Vec<String>,

    /// A header sent with every request to a URL upstream, its value read
    /// from an environment variable: "NAME=VARIABLE" (what `mcp-chain wrap`
    /// writes for a client's remote entry, so the value never shows in a
    /// command line); repeatable.
    #[arg(long = "header-env", value_name = "NAME=VARIABLE", global = true)]
    pub header_env: Vec<String>,

    /// `Authorization: Bearer` and the value of an environment variable,
    /// sent with every request to a URL upstream (what `mcp-chain wrap`
    /// writes for a Codex entry's `bearer_token_env_var`).
    #[arg(long = "bearer-env", value_name = "VARIABLE", global = true)]
    pub bearer_env: Option<String>,

    /// The server after `--`: a command to start, or one http(s):// URL to
    /// reach over Streamable HTTP; replaces the config's [upstream].
    #[arg(last = true, value_name = "SERVER")]
    pub server: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate the config, print the effective chain, exit 0 (valid) or 1.
    Check {
        /// With [servers.*]: start every server and list what the client
        /// would see (tools, prompts, resources, templates), with each
        /// name left out and why.
        #[arg(long)]
        list: bool,
        /// A server command to check instead of [upstream], after `--`.
        #[arg(last = true, value_name = "SERVER_COMMAND")]
        server: Vec<String>,
    },
    /// Show or accept what drifted from the pins of the config's `pin`
    /// layer (tools, prompts, resource templates that changed or are new).
    Pin {
        #[command(subcommand)]
        action: PinAction,
    },
    /// Log in to a server at a URL that asks for OAuth, once.
    ///
    /// Opens the browser (MCP_CHAIN_OPEN_URL names another command to
    /// open the page) and stores the tokens for later runs, which refresh
    /// them. [upstream.oauth] of the config applies when its [upstream]
    /// url is this one; with [state] and its key in the config, the tokens
    /// are kept there, for every replica.
    Login {
        /// The server's URL.
        url: String,
    },
    /// Forget the tokens stored for a server (with [state] and its key in
    /// the config: for every replica too).
    Logout {
        /// The server's URL.
        url: String,
    },
    /// The approvals that last (approve with remember = "always"): list
    /// them, or revoke them (running instances ask again at once).
    Approve {
        #[command(subcommand)]
        action: ApproveAction,
    },
    /// Each MCP client found on this machine: its config file, its
    /// servers, and whether mcp-chain guards each.
    Clients,
    /// Put mcp-chain in front of a client's servers, in the client's own
    /// config file (backed up first; `unwrap` puts every entry back).
    Wrap {
        #[command(flatten)]
        target: crate::clients::Target,
        /// The policy (a mcp-chain config) each wrapped server runs with.
        #[arg(long, value_name = "FILE")]
        policy: Option<std::path::PathBuf>,
        /// Replace the servers by one mcp-chain serving them all (a
        /// `[servers.*]` config written from them, the policy its shared
        /// chain).
        #[arg(long)]
        gateway: bool,
    },
    /// Write a Desktop Extension (.mcpb) that runs a server behind
    /// mcp-chain with a policy: Claude Desktop installs it in one click.
    Bundle(crate::bundle::BundleArgs),
    /// Put a client's wrapped entries back exactly as they were.
    Unwrap {
        #[command(flatten)]
        target: crate::clients::Target,
    },
    /// Print the URL of the console ([console]: the approval page) of the
    /// running mcp-chain for the config named with -c, or say none runs.
    Console,
    /// What is stored for the servers mcp-chain has logged in to.
    Auth {
        #[command(subcommand)]
        action: AuthAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum ApproveAction {
    /// Each lasting approval, numbered: tool, server, arguments, when, who.
    List,
    /// Take back an approval by its number in `list`, or all of them.
    Revoke {
        /// The approval's number in `mcp-chain approve list`.
        index: Option<usize>,
        /// Every lasting approval.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuthAction {
    /// Each server with tokens: its client, scopes and expiry (never the
    /// tokens themselves); with [state] and its key in the config, those
    /// every replica shares first.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum PinAction {
    /// List what drifted (changed fields, or new) and what is pinned.
    List,
    /// Accept the drift of the names given (every drift when none): what
    /// the server lists now becomes what is pinned. A running mcp-chain
    /// picks it up within a second and tells its client.
    Accept {
        /// Tool, prompt or resource-template names.
        names: Vec<String>,
    },
}

/// Why the command line cannot be run as given.
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("--listen: {0}")]
    Listen(#[from] crate::config::BadListen),
    #[error("--shutdown-grace: {0}")]
    ShutdownGrace(#[from] mcp_chain_middleware::units::BadUnit),
    #[error(transparent)]
    Url(#[from] crate::config::BadUrlUpstream),
    #[error("no server to run: give one after `--` (mcp-chain -- npx -y @modelcontextprotocol/server-everything, or a URL) or in [upstream] of --config")]
    NoServer,
    #[error("--header is for a URL upstream; this one is a command")]
    HeaderForCommand,
    #[error("--header-env {0:?}: expected NAME=VARIABLE, with VARIABLE set")]
    HeaderEnv(String),
}
