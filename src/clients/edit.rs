//! A client's config file changed safely, for `wrap` and `unwrap`: one
//! change at a time (a lock), the file backed up first, the new text
//! written beside it and renamed over only if the file did not change
//! since it was read, and what each entry was and became kept in the
//! state directory (`wrap/<client>-<fingerprint>.json`) so it can be put
//! back byte for byte.

use super::json::{self, Entry};
use super::{Client, Scope, Target};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What was wrapped in one file: by entry name, its text before and after.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Record {
    file: PathBuf,
    pub(super) entries: BTreeMap<String, Kept>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Kept {
    pub(super) original: String,
    pub(super) wrapped: String,
}

/// Where a target's servers are: a file, and for Claude Code's local
/// scope the project (directory) whose entry in it holds them.
pub(super) struct Place {
    pub(super) file: PathBuf,
    pub(super) project: Option<String>,
}

impl Place {
    /// The name what is kept about this place goes by in the state
    /// directory.
    pub(super) fn key(&self, client: Client) -> String {
        let mut key = format!("{}-{}", client.name(), fingerprint(&self.file));
        if let Some(project) = &self.project {
            key = format!("{key}-local-{}", fingerprint(Path::new(project)));
        }
        key
    }
}

/// The place a target names: `--config-file`, else the file `--scope`
/// names, else the client's first file that exists (else its first).
pub(super) fn place_of(target: &Target) -> Result<Place, String> {
    let client = target.client;
    let files = client.files();
    let project = match target.scope {
        Some(Scope::Local) if client != Client::ClaudeCode => {
            return Err(format!(
                "--scope local is claude-code's; {} has none",
                client.name()
            ))
        }
        Some(Scope::Local) => {
            let cwd = std::env::current_dir().map_err(|e| format!("this directory: {e}"))?;
            Some(super::project_key(&cwd))
        }
        _ => None,
    };
    let file = match (&target.config_file, target.scope) {
        (Some(file), _) => file.clone(),
        (None, Some(Scope::User | Scope::Local)) => files[0].clone(),
        (None, Some(Scope::Project)) => match files.get(1) {
            Some(file) => file.clone(),
            None => return Err(format!("{} has no project file", client.name())),
        },
        (None, None) => files
            .iter()
            .find(|f| f.is_file())
            .cloned()
            .unwrap_or_else(|| files[0].clone()),
    };
    Ok(Place { file, project })
}

/// What an edit does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
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
pub(super) fn edit(
    target: &Target,
    mode: Mode,
    mut change: impl FnMut(Client, &Entry, &Record, &mut Vec<String>) -> Result<Option<String>, String>,
) -> ExitCode {
    let client = target.client;
    let place = match place_of(target) {
        Ok(place) => place,
        Err(e) => return fail(&e),
    };
    let file = place.file.clone();
    let Ok(dir) = crate::platform::dirs::state_dir().map(|d| d.join("wrap")) else {
        return fail("no state directory to keep what was wrapped in (set MCP_CHAIN_STATE_DIR)");
    };
    let key = place.key(client);
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
    let entries = match super::entries(&text, client, place.project.as_deref()) {
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
    // The file's names and commands are text from the file: escaped.
    for line in &said {
        let line = mcp_chain_middleware::shown::shown(line, 1000);
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
            // Another process's name: its own text, escaped.
            let name = mcp_chain_middleware::shown::shown(name.trim(), 64);
            found.push(format!(
                "{name} (pid {})",
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

pub(super) fn fail(message: &str) -> ExitCode {
    eprintln!("mcp-chain: {message}");
    ExitCode::FAILURE
}
