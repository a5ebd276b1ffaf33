//! `mcp-chain bundle`: a Desktop Extension (`.mcpb`) that runs a server
//! behind mcp-chain with a policy, so a person installs a guarded server
//! in Claude Desktop in one click.
//!
//! The bundle is a zip of `manifest.json` (MCPB manifest 0.4, the newest
//! the official `@anthropic-ai/mcpb` CLI knows), `server/mcp-chain` (this
//! binary, or `--binary` for another platform's build; its executable bit
//! kept) and `server/policy.toml`. Its `mcp_config` runs
//! `${__dirname}/server/mcp-chain --config ${__dirname}/server/policy.toml
//! --policy-override ${user_config.policy} -- SERVER…`: the bundled policy,
//! or the file the person chose at install (`user_config.policy`, type
//! `file`). Each `--secret NAME` is asked at install as a sensitive value
//! and passed to the server in its environment. The MCPB format has no
//! architecture selector: one bundle per platform (`--platform`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// MCPB manifest version written.
const MANIFEST_VERSION: &str = "0.4";

#[derive(Debug, clap::Args)]
pub struct BundleArgs {
    /// The policy (a mcp-chain config) the bundle runs its server with.
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// Where to write the bundle.
    #[arg(long, value_name = "FILE.mcpb")]
    out: PathBuf,
    /// The extension's name (lowercase, digits, hyphens); default: the
    /// server's program name.
    #[arg(long)]
    name: Option<String>,
    /// The platform the bundle is for: darwin, win32 or linux (default:
    /// this one).
    #[arg(long)]
    platform: Option<String>,
    /// The mcp-chain binary to put in (default: this one; another
    /// platform's needs its own build).
    #[arg(long, value_name = "FILE")]
    binary: Option<PathBuf>,
    /// An environment variable the server needs, asked at install as a
    /// secret (Claude Desktop keeps it in the OS keychain); repeatable.
    #[arg(long, value_name = "NAME")]
    secret: Vec<String>,
    /// The server: a command and its arguments, or a URL.
    #[arg(last = true, required = true, value_name = "SERVER")]
    server: Vec<String>,
}

pub(crate) fn run(args: &BundleArgs) -> ExitCode {
    match write(args) {
        Ok(size) => {
            // What was written, on stdout: `bundle` is no proxy session.
            let said = format!("{}: {size} bytes\n", args.out.display());
            let _ = std::io::stdout().write_all(said.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp-chain bundle: {e}");
            ExitCode::FAILURE
        }
    }
}

fn this_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        _ => "linux",
    }
}

fn write(args: &BundleArgs) -> Result<u64, String> {
    let platform = args.platform.as_deref().unwrap_or(this_platform());
    if !["darwin", "win32", "linux"].contains(&platform) {
        return Err(format!("--platform {platform:?}: darwin, win32 or linux"));
    }
    let binary = match &args.binary {
        Some(binary) => binary.clone(),
        None if platform == this_platform() => {
            std::env::current_exe().map_err(|e| e.to_string())?
        }
        None => {
            return Err(format!(
                "a bundle for {platform} needs that platform's mcp-chain: --binary FILE"
            ))
        }
    };
    let binary_bytes = std::fs::read(&binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    crate::config::Config::load(&args.policy)
        .map_err(|e| format!("--policy {}: {e}", args.policy.display()))?;
    let policy =
        std::fs::read(&args.policy).map_err(|e| format!("{}: {e}", args.policy.display()))?;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => default_name(&args.server),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(format!(
            "--name {name:?}: lowercase letters, digits and hyphens"
        ));
    }
    for secret in &args.secret {
        if secret.is_empty()
            || !secret
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "--secret {secret:?}: an environment variable's name"
            ));
        }
    }
    let exe = if platform == "win32" {
        "mcp-chain.exe"
    } else {
        "mcp-chain"
    };
    let manifest = manifest(&name, platform, exe, &args.server, &args.secret);
    let file =
        std::fs::File::create(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut zip = zip::ZipWriter::new(file);
    let plain = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    let zipped = (|| -> zip::result::ZipResult<()> {
        zip.start_file("manifest.json", plain)?;
        zip.write_all(
            serde_json::to_string_pretty(&manifest)
                .unwrap_or_default()
                .as_bytes(),
        )?;
        zip.start_file("server/policy.toml", plain)?;
        zip.write_all(&policy)?;
        zip.start_file(format!("server/{exe}"), plain.unix_permissions(0o755))?;
        zip.write_all(&binary_bytes)?;
        zip.finish()?;
        Ok(())
    })();
    zipped.map_err(|e| format!("{}: {e}", args.out.display()))?;
    std::fs::metadata(&args.out)
        .map(|m| m.len())
        .map_err(|e| e.to_string())
}

/// The server's program name, as an extension name.
fn default_name(server: &[String]) -> String {
    let first = server.first().map(String::as_str).unwrap_or("server");
    let base = match url::Url::parse(first) {
        Ok(url) if url.has_host() => url.host_str().unwrap_or("server").to_owned(),
        _ => std::path::Path::new(first)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let name: String = base
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{}-guarded", name.trim_matches('-'))
}

fn manifest(
    name: &str,
    platform: &str,
    exe: &str,
    server: &[String],
    secrets: &[String],
) -> serde_json::Value {
    use serde_json::json;
    let command = format!("${{__dirname}}/server/{exe}");
    let mut args = vec![
        "--config".to_owned(),
        "${__dirname}/server/policy.toml".to_owned(),
        "--policy-override".to_owned(),
        "${user_config.policy}".to_owned(),
        "--".to_owned(),
    ];
    args.extend(server.iter().cloned());
    let mut user_config = json!({
        "policy": {
            "type": "file",
            "title": "Policy",
            "description": "A mcp-chain config to run the server with instead of the one in the bundle (optional)",
            "required": false,
        }
    });
    let mut env = serde_json::Map::new();
    for secret in secrets {
        let key = secret.to_ascii_lowercase();
        user_config[&key] = json!({
            "type": "string",
            "title": secret,
            "description": format!("{secret}, passed to the server (kept secret)"),
            "sensitive": true,
            "required": true,
        });
        env.insert(secret.clone(), json!(format!("${{user_config.{key}}}")));
    }
    // Each platform's command (the bundle holds the one its platform
    // needs; `compatibility` says which).
    let overrides: serde_json::Map<String, serde_json::Value> = ["darwin", "win32", "linux"]
        .iter()
        .map(|p| {
            let exe = if *p == "win32" {
                "mcp-chain.exe"
            } else {
                "mcp-chain"
            };
            (
                p.to_string(),
                json!({"command": format!("${{__dirname}}/server/{exe}")}),
            )
        })
        .collect();
    json!({
        "manifest_version": MANIFEST_VERSION,
        "name": name,
        // The extension's name, never the server's URL or arguments (a
        // token may be in them).
        "display_name": format!("{name} (guarded by mcp-chain)"),
        "version": env!("CARGO_PKG_VERSION"),
        "description": "An MCP server behind mcp-chain, with a policy",
        "author": {"name": "mcp-chain bundle"},
        "server": {
            "type": "binary",
            "entry_point": format!("server/{exe}"),
            "mcp_config": {
                "command": command,
                "args": args,
                "env": env,
                "platform_overrides": overrides,
            },
        },
        "user_config": user_config,
        "compatibility": {"platforms": [platform]},
    })
}
