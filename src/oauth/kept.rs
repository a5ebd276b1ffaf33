//! Where one server's tokens are kept while mcp-chain runs: its private
//! file in the state directory (processes on one machine take turns on
//! the file's lock), or, with `[state]` and its `key`, Redis, for every
//! replica (encrypted there, renewals single-flight across replicas: see
//! `state/tokens.rs`). With `on_unavailable = "local"` a replica that
//! cannot reach Redis uses its file meanwhile; with `"refuse"` the
//! renewal fails and says why.

use super::store::{self, Entry, LoginLock, StoreError};
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

pub(crate) enum Kept {
    File(PathBuf),
    #[cfg(feature = "state")]
    Shared {
        server: String,
        tokens: std::sync::Arc<crate::state::SharedTokens>,
        file: PathBuf,
    },
}

/// A renewal's lock: the file's, or Redis's.
pub(crate) enum KeptLock {
    #[allow(dead_code)] // held for its Drop
    File(LoginLock),
    #[cfg(feature = "state")]
    #[allow(dead_code)]
    Shared(crate::state::SharedLock),
}

impl Kept {
    pub(crate) fn of(server: &Url) -> Result<Self, StoreError> {
        let file = store::path(server)?;
        #[cfg(feature = "state")]
        if let Some(tokens) = crate::state::tokens() {
            return Ok(Self::Shared {
                server: store::server_key(server),
                tokens,
                file,
            });
        }
        Ok(Self::File(file))
    }

    /// Whether what is kept is in the file (read at once when made).
    pub(crate) fn file(&self) -> Option<&PathBuf> {
        match self {
            Self::File(file) => Some(file),
            #[cfg(feature = "state")]
            Self::Shared { .. } => None,
        }
    }

    pub(crate) async fn read(&self) -> Result<Option<Entry>, StoreError> {
        match self {
            Self::File(file) => store::read(file),
            #[cfg(feature = "state")]
            Self::Shared {
                server,
                tokens,
                file,
            } => match tokens.read(server).await {
                Ok(None) => Ok(None),
                Ok(Some(bytes)) => store::from_bytes(&bytes, "[state]").map(Some),
                Err(why) => match self.unavailable(why) {
                    Ok(()) | Err(Fallback::File) => store::read(file),
                    Err(Fallback::Error(e)) => Err(e),
                },
            },
        }
    }

    pub(crate) async fn write(&self, entry: &Entry) -> Result<(), StoreError> {
        match self {
            Self::File(file) => store::write(file, entry),
            #[cfg(feature = "state")]
            Self::Shared {
                server,
                tokens,
                file,
            } => match tokens.write(server, &store::to_bytes(entry)).await {
                Ok(()) => Ok(()),
                Err(why) => match self.unavailable(why) {
                    Ok(()) | Err(Fallback::File) => store::write(file, entry),
                    Err(Fallback::Error(e)) => Err(e),
                },
            },
        }
    }

    /// Forgets the tokens: in Redis (an error when it cannot be asked:
    /// a logout that might not have happened is not said to have) and in
    /// this machine's file. Whether there were any.
    pub(crate) async fn remove(&self) -> Result<bool, StoreError> {
        match self {
            Self::File(file) => store::remove(file),
            #[cfg(feature = "state")]
            Self::Shared {
                server,
                tokens,
                file,
            } => {
                let shared = tokens.remove(server).await.map_err(|why| {
                    StoreError::Shared(mcp_chain_middleware::shown::shown(&why.0, 300))
                })?;
                Ok(store::remove(file)? || shared)
            }
        }
    }

    /// Every server's entry kept in `[state]`, for `auth status`.
    pub(crate) async fn every_shared() -> Result<Vec<Result<Entry, StoreError>>, StoreError> {
        #[cfg(feature = "state")]
        if let Some(tokens) = crate::state::tokens() {
            let shown = |why: mcp_chain_middleware::shared::Unavailable| {
                StoreError::Shared(mcp_chain_middleware::shown::shown(&why.0, 300))
            };
            let entries = tokens.every().await.map_err(shown)?;
            return Ok(entries
                .into_iter()
                .map(|entry| store::from_bytes(&entry.map_err(shown)?, "[state]"))
                .collect());
        }
        Ok(Vec::new())
    }

    /// The renewal lock, waiting at most `wait`; `None` when the wait ran
    /// out.
    pub(crate) async fn lock(&self, wait: Duration) -> Result<Option<KeptLock>, StoreError> {
        match self {
            Self::File(file) => Ok(LoginLock::take(file, wait).await?.map(KeptLock::File)),
            #[cfg(feature = "state")]
            Self::Shared {
                server,
                tokens,
                file,
            } => match tokens.lock(server, wait).await {
                Ok(lock) => Ok(lock.map(KeptLock::Shared)),
                Err(why) => match self.unavailable(why) {
                    Ok(()) | Err(Fallback::File) => {
                        Ok(LoginLock::take(file, wait).await?.map(KeptLock::File))
                    }
                    Err(Fallback::Error(e)) => Err(e),
                },
            },
        }
    }

    /// Redis could not be asked: the file instead (`local`), or an error
    /// (`refuse`).
    #[cfg(feature = "state")]
    fn unavailable(&self, why: mcp_chain_middleware::shared::Unavailable) -> Result<(), Fallback> {
        let Self::Shared { tokens, .. } = self else {
            return Ok(());
        };
        // Redis's and redis-rs's words: escaped.
        let why = mcp_chain_middleware::shown::shown(&why.0, 300);
        match tokens.fallback {
            mcp_chain_middleware::shared::Fallback::Local => {
                tracing::warn!("[state] unavailable for the upstream's tokens ({why}): this replica's own file meanwhile");
                Err(Fallback::File)
            }
            mcp_chain_middleware::shared::Fallback::Refuse => {
                Err(Fallback::Error(StoreError::Shared(why)))
            }
        }
    }
}

/// What a failed ask of Redis becomes.
#[cfg(feature = "state")]
enum Fallback {
    File,
    Error(StoreError),
}
