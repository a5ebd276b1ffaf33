//! What the command line makes of the config and of the server: the flags
//! that override `[proxy]` and `[front]` keys (`--max-message-bytes`,
//! `--listen`, `--shutdown-grace`), a Desktop Extension's policy override,
//! and the server after `--` (a URL or a command, with `--header` and
//! `--header-env`), which replaces `[upstream]`.

use crate::cli::{ArgError, Cli};
use crate::config::{self, CommandConfig, Config, Transport, UpstreamConfig, UrlConfig};

/// A Desktop Extension's user chose another policy (`--policy-override`):
/// it is the config. Empty, or a `${user_config.…}` the host left
/// unfilled, means none.
pub(crate) fn take_policy_override(cli: &mut Cli) {
    let chosen = cli
        .policy_override
        .as_deref()
        .filter(|v| !v.is_empty() && !v.starts_with("${"));
    if let Some(policy) = chosen {
        cli.config = Some(std::path::PathBuf::from(policy));
    }
}

pub(crate) fn effective_config(cli: &Cli) -> Result<Config, ArgError> {
    let mut config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    if let Some(bytes) = cli.max_message_bytes {
        config.max_message_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        // One message must always fit the budget of bytes in flight.
        config.max_bytes_in_flight = config.max_bytes_in_flight.max(config.max_message_bytes);
    }
    if let Some(listen) = &cli.listen {
        config.front.listen = Some(config::parse_listen(listen)?);
    }
    if let Some(grace) = &cli.shutdown_grace {
        config.shutdown_grace = config::parse_duration(grace)?;
    }
    Ok(config)
}

/// The server to run: what `--` names (a URL, or a command), else
/// `[upstream]`; `--header`s added to a URL's headers.
pub(crate) fn upstream_for(
    config: &Config,
    cli: &Cli,
    server: &[String],
) -> Result<UpstreamConfig, ArgError> {
    let mut upstream = match server {
        [url] if config::is_url(url) => {
            let mut remote = UrlConfig::new(url)?;
            // The URL replaces [upstream]'s; how to reach it stays, when it
            // is the same kind of URL.
            if let Some(UpstreamConfig::Url(base)) = &config.upstream {
                let websocket = |t| t == Transport::WebSocket;
                if websocket(base.transport) == websocket(remote.transport) {
                    remote.transport = base.transport;
                    remote.envelope = base.envelope;
                }
                remote.headers.clone_from(&base.headers);
                remote.ca_file.clone_from(&base.ca_file);
                // How to log in is the configured server's own.
                if base.url == remote.url {
                    remote.oauth.clone_from(&base.oauth);
                }
            }
            UpstreamConfig::Url(remote)
        }
        [command, args @ ..] => {
            let mut child = match &config.upstream {
                Some(UpstreamConfig::Command(base)) => base.clone(),
                _ => CommandConfig::default(),
            };
            command.clone_into(&mut child.command);
            child.args = args.to_vec();
            UpstreamConfig::Command(child)
        }
        [] => config.upstream.clone().ok_or(ArgError::NoServer)?,
    };
    if !cli.headers.is_empty() || !cli.header_env.is_empty() || cli.bearer_env.is_some() {
        let UpstreamConfig::Url(remote) = &mut upstream else {
            return Err(ArgError::HeaderForCommand);
        };
        for line in &cli.headers {
            remote.add_header_line(line)?;
        }
        for named in &cli.header_env {
            let value = named
                .split_once('=')
                .and_then(|(name, var)| Some((name, std::env::var(var).ok()?)));
            let Some((name, value)) = value else {
                return Err(ArgError::HeaderEnv(named.clone()));
            };
            remote.add_header_line(&format!("{name}: {value}"))?;
        }
        if let Some(var) = &cli.bearer_env {
            let Ok(token) = std::env::var(var) else {
                return Err(ArgError::HeaderEnv(var.clone()));
            };
            remote.add_header_line(&format!("Authorization: Bearer {token}"))?;
        }
    }
    Ok(upstream)
}
