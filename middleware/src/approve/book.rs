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
//!
//! With `[state]` (replicas behind one load balancer) grants are rows of
//! the replicas' shared table `grants` and decisions the shared log
//! `decisions` (its last [`KEEP_DECISIONS`]): a grant given on one replica
//! holds on every other from its next call. While the shared state is
//! unavailable, `on_unavailable = "local"` falls back to the files here;
//! `"refuse"` refuses a call whose grant cannot be looked up (-32000
//! `state_unavailable`) and keeps no new grant.

use crate::shared::{self, SharedState, Unavailable};
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

/// The shared table of grants, and the shared log of decisions.
const GRANTS: &str = "grants";
const DECISIONS: &str = "decisions";
/// Decisions the shared log keeps (the oldest are dropped as it grows).
pub const KEEP_DECISIONS: usize = 1000;

impl Grant {
    /// Its row in the shared table: one per server, tool, arguments and
    /// revision (granting it again changes nothing).
    fn row(&self) -> String {
        Self::row_of(
            &self.server,
            &self.tool,
            self.arguments.as_deref(),
            &self.revision,
        )
    }

    /// The row of a grant of `tool` on `server` under `revision`, for
    /// these `arguments` (their hash) or, with `None`, for any.
    fn row_of(server: &str, tool: &str, arguments: Option<&str>, revision: &str) -> String {
        shared::digest(&format!(
            "{server}\n{tool}\n{}\n{revision}",
            arguments.unwrap_or("*"),
        ))
    }

    fn matches(&self, server: &str, tool: &str, arguments: &str, revision: &str) -> bool {
        self.server == server
            && self.tool == tool
            && self.revision == revision
            && self.arguments.as_deref().is_none_or(|a| a == arguments)
    }
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

    /// The grants kept in this process's directory.
    pub fn grants(&self) -> Vec<Grant> {
        Self::grants_in(&self.dir)
    }

    /// Every grant: the replicas' shared ones with `[state]`, else (or,
    /// with `on_unavailable = "local"`, while it is away) this
    /// directory's; oldest first.
    pub async fn all(&self) -> Result<Vec<Grant>, Unavailable> {
        let mut grants = match shared::installed() {
            None => self.grants(),
            Some(store) => match store.rows(GRANTS).await {
                Ok(mut rows) => {
                    // The table's order is the store's: by row, then by age.
                    rows.sort();
                    rows.iter()
                        .filter_map(|(_, bytes)| serde_json::from_slice(bytes).ok())
                        .collect()
                }
                Err(why) => self.local_unless_refused(store.as_ref(), why)?,
            },
        };
        // Oldest first; a file's own order kept among grants of one second.
        grants.sort_by_key(|g| g.granted_at);
        Ok(grants)
    }

    fn local_unless_refused(
        &self,
        store: &dyn SharedState,
        why: Unavailable,
    ) -> Result<Vec<Grant>, Unavailable> {
        match store.fallback() {
            shared::Fallback::Local => Ok(self.grants()),
            shared::Fallback::Refuse => Err(why),
        }
    }

    /// Whether a grant lets `tool` run with arguments hashed `arguments`
    /// under `revision` on `server` (this book's, or a gateway's server).
    pub(super) async fn granted_on(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
        revision: &str,
    ) -> Result<bool, Unavailable> {
        let matches = |g: &Grant| g.matches(server, tool, arguments, revision);
        let Some(store) = shared::installed() else {
            return Ok(self.grants().iter().any(matches));
        };
        // The two rows a grant for this call can be in: for these
        // arguments, or for any; not every grant anyone gave.
        let rows = [Some(arguments), None]
            .map(|arguments| Grant::row_of(server, tool, arguments, revision));
        match store.pick(GRANTS, &rows).await {
            Ok(found) => Ok(found
                .iter()
                .flatten()
                .filter_map(|bytes| serde_json::from_slice::<Grant>(bytes).ok())
                .any(|g| matches(&g))),
            Err(why) => Ok(self
                .local_unless_refused(store.as_ref(), why)?
                .iter()
                .any(matches)),
        }
    }

    /// Keeps a grant (one like it is not kept twice).
    pub(super) async fn grant(&self, grant: Grant) {
        if let Some(store) = shared::installed() {
            let bytes = serde_json::to_vec(&grant).unwrap_or_default();
            let Err(why) = store.put(GRANTS, &grant.row(), bytes, false).await else {
                return;
            };
            if store.fallback() == shared::Fallback::Refuse {
                tracing::warn!(error = %crate::shown::shown(&why.0, 300), "approve: the shared state is unavailable; the grant holds for this call only");
                return;
            }
        }
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

    /// Takes back `grant`; whether it was there.
    pub async fn revoke(&self, grant: &Grant) -> Result<bool, Unavailable> {
        if let Some(store) = shared::installed() {
            match store.remove(GRANTS, &grant.row()).await {
                Ok(removed) => return Ok(removed),
                Err(why) => {
                    self.local_unless_refused(store.as_ref(), why)?;
                }
            }
        }
        let _one = crate::lock(&self.writing);
        let mut grants = self.grants();
        let before = grants.len();
        grants.retain(|g| g != grant);
        if grants.len() == before {
            return Ok(false);
        }
        Ok(Self::keep_in(&self.dir, &grants).is_ok())
    }

    /// The decisions recorded lately (the shared log's, with `[state]`),
    /// oldest first.
    pub async fn decisions(&self) -> Vec<Value> {
        if let Some(store) = shared::installed() {
            if let Ok(lines) = store.tail(DECISIONS, KEEP_DECISIONS).await {
                return lines
                    .iter()
                    .filter_map(|line| serde_json::from_slice(line).ok())
                    .collect();
            }
        }
        let text = std::fs::read_to_string(self.decisions_file()).unwrap_or_default();
        text.lines()
            .rev()
            .take(KEEP_DECISIONS)
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect::<Vec<Value>>()
            .into_iter()
            .rev()
            .collect()
    }

    /// Appends one decision's record about `server` (this book's, or a
    /// gateway's server).
    pub(super) fn record(&self, server: &str, fields: Value) {
        let mut line = json!({"at": now(), "server": server});
        if let (Value::Object(line), Value::Object(fields)) = (&mut line, fields) {
            line.extend(fields);
        }
        let text = line.to_string();
        if let (Some(store), Ok(runtime)) =
            (shared::installed(), tokio::runtime::Handle::try_current())
        {
            let (dir_file, bytes) = (self.decisions_file(), text.clone().into_bytes());
            runtime.spawn(async move {
                if let Err(why) = store.append(DECISIONS, bytes.clone(), KEEP_DECISIONS).await {
                    // Never lost: kept in this replica's own file instead.
                    tracing::warn!(error = %crate::shown::shown(&why.0, 300), "approve: the shared state is unavailable; the decision is recorded on this replica only");
                    append_line(&dir_file, &bytes);
                }
            });
            return;
        }
        append_line(&self.decisions_file(), text.as_bytes());
    }
}

/// Appends `line` and a newline to the decisions file `path`.
fn append_line(path: &Path, line: &[u8]) {
    let written = mcp_chain_private::open_append(path).and_then(|mut file| {
        let mut whole = line.to_vec();
        whole.push(b'\n');
        file.write_all(&whole)
    });
    if let Err(e) = written {
        tracing::warn!(error = %e, "approve: a decision could not be recorded");
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

    async fn granted(book: &Book, tool: &str, arguments: &str, revision: &str) -> bool {
        book.granted_on(book.server(), tool, arguments, revision)
            .await
            .expect("no shared state here")
    }

    #[tokio::test]
    async fn a_grant_holds_for_its_server_tool_arguments_and_revision_only() {
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
        assert!(!granted(&book, "write_file", "sha256:aa", "rev-1").await);
        book.grant(grant(Some("sha256:aa"))).await;
        book.grant(grant(Some("sha256:aa"))).await;
        assert_eq!(book.grants().len(), 1, "kept once");
        assert!(granted(&book, "write_file", "sha256:aa", "rev-1").await);
        assert!(
            !granted(&book, "write_file", "sha256:bb", "rev-1").await,
            "other arguments"
        );
        assert!(
            !granted(&book, "write_file", "sha256:aa", "rev-2").await,
            "another policy"
        );
        assert!(
            !granted(&book, "delete_file", "sha256:aa", "rev-1").await,
            "another tool"
        );
        let other = Book::new(dir.clone(), "server-b".into());
        assert!(
            !granted(&other, "write_file", "sha256:aa", "rev-1").await,
            "another server"
        );
        book.grant(grant(None)).await;
        assert!(
            granted(&book, "write_file", "sha256:bb", "rev-1").await,
            "any arguments"
        );
        assert_eq!(book.all().await.expect("read").len(), 2);
        assert!(book.revoke(&grant(None)).await.expect("file"));
        assert!(book.revoke(&grant(Some("sha256:aa"))).await.expect("file"));
        assert!(!book.revoke(&grant(None)).await.expect("file"), "gone");
        assert!(
            !granted(&book, "write_file", "sha256:aa", "rev-1").await,
            "revoked"
        );
        book.grant(grant(Some("sha256:aa"))).await;
        std::fs::write(dir.join("grants.json"), b"{not json").expect("written");
        assert!(
            !granted(&book, "write_file", "sha256:aa", "rev-1").await,
            "an unreadable file grants nothing"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
