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

use super::json::{self, Entry, Shape};
use super::{Client, Target};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What was wrapped in one file: by entry name, its text before and after.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Record {
    file: PathBuf,
    entries: BTreeMap<String, Kept>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Kept {
    original: String,
    wrapped: String,
}

pub(crate) fn run_clients() -> ExitCode {
    let mut out = String::new();
    for client in Client::ALL {
        for file in client.files().into_iter().filter(|f| f.is_file()) {
            out += &format!("{} {}\n", client.name(), file.display());
            match std::fs::read_to_string(&file)
                .map_err(|e| e.to_string())
                .and_then(|t| json::entries(&t, client))
            {
                Err(e) => out += &format!("  cannot be read: {e}\n"),
                Ok(entries) if entries.len() <= 1 => out += "  no servers\n",
                Ok(entries) => {
                    for entry in entries.into_iter().filter(|e| e.name != json::WHOLE) {
                        let what = match entry.shape(client) {
                            Ok(Shape::Stdio { command, .. }) if is_ours(&command) => {
                                "guarded by mcp-chain".to_owned()
                            }
                            Ok(Shape::Stdio { command, .. }) => {
                                format!("command {command}, not guarded")
                            }
                            Ok(Shape::Remote { url, .. }) => format!("URL {url}, not guarded"),
                            Err(why) => format!("not a shape mcp-chain knows ({why})"),
                        };
                        out += &format!("  {}: {what}\n", entry.name);
                    }
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
            Shape::Remote { url, headers } => {
                env = entry.env();
                for (name, value) in headers {
                    let var = header_variable(&name);
                    args.extend(["--header-env".to_owned(), format!("{name}={var}")]);
                    env.insert(var, Value::String(value));
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

/// The file a target names: `--config-file`, else the client's first
/// file that exists (else its first).
pub(super) fn file_of(target: &Target) -> PathBuf {
    if let Some(file) = &target.config_file {
        return file.clone();
    }
    let files = target.client.files();
    files
        .iter()
        .find(|f| f.is_file())
        .cloned()
        .unwrap_or_else(|| files[0].clone())
}

/// What an edit does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Each chosen entry wrapped.
    Wrap,
    /// The chosen entries replaced by one mcp-chain serving them all.
    Gateway,
    /// What was wrapped (or folded into a gateway) put back.
    Unwrap,
}

/// Reads the target's file, asks `change` for each chosen entry's new text
/// (the servers object's, for a gateway), and writes the file (or prints
/// the diff), keeping the record. `change` failing stops everything.
fn edit(
    target: &Target,
    mode: Mode,
    mut change: impl FnMut(Client, &Entry, &Record, &mut Vec<String>) -> Result<Option<String>, String>,
) -> ExitCode {
    let client = target.client;
    let file = file_of(target);
    let Ok(dir) = crate::platform::dirs::state_dir().map(|d| d.join("wrap")) else {
        return fail("no state directory to keep what was wrapped in (set MCP_CHAIN_STATE_DIR)");
    };
    let key = format!("{}-{}", client.name(), fingerprint(&file));
    if let Err(e) = std::fs::create_dir_all(dir.join("backups")) {
        return fail(&format!("{}: {e}", dir.display()));
    }
    // One wrap or unwrap of a file at a time (the lock goes with the process).
    let lock = match std::fs::File::create(dir.join(format!("{key}.lock"))) {
        Ok(lock) => lock,
        Err(e) => return fail(&format!("{}: {e}", dir.display())),
    };
    if lock.try_lock().is_err() {
        return fail(&format!(
            "{}: another mcp-chain wrap or unwrap is editing it; try again",
            file.display()
        ));
    }
    let record_path = dir.join(format!("{key}.json"));
    let mut record: Record = match std::fs::read(&record_path) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(record) => record,
            Err(e) => {
                return fail(&format!(
                    "{}: cannot be read ({e}); nothing changed",
                    record_path.display()
                ))
            }
        },
        Err(_) => Record {
            file: file.clone(),
            ..Record::default()
        },
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) => return fail(&format!("{}: {e}", file.display())),
    };
    let entries = match json::entries(&text, client) {
        Ok(entries) => entries,
        Err(e) => return fail(&format!("{}: {e}; nothing changed", file.display())),
    };
    let whole = entries.iter().find(|e| e.name == json::WHOLE);
    let folded = record.entries.contains_key(json::WHOLE);
    let chosen: Vec<&Entry> = match (mode, folded, target.all) {
        (Mode::Wrap | Mode::Gateway, true, _) => {
            return fail(&format!(
                "{}: its servers are behind one mcp-chain (wrap --gateway); unwrap them first",
                file.display()
            ));
        }
        // The servers object itself: replaced whole, or put back whole.
        (Mode::Gateway, false, _) | (Mode::Unwrap, true, _) => whole.into_iter().collect(),
        (_, _, true) => entries.iter().filter(|e| e.name != json::WHOLE).collect(),
        (_, _, false) => {
            if target.servers.is_empty() {
                return fail("name the servers, or give --all");
            }
            let mut chosen = Vec::new();
            for name in &target.servers {
                match entries.iter().find(|e| &e.name == name) {
                    Some(entry) => chosen.push(entry),
                    None => {
                        let known: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
                        return fail(&format!(
                            "{}: no server {name:?} (it has: {})",
                            file.display(),
                            known.join(", ")
                        ));
                    }
                }
            }
            chosen
        }
    };
    let mut said = Vec::new();
    let mut changes: Vec<(&Entry, String)> = Vec::new();
    for entry in chosen {
        let new = match change(client, entry, &record, &mut said) {
            Ok(Some(new)) => new,
            Ok(None) => continue,
            Err(e) => return fail(&format!("{}: {e}; nothing changed", file.display())),
        };
        let now = &text[entry.at.clone()];
        match record.entries.get(&entry.name) {
            // Unwrapping: only what mcp-chain wrote is taken back.
            Some(kept) if kept.original == new && kept.wrapped != now => {
                said.push(format!(
                    "{}: changed since it was wrapped; left as it is (the backups in {} hold it)",
                    entry.name,
                    dir.join("backups").display()
                ));
                continue;
            }
            Some(kept) if kept.original == new => {}
            _ => {
                record.entries.insert(
                    entry.name.clone(),
                    Kept {
                        original: now.to_owned(),
                        wrapped: new.clone(),
                    },
                );
            }
        }
        changes.push((entry, new));
    }
    let mut new_text = text.clone();
    changes.sort_by_key(|(e, _)| std::cmp::Reverse(e.at.start));
    for (entry, new) in &changes {
        new_text = json::splice(&new_text, &entry.at, new);
    }
    for line in &said {
        eprintln!("mcp-chain {}: {line}", client.name());
    }
    if target.dry_run || changes.is_empty() {
        if target.dry_run {
            let shown = file.display().to_string();
            let diff = similar::TextDiff::from_lines(&text, &new_text);
            let _ = write!(
                std::io::stdout(),
                "{}",
                diff.unified_diff().header(&shown, &shown)
            );
        }
        return ExitCode::SUCCESS;
    }
    // The file as read is what is changed: a client that wrote it since
    // wins, and nothing is lost.
    match std::fs::read_to_string(&file) {
        Ok(again) if again == text => {}
        _ => {
            return fail(&format!(
                "{}: changed while being edited; nothing written, run it again",
                file.display()
            ))
        }
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let backup = dir.join("backups").join(format!("{name}.{stamp}"));
    if let Err(e) = mcp_chain_private::write_whole(&backup, text.as_bytes()) {
        return fail(&format!(
            "{}: the backup could not be written ({e}); nothing changed",
            backup.display()
        ));
    }
    let unwrapped: Vec<String> = changes
        .iter()
        .filter(|(e, new)| {
            record
                .entries
                .get(&e.name)
                .is_some_and(|k| &k.original == new)
        })
        .map(|(e, _)| e.name.clone())
        .collect();
    if let Err(e) = replace(&file, new_text.as_bytes()) {
        return fail(&format!("{}: {e}; nothing changed", file.display()));
    }
    for name in unwrapped {
        record.entries.remove(&name);
    }
    let kept = match record.entries.is_empty() {
        true => std::fs::remove_file(&record_path).or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(e),
        }),
        false => mcp_chain_private::write_whole(
            &record_path,
            &serde_json::to_vec_pretty(&record).unwrap_or_default(),
        ),
    };
    if let Err(e) = kept {
        eprintln!("mcp-chain: {}: what was wrapped could not be kept ({e}); the backup {} holds the file as it was", record_path.display(), backup.display());
        return ExitCode::FAILURE;
    }
    for process in holders(&file) {
        eprintln!(
            "mcp-chain: {process} has {} open: restart it to use the change",
            file.display()
        );
    }
    ExitCode::SUCCESS
}

/// Writes `bytes` over `file` whole: a temporary file beside it, with its
/// permissions, renamed over it.
fn replace(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.mcp-chain-{}", std::process::id()));
    let written = (|| {
        let mut out = std::fs::File::create(&temp)?;
        out.write_all(bytes)?;
        out.set_permissions(std::fs::metadata(file)?.permissions())?;
        out.sync_all()?;
        std::fs::rename(&temp, file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Processes that have `file` open (Linux: from /proc; elsewhere none is
/// found), by name.
fn holders(file: &Path) -> Vec<String> {
    let Ok(file) = file.canonicalize() else {
        return Vec::new();
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for proc in procs.flatten() {
        let Ok(fds) = std::fs::read_dir(proc.path().join("fd")) else {
            continue;
        };
        if fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == file))
        {
            let name = std::fs::read_to_string(proc.path().join("comm")).unwrap_or_default();
            found.push(format!(
                "{} (pid {})",
                name.trim(),
                proc.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// A short fingerprint of a file's path, naming its record.
pub(super) fn fingerprint(file: &Path) -> String {
    let path = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
    let digest = mcp_chain_middleware::pin::file::fingerprint(&json!(path.display().to_string()));
    digest
        .trim_start_matches("sha256:")
        .chars()
        .take(16)
        .collect()
}

fn fail(message: &str) -> ExitCode {
    eprintln!("mcp-chain: {message}");
    ExitCode::FAILURE
}
