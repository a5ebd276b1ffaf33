//! Approvals that last, and the record of every decision: the approve
//! book, one per process, kept by the binary in the state directory
//! (`approve/`, private to the user) when it can be ([`install`]).
//!
//! - `decisions.jsonl`: one line per decision `approve` makes: when, who
//!   asked, the server, the tool, a SHA-256 of the canonical arguments,
//!   the policy revision, how it was asked, the decision.
//! - `grants.json`: what a person allowed **Always** (`remember =
//!   "always"`): bound to the server, the tool, the arguments' hash (or any
//!   arguments with `always = "tool"`) and the policy revision, so a change
//!   of the approve rule voids it. Read at each gated call, so a revoke
//!   (`mcp-chain approve revoke`, or the console) applies at once to every
//!   running instance.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// One lasting grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub server: String,
    pub tool: String,
    /// `sha256:…` of the canonical arguments; `None`: any arguments.
    pub arguments: Option<String>,
    /// The approve rule's revision it was granted under.
    pub revision: String,
    pub granted_at: u64,
    pub caller: Option<String>,
}

/// The book: where grants and decisions are kept, and which server this
/// process guards.
#[derive(Debug)]
pub struct Book {
    dir: PathBuf,
    server: String,
    /// One grant write at a time in this process.
    writing: Mutex<()>,
}

static INSTALLED: OnceLock<Arc<Book>> = OnceLock::new();

/// Installs the process's book (once).
pub fn install(book: Arc<Book>) {
    let _ = INSTALLED.set(book);
}

/// The process's book, when there is a state directory for it.
pub fn installed() -> Option<Arc<Book>> {
    INSTALLED.get().cloned()
}

/// A server started as a command, as a grant names it: the program's file
/// name and a fingerprint of the whole command line. The arguments
/// themselves are never written (they may hold a key or a token); the same
/// command line gives the same name.
pub fn command_server(command: &str, args: &[String]) -> String {
    let whole: Vec<&str> = std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .collect();
    let digest = crate::pin::fingerprint::digest(&serde_json::json!(whole));
    let program = Path::new(command)
        .file_name()
        .map_or_else(|| command.to_owned(), |n| n.to_string_lossy().into_owned());
    let short: String = digest
        .trim_start_matches("sha256:")
        .chars()
        .take(12)
        .collect();
    format!("{program} (command line {short})")
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Book {
    /// The book in `dir` for `server` (as shown: a command or a URL).
    pub fn new(dir: PathBuf, server: String) -> Self {
        Self {
            dir,
            server,
            writing: Mutex::new(()),
        }
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The file every decision is appended to (JSON lines).
    pub fn decisions_file(&self) -> PathBuf {
        self.dir.join("decisions.jsonl")
    }

    /// Every grant kept in `dir`, whatever server (an unreadable file is
    /// none, said on stderr: a grant is never guessed).
    pub fn grants_in(dir: &Path) -> Vec<Grant> {
        let path = dir.join("grants.json");
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "approve: the grants file cannot be read; no grant is used");
                Vec::new()
            }),
            Err(_) => Vec::new(),
        }
    }

    /// Writes `grants` whole, private to the user.
    pub fn keep_in(dir: &Path, grants: &[Grant]) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(grants).unwrap_or_default();
        bytes.push(b'\n');
        mcp_chain_private::write_whole(&dir.join("grants.json"), &bytes)
    }

    pub fn grants(&self) -> Vec<Grant> {
        Self::grants_in(&self.dir)
    }

    /// Whether a grant lets `tool` run with arguments hashed `arguments`
    /// under `revision` on this server.
    #[cfg(test)]
    fn granted(&self, tool: &str, arguments: &str, revision: &str) -> bool {
        self.granted_on(&self.server, tool, arguments, revision)
    }

    /// Whether a grant lets `tool` run with arguments hashed `arguments`
    /// under `revision` on `server` (this book's, or a gateway's server).
    pub(super) fn granted_on(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
        revision: &str,
    ) -> bool {
        self.grants().iter().any(|g| {
            g.server == server
                && g.tool == tool
                && g.revision == revision
                && g.arguments.as_deref().is_none_or(|a| a == arguments)
        })
    }

    /// Keeps a grant (one like it is not kept twice).
    pub(super) fn grant(&self, grant: Grant) {
        let _one = crate::lock(&self.writing);
        let mut grants = self.grants();
        if grants.contains(&grant) {
            return;
        }
        grants.push(grant);
        if let Err(e) = Self::keep_in(&self.dir, &grants) {
            tracing::warn!(error = %e, "approve: the grant could not be kept; it holds for this call only");
        }
    }

    /// Takes back grant `index` (as listed); whether there was one.
    pub fn revoke(&self, index: usize) -> bool {
        let _one = crate::lock(&self.writing);
        let mut grants = self.grants();
        if index >= grants.len() {
            return false;
        }
        grants.remove(index);
        Self::keep_in(&self.dir, &grants).is_ok()
    }

    /// Appends one decision's record about `server` (this book's, or a
    /// gateway's server).
    pub(super) fn record(&self, server: &str, fields: Value) {
        let mut line = json!({"at": now(), "server": server});
        if let (Value::Object(line), Value::Object(fields)) = (&mut line, fields) {
            line.extend(fields);
        }
        let mut text = line.to_string();
        text.push('\n');
        let written = mcp_chain_private::open_append(&self.decisions_file())
            .and_then(|mut file| file.write_all(text.as_bytes()));
        if let Err(e) = written {
            tracing::warn!(error = %e, "approve: a decision could not be recorded");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_server_is_named_without_its_arguments() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let named = command_server("/usr/bin/npx", &args(&["server", "--api-key", "s3cret"]));
        assert!(
            named.starts_with("npx (command line ") && !named.contains("s3cret"),
            "{named}"
        );
        assert_eq!(
            named,
            command_server("/usr/bin/npx", &args(&["server", "--api-key", "s3cret"]))
        );
        assert_ne!(
            named,
            command_server("/usr/bin/npx", &args(&["server", "--api-key", "other"]))
        );
    }

    #[test]
    fn a_grant_holds_for_its_server_tool_arguments_and_revision_only() {
        let dir = std::env::temp_dir().join(format!("mcp-chain-book-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let book = Book::new(dir.clone(), "server-a".into());
        let grant = |arguments: Option<&str>| Grant {
            server: "server-a".into(),
            tool: "write_file".into(),
            arguments: arguments.map(str::to_owned),
            revision: "rev-1".into(),
            granted_at: 0,
            caller: None,
        };
        assert!(!book.granted("write_file", "sha256:aa", "rev-1"));
        book.grant(grant(Some("sha256:aa")));
        book.grant(grant(Some("sha256:aa")));
        assert_eq!(book.grants().len(), 1, "kept once");
        assert!(book.granted("write_file", "sha256:aa", "rev-1"));
        assert!(
            !book.granted("write_file", "sha256:bb", "rev-1"),
            "other arguments"
        );
        assert!(
            !book.granted("write_file", "sha256:aa", "rev-2"),
            "another policy"
        );
        assert!(
            !book.granted("delete_file", "sha256:aa", "rev-1"),
            "another tool"
        );
        let other = Book::new(dir.clone(), "server-b".into());
        assert!(
            !other.granted("write_file", "sha256:aa", "rev-1"),
            "another server"
        );
        book.grant(grant(None));
        assert!(
            book.granted("write_file", "sha256:bb", "rev-1"),
            "any arguments"
        );
        assert!(book.revoke(1) && book.revoke(0) && !book.revoke(0));
        assert!(!book.granted("write_file", "sha256:aa", "rev-1"), "revoked");
        std::fs::write(dir.join("grants.json"), b"{not json").expect("written");
        assert!(
            !book.granted("write_file", "sha256:aa", "rev-1"),
            "an unreadable file grants nothing"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
