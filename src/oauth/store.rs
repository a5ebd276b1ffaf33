//! What mcp-chain keeps per server it logs in to: how it is registered
//! there, where the authorization server's endpoints are, and the tokens.
//! One file per server in the state directory (`oauth/` there), private to
//! the user (0600 in a 0700 directory; a user-only ACL on Windows), written
//! whole through a new file. Tokens are never logged, audited or shown:
//! the type's `Debug` leaves them out, and `auth status` shows scopes and
//! expiry only.
//!
//! Several mcp-chain processes may serve the same server (Claude Desktop
//! starts one per conversation window): a login holds the server's lock
//! file, so a second process waits for the first one's login instead of
//! opening a second browser tab, then reads the tokens it stored.

use super::discovery::ServerMetadata;
use super::register::Registration;
use crate::platform::dirs::{state_dir, NoStateDir};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use url::Url;

/// The file's format; another is refused rather than misread.
const VERSION: u32 = 1;

/// How often a process waiting for another's login looks at the lock.
const LOCK_POLL: Duration = Duration::from_millis(200);

#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    #[error(transparent)]
    NoStateDir(#[from] NoStateDir),
    #[error("token file {}: {why}", path.display())]
    Io { path: PathBuf, why: std::io::Error },
    #[error("token file {} cannot be read ({why}); `mcp-chain logout` removes it", path.display())]
    Unreadable { path: PathBuf, why: String },
    /// The replicas' shared state could not be asked for the tokens.
    #[cfg_attr(not(feature = "state"), allow(dead_code))]
    #[error("the tokens kept in [state] cannot be reached: {0}")]
    Shared(String),
}

/// One server's entry.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) version: u32,
    /// The server's URL, as the user gave it (no query, no user info).
    pub(crate) server: String,
    /// The resource identifier sent (RFC 8707), if any.
    pub(crate) resource: Option<String>,
    pub(crate) metadata: Option<ServerMetadata>,
    pub(crate) registration: Option<Registration>,
    pub(crate) tokens: Option<Tokens>,
}

/// An access token and what came with it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    pub(crate) expires_at: Option<u64>,
    /// The scopes granted (as the server said, else as asked).
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("server", &self.server)
            .field("resource", &self.resource)
            .field("registration", &self.registration)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "…"))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Whether it expires within `margin` (or has).
    pub(crate) fn expires_within(&self, margin: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now_secs().saturating_add(margin.as_secs()))
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The server's URL as its entry is keyed: no user info, query or fragment.
pub(crate) fn server_key(server: &Url) -> String {
    let mut url = server.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// The directory of token files.
pub(crate) fn dir() -> Result<PathBuf, StoreError> {
    Ok(state_dir()?.join("oauth"))
}

/// Where `server`'s entry lives: a hash of its key, so any URL makes a
/// plain file name.
pub(crate) fn path(server: &Url) -> Result<PathBuf, StoreError> {
    let digest = Sha256::digest(server_key(server).as_bytes());
    let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let dir = dir()?;
    // Tokens go only in a directory no one else may enter: one made
    // before (by hand, or by a looser umask) is tightened or refused. A
    // missing one is made private when the first entry is written.
    if dir.is_dir() {
        mcp_chain_private::private_dir(&dir).map_err(|why| StoreError::Io {
            path: dir.clone(),
            why,
        })?;
    }
    Ok(dir.join(format!("{name}.json")))
}

/// Reads an entry; `None` when there is none.
pub(crate) fn read(path: &Path) -> Result<Option<Entry>, StoreError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(why) => {
            return Err(StoreError::Io {
                path: path.to_owned(),
                why,
            })
        }
    };
    from_bytes(&bytes, &path.display().to_string()).map(Some)
}

/// An entry as it is stored (a file's text, or what is encrypted into
/// `[state]`).
pub(crate) fn to_bytes(entry: &Entry) -> Vec<u8> {
    let mut entry = entry.clone();
    entry.version = VERSION;
    let mut bytes = serde_json::to_vec_pretty(&entry).expect("an entry serializes");
    bytes.push(b'\n');
    bytes
}

/// An entry read from what was stored at `origin`.
pub(crate) fn from_bytes(bytes: &[u8], origin: &str) -> Result<Entry, StoreError> {
    let entry: Entry = serde_json::from_slice(bytes).map_err(|e| StoreError::Unreadable {
        path: PathBuf::from(origin),
        why: e.to_string(),
    })?;
    if entry.version != VERSION {
        return Err(StoreError::Unreadable {
            path: PathBuf::from(origin),
            why: format!("version {} is not {VERSION}", entry.version),
        });
    }
    Ok(entry)
}

/// Writes an entry whole, private to the user.
pub(crate) fn write(path: &Path, entry: &Entry) -> Result<(), StoreError> {
    let bytes = to_bytes(entry);
    mcp_chain_private::write_whole(path, &bytes).map_err(|why| StoreError::Io {
        path: path.to_owned(),
        why,
    })
}

/// Removes an entry; whether there was one.
pub(crate) fn remove(path: &Path) -> Result<bool, StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(why) => Err(StoreError::Io {
            path: path.to_owned(),
            why,
        }),
    }
}

/// Every entry in the directory (unreadable ones as errors).
pub(crate) fn all() -> Result<Vec<Result<Entry, StoreError>>, StoreError> {
    let dir = dir()?;
    let listing = match std::fs::read_dir(&dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(why) => return Err(StoreError::Io { path: dir, why }),
    };
    let mut entries = Vec::new();
    for item in listing.flatten() {
        let path = item.path();
        if path.extension().is_some_and(|e| e == "json") {
            match read(&path) {
                Ok(Some(entry)) => entries.push(Ok(entry)),
                Ok(None) => {}
                Err(e) => entries.push(Err(e)),
            }
        }
    }
    Ok(entries)
}

/// The lock held while logging in to one server; released when dropped.
pub(crate) struct LoginLock(#[allow(dead_code)] std::fs::File);

impl LoginLock {
    /// Takes the lock for the entry at `path`, waiting (at most `wait`)
    /// while another process holds it. `Ok(None)` when the wait ran out.
    pub(crate) async fn take(path: &Path, wait: Duration) -> Result<Option<Self>, StoreError> {
        let lock_path = path.with_extension("lock");
        let file = mcp_chain_private::open_append(&lock_path).map_err(|why| StoreError::Io {
            path: lock_path.clone(),
            why,
        })?;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(Self(file))),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(why)) => {
                    return Err(StoreError::Io {
                        path: lock_path,
                        why,
                    })
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(LOCK_POLL).await;
        }
    }
}
