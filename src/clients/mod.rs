//! The MCP clients people already run, and their config files: where each
//! keeps its servers, in which shape, so `mcp-chain wrap` can put
//! mcp-chain in front of them and `unwrap` take it away again, and
//! `mcp-chain clients` can say what is guarded.
//!
//! | client | file (Linux; macOS, Windows in [`Client::files`]) | servers under | remote entries |
//! |---|---|---|---|
//! | `claude-desktop` | `~/.config/Claude/claude_desktop_config.json` | `mcpServers` | (stdio only) |
//! | `claude-code` | `~/.claude.json`, `./.mcp.json` | `mcpServers` | `url` + `type` `http`/`sse` |
//! | `cursor` | `~/.cursor/mcp.json`, `./.cursor/mcp.json` | `mcpServers` | `url` |
//! | `vscode` | `~/.config/Code/User/mcp.json`, `./.vscode/mcp.json` (JSON with comments) | `servers` (`type` required) | `url` + `type` |
//! | `windsurf` | `~/.codeium/windsurf/mcp_config.json` | `mcpServers` | `serverUrl` |
//! | `gemini` | `~/.gemini/settings.json` | `mcpServers` | `url` (SSE), `httpUrl` |
//! | `codex` | `~/.codex/config.toml` (`$CODEX_HOME`; TOML) | `[mcp_servers.NAME]` | `url`, `http_headers`, `env_http_headers`, `bearer_token_env_var` |
//!
//! The files are edited as text (`json.rs`, `toml.rs`): only the entries wrapped
//! change, every other byte stays, and what each entry was is kept in the
//! state directory (`wrap.rs`) so `unwrap` puts it back byte for byte.

mod edit;
mod gateway;
mod json;
mod render;
mod shape;
mod toml;
mod wrap;

pub(crate) use wrap::{run_clients, run_unwrap, run_wrap};

use std::path::PathBuf;

/// A client whose config `wrap` edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Windsurf,
    Gemini,
    Codex,
}

/// Which client, which file, which entries (`wrap` and `unwrap`).
#[derive(Debug, clap::Args)]
pub struct Target {
    /// The client whose config is edited.
    #[arg(long, value_enum)]
    pub client: Client,
    /// Every server of the file.
    #[arg(long)]
    pub all: bool,
    /// The config file, when it is not where the client keeps it by default.
    #[arg(long, value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Which of the client's files: `user` (its first), `project` (this
    /// directory's), or, for claude-code, `local` (this directory's servers
    /// kept in ~/.claude.json under `projects`). Default: the first that exists.
    #[arg(long, value_enum)]
    pub scope: Option<Scope>,
    /// Print the change as a unified diff; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The servers (their names in the file).
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,
}

/// Where in a client's files its servers are (Claude Code's own words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    User,
    Project,
    Local,
}

impl Client {
    pub(crate) const ALL: [Client; 7] = [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Cursor,
        Client::Vscode,
        Client::Windsurf,
        Client::Gemini,
        Client::Codex,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "claude-desktop",
            Self::ClaudeCode => "claude-code",
            Self::Cursor => "cursor",
            Self::Vscode => "vscode",
            Self::Windsurf => "windsurf",
            Self::Gemini => "gemini",
            Self::Codex => "codex",
        }
    }

    /// The member the servers are under.
    fn servers_key(self) -> &'static str {
        match self {
            Self::Vscode => "servers",
            Self::Codex => "mcp_servers",
            _ => "mcpServers",
        }
    }

    /// Whether the file may hold comments and trailing commas.
    fn allows_comments(self) -> bool {
        matches!(self, Self::Vscode)
    }

    /// The members a remote entry names its URL with, and the transport
    /// each means (`None`: the entry's `type` says, else Streamable HTTP).
    fn url_keys(self) -> &'static [(&'static str, Option<&'static str>)] {
        match self {
            Self::Windsurf => &[("serverUrl", None)],
            Self::Gemini => &[("httpUrl", Some("streamable-http")), ("url", Some("sse"))],
            Self::ClaudeDesktop => &[],
            _ => &[("url", None)],
        }
    }

    /// Whether a stdio entry carries `"type": "stdio"` (VS Code requires it).
    fn typed(self) -> bool {
        matches!(self, Self::Vscode)
    }

    /// The files the client keeps its servers in, user's first, where
    /// this OS puts them.
    pub(crate) fn files(self) -> Vec<PathBuf> {
        let home = home();
        let config = config_dir();
        let cwd = std::env::current_dir().unwrap_or_default();
        match self {
            Self::ClaudeDesktop => vec![config.join("Claude").join("claude_desktop_config.json")],
            Self::ClaudeCode => vec![home.join(".claude.json"), cwd.join(".mcp.json")],
            Self::Cursor => vec![
                home.join(".cursor").join("mcp.json"),
                cwd.join(".cursor").join("mcp.json"),
            ],
            Self::Vscode => vec![
                config.join("Code").join("User").join("mcp.json"),
                cwd.join(".vscode").join("mcp.json"),
            ],
            Self::Windsurf => vec![home
                .join(".codeium")
                .join("windsurf")
                .join("mcp_config.json")],
            Self::Gemini => vec![home.join(".gemini").join("settings.json")],
            Self::Codex => {
                let dir = std::env::var_os("CODEX_HOME")
                    .map_or_else(|| home.join(".codex"), PathBuf::from);
                vec![dir.join("config.toml")]
            }
        }
    }
}

/// The server entries of a client's file, in order (the servers object
/// itself last, `json::WHOLE`), under `project`'s entry for Claude Code's
/// local scope; an error names the line.
fn entries(text: &str, client: Client, project: Option<&str>) -> Result<Vec<json::Entry>, String> {
    match client {
        Client::Codex => toml::entries(text),
        _ => json::entries(text, client, project),
    }
}

/// The key Claude Code keeps a directory's local servers under in
/// `~/.claude.json`: its absolute path (with `/` on Windows too).
pub(crate) fn project_key(dir: &std::path::Path) -> String {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let key = dir.display().to_string();
    match cfg!(windows) {
        true => key.replace('\\', "/"),
        false => key,
    }
}

fn home() -> PathBuf {
    std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" })
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// Where applications keep their settings: `%APPDATA%`, `~/Library/Application
/// Support`, `$XDG_CONFIG_HOME` or `~/.config`.
fn config_dir() -> PathBuf {
    if cfg!(windows) {
        return std::env::var_os("APPDATA")
            .map(PathBuf::from)
            .unwrap_or_default();
    }
    if cfg!(target_os = "macos") {
        return home().join("Library").join("Application Support");
    }
    match std::env::var_os("XDG_CONFIG_HOME") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => home().join(".config"),
    }
}
