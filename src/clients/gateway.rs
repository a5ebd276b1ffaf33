//! `mcp-chain wrap --gateway`: a client's servers replaced by one
//! mcp-chain serving them all ([gateway.md](../../docs/gateway.md)).
//!
//! The chosen entries become the `[servers.NAME]` tables of a config
//! written beside the record in the state directory (private to the user:
//! a URL server's headers are in it), after the policy's text, whose
//! `[[middleware]]` is then the shared chain; the client's file gets one
//! entry, `mcp-chain`, running that config. The servers object is changed
//! whole and kept whole, so `unwrap` gives it back byte for byte.

use super::json::{Entry, Shape};
use super::render::toml_inline;
use super::{Client, Target};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// The entry the client gets.
const NAME: &str = "mcp-chain";

/// The servers object's new text, the chosen servers folded into one
/// mcp-chain; the gateway's config written (unless a dry run).
pub(super) fn fold(
    target: &Target,
    client: Client,
    whole: &Entry,
    policy: Option<&Path>,
    ours: &str,
    said: &mut Vec<String>,
) -> Result<Option<String>, String> {
    if let Some(why) = whole.scattered() {
        return Err(why.to_owned());
    }
    let members: Vec<Entry> = whole.members().collect();
    if members.iter().any(|m| m.name == NAME) {
        return Err(format!("it already has a server named {NAME:?}"));
    }
    let mut chosen = Vec::new();
    for member in &members {
        let named = target.all || target.servers.contains(&member.name);
        match member.shape(client) {
            Ok(Shape::Stdio { command, .. }) if named && super::wrap::is_ours(&command) => {
                said.push(format!(
                    "{}: already behind mcp-chain; left as it is",
                    member.name
                ));
            }
            Ok(shape) if named => chosen.push((member, shape)),
            Err(why) if named => said.push(format!("{}: left as it is: {why}", member.name)),
            _ => {}
        }
    }
    for name in &target.servers {
        if !members.iter().any(|m| &m.name == name) {
            return Err(format!("no server {name:?}"));
        }
    }
    if chosen.is_empty() {
        said.push("no server to serve behind one mcp-chain".into());
        return Ok(None);
    }
    let mut config = String::from(
        "# Written by `mcp-chain wrap --gateway`: the client's servers, behind one\n\
         # mcp-chain. `mcp-chain unwrap` puts them back in the client's file.\n",
    );
    if let Some(policy) = policy {
        let text = std::fs::read_to_string(policy)
            .map_err(|e| format!("--policy {}: {e}", policy.display()))?;
        let _ = write!(
            config,
            "\n# The policy ({}): the shared chain.\n{text}\n",
            policy.display()
        );
    }
    // The variables the servers' headers are read from: the client
    // passes them to mcp-chain (Codex only those its entry lists).
    let mut vars: Vec<String> = Vec::new();
    for (member, shape) in &chosen {
        config += &table(client, member, shape);
        if let Shape::Remote { from_env, .. } = shape {
            vars.extend(from_env.iter().map(|(_, var)| var.clone()));
        }
        // And those a Codex server was passed (its children inherit ours).
        if let Some(Value::Array(listed)) = member.value.get("env_vars") {
            vars.extend(listed.iter().filter_map(|v| v.as_str().map(str::to_owned)));
        }
    }
    let path = target_config(target, client)?;
    if !target.dry_run {
        mcp_chain_private::write_whole(&path, config.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // The headers' variables are set where the client runs it.
        let later = |name: &str| {
            vars.iter()
                .any(|v| v == name)
                .then(|| "set-later".to_owned())
        };
        if let Err(e) = crate::config::Config::load_with(&path, later) {
            let _ = std::fs::remove_file(&path);
            return Err(format!(
                "the gateway's config would not load ({e}); a policy for --gateway names no server"
            ));
        }
    }
    let mut entry = json!({"command": ours, "args": ["--config", path.display().to_string()]});
    if client.typed() {
        entry = json!({"type": "stdio", "command": ours, "args": entry["args"]});
    }
    if client == Client::Codex && !vars.is_empty() {
        let mut seen = std::collections::HashSet::new();
        vars.retain(|v| seen.insert(v.clone()));
        entry["env_vars"] = json!(vars);
    }
    let names: Vec<String> = chosen.iter().map(|(m, _)| m.name.clone()).collect();
    said.push(format!(
        "{} served behind one mcp-chain ({})",
        names.join(", "),
        path.display()
    ));
    Ok(Some(whole.replaced(&names, (NAME, &entry))))
}

/// Where the gateway's config for the target's file is written.
fn target_config(target: &Target, client: Client) -> Result<std::path::PathBuf, String> {
    let dir = crate::platform::dirs::state_dir()
        .map_err(|e| e.to_string())?
        .join("wrap");
    let place = super::edit::place_of(target)?;
    Ok(dir.join(format!("{}-gateway.toml", place.key(client))))
}

/// One `[servers.NAME]` table (TOML's basic strings read JSON's escapes).
fn table(client: Client, member: &Entry, shape: &Shape) -> String {
    let name: String = member
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // mcp-chain expands `${VAR}` in its config; only Claude Code expands
    // its entries' variables too, so elsewhere a `${` is the entry's text.
    let literal = |value: &Value| -> Value {
        match client {
            Client::ClaudeCode => value.clone(),
            _ => escaped(value),
        }
    };
    let mut out = format!("\n[servers.{}]\n", json!(name));
    match shape {
        Shape::Stdio { command, args } => {
            let _ = writeln!(out, "command = {}", literal(&json!(command)));
            let _ = writeln!(out, "args = {}", toml_inline(&literal(&json!(args))));
            if let Some(Value::String(cwd)) = member.value.get("cwd") {
                let _ = writeln!(out, "cwd = {}", literal(&json!(cwd)));
            }
            let env = member.env();
            if !env.is_empty() {
                let env = literal(&Value::Object(env));
                let _ = writeln!(out, "env = {}", toml_inline(&env));
            }
        }
        Shape::Remote {
            url,
            headers,
            from_env,
        } => {
            let _ = writeln!(out, "url = {}", literal(&json!(url)));
            let mut all: serde_json::Map<String, Value> = headers
                .iter()
                .map(|(k, v)| (k.clone(), literal(&json!(v))))
                .collect();
            // Headers the client read from its variables: read from the
            // same ones, which the gateway's entry passes on.
            for (header, var) in from_env {
                let (header, value) = match header == super::json::BEARER {
                    true => ("Authorization".to_owned(), format!("Bearer ${{{var}}}")),
                    false => (header.clone(), format!("${{{var}}}")),
                };
                all.insert(header, json!(value));
            }
            if !all.is_empty() {
                let _ = writeln!(out, "headers = {}", toml_inline(&Value::Object(all)));
            }
        }
    }
    out
}

/// `value` with every `${` in its strings written `$${` (mcp-chain's
/// config then reads it as the text it is).
fn escaped(value: &Value) -> Value {
    match value {
        Value::String(s) => json!(s.replace("${", "$${")),
        Value::Array(items) => items.iter().map(escaped).collect(),
        Value::Object(members) => members
            .iter()
            .map(|(k, v)| (k.clone(), escaped(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => other.clone(),
    }
}
