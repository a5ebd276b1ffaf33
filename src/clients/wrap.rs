//! `mcp-chain clients`, `wrap` and `unwrap`: a client's servers put behind
//! mcp-chain in the client's own config file, and back.
//!
//! Wrapping an entry: a command becomes mcp-chain's absolute path with
//! `--config POLICY -- COMMAND ARGS…` (its `env` and every other member
//! kept); a URL entry becomes mcp-chain in front of the URL, each header's
//! value moved into the entry's `env` and named with `--header-env`
//! (never on the command line, which `ps` shows). Every change is made
//! under a lock (one `wrap`/`unwrap` a file at a time), after a backup of
//! the file (`wrap/backups/` in the state directory), written to a
//! temporary file and renamed over, only if the file did not change since
//! it was read. What each entry was, and what it became, is kept in the
//! state directory (`wrap/<client>-<fingerprint>.json`, never in the
//! client's file, which some clients validate): `unwrap` puts the text
//! back byte for byte, and refuses an entry edited since.

use super::edit::{edit, fail, Mode};
use super::json::{self, Shape};
use super::{Client, Target};
use serde_json::{Map, Value};
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

pub(crate) fn run_clients() -> ExitCode {
    let mut out = String::new();
    for client in Client::ALL {
        for file in client.files().into_iter().filter(|f| f.is_file()) {
            out += &format!("{} {}\n", client.name(), file.display());
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) => {
                    out += &format!("  cannot be read: {e}\n");
                    continue;
                }
            };
            list(&mut out, client, &text, None);
            // Claude Code's local scope: each project's servers, kept in
            // the user's file.
            if client == Client::ClaudeCode {
                for project in projects(&text) {
                    out += &format!(
                        "  local scope of {}:\n",
                        mcp_chain_middleware::shown::shown(&project, 1000)
                    );
                    list(&mut out, client, &text, Some(&project));
                }
            }
        }
    }
    if out.is_empty() {
        out = "no client config found (mcp-chain wrap --config-file names one)\n".into();
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    ExitCode::SUCCESS
}

/// The servers of one file (or of one project's entry in it), a line each.
fn list(out: &mut String, client: Client, text: &str, project: Option<&str>) {
    let indent = if project.is_some() { "    " } else { "  " };
    let entries = match super::entries(text, client, project) {
        Ok(entries) => entries,
        Err(e) => return *out += &format!("{indent}cannot be read: {e}\n"),
    };
    let entries: Vec<_> = entries
        .into_iter()
        .filter(|e| e.name != json::WHOLE)
        .collect();
    if entries.is_empty() {
        *out += &format!("{indent}no servers\n");
    }
    for entry in entries {
        let what = match entry.shape(client) {
            Ok(Shape::Stdio { command, .. }) if is_ours(&command) => {
                "guarded by mcp-chain".to_owned()
            }
            Ok(Shape::Stdio { command, .. }) => format!("command {command}, not guarded"),
            Ok(Shape::Remote { url, .. }) => {
                format!("URL {}, not guarded", without_secrets(&url))
            }
            Err(why) => format!("not a shape mcp-chain knows ({why})"),
        };
        let line = format!("{}: {what}", entry.name);
        *out += &format!(
            "{indent}{}\n",
            mcp_chain_middleware::shown::shown(&line, 1000)
        );
    }
}

/// The projects of Claude Code's user file that keep servers of their own.
fn projects(text: &str) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(projects) = value.get("projects").and_then(Value::as_object) else {
        return Vec::new();
    };
    projects
        .iter()
        .filter(|(_, p)| {
            p.get("mcpServers")
                .and_then(Value::as_object)
                .is_some_and(|s| !s.is_empty())
        })
        .map(|(name, _)| name.clone())
        .collect()
}

pub(crate) fn run_wrap(target: &Target, policy: Option<&Path>, gateway: bool) -> ExitCode {
    let policy = match policy.map(std::path::absolute).transpose() {
        Ok(policy) => policy,
        Err(e) => return fail(&format!("--policy: {e}")),
    };
    if let Some(policy) = &policy {
        if let Err(e) = crate::config::Config::load(policy) {
            return fail(&format!("--policy {}: {e}", policy.display()));
        }
    }
    let ours = match std::env::current_exe().and_then(|p| p.canonicalize()) {
        Ok(path) => path.display().to_string(),
        Err(e) => return fail(&format!("cannot name this mcp-chain's own path: {e}")),
    };
    if gateway {
        let policy = policy.as_deref();
        return edit(target, Mode::Gateway, |client, whole, _, said| {
            super::gateway::fold(target, client, whole, policy, &ours, said)
        });
    }
    edit(target, Mode::Wrap, |client, entry, record, said| {
        let shape = match entry.shape(client) {
            Ok(shape) => shape,
            Err(why) => {
                said.push(format!("{}: left as it is: {why}", entry.name));
                return Ok(None);
            }
        };
        if matches!(&shape, Shape::Stdio { command, .. } if is_ours(command))
            || record.entries.contains_key(&entry.name)
        {
            said.push(format!("{}: already guarded by mcp-chain", entry.name));
            return Ok(None);
        }
        let mut args: Vec<String> = Vec::new();
        if let Some(policy) = &policy {
            args.extend(["--config".to_owned(), policy.display().to_string()]);
        }
        let mut env = Map::new();
        match shape {
            Shape::Stdio {
                command,
                args: theirs,
            } => {
                args.push("--".into());
                args.push(command);
                args.extend(theirs);
            }
            Shape::Remote {
                url,
                headers,
                from_env,
            } => {
                env = entry.env();
                for (name, value) in headers {
                    let var = header_variable(&name);
                    args.extend(["--header-env".to_owned(), format!("{name}={var}")]);
                    env.insert(var, Value::String(value));
                }
                // Headers the client read from its own variables: read
                // from the same ones.
                for (name, var) in from_env {
                    match name == json::BEARER {
                        true => args.extend(["--bearer-env".to_owned(), var]),
                        false => args.extend(["--header-env".to_owned(), format!("{name}={var}")]),
                    }
                }
                args.extend(["--".to_owned(), url]);
            }
        }
        said.push(format!("{}: guarded", entry.name));
        Ok(Some(entry.wrapped(client, &ours, &args, &env)))
    })
}

pub(crate) fn run_unwrap(target: &Target) -> ExitCode {
    edit(target, Mode::Unwrap, |_, entry, record, said| {
        let Some(kept) = record.entries.get(&entry.name) else {
            said.push(format!("{}: not wrapped by mcp-chain", entry.name));
            return Ok(None);
        };
        Ok(Some(kept.original.clone()))
    })
}

/// A URL as `clients` shows it: without user info or query, which may
/// hold a token.
fn without_secrets(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!("{}{}", u.origin().ascii_serialization(), u.path()),
        Err(_) => "(not a URL)".to_owned(),
    }
}

/// The variable a header's value is passed in.
fn header_variable(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("MCP_CHAIN_HEADER_{name}")
}

/// Whether a command is an mcp-chain.
pub(super) fn is_ours(command: &str) -> bool {
    Path::new(command)
        .file_stem()
        .is_some_and(|s| s == "mcp-chain")
}
