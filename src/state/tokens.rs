//! Upstream OAuth tokens kept in `[state]` for every replica: one entry
//! per server, encrypted with AES-256-GCM under a key derived from
//! `[state] key` (SHA-256 of it), a fresh random nonce per write, the
//! entry's Redis key as associated data (a value copied under another key
//! does not open). Renewals are single-flight across replicas: a lock
//! with an expiry (`SET NX PX`), kept alive while its holder works,
//! released only by its holder; the others wait (bounded) and then read
//! the tokens it stored. Redis never holds a token in clear, and its keys
//! name a server by a digest of its URL.

use super::Link;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use mcp_chain_middleware::shared::{Fallback, Unavailable};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// How long a renewal's lock lives unless its holder keeps it alive (a
/// replica that dies holding it blocks the others this long at most).
const LOCK_TTL: Duration = Duration::from_secs(30);

/// How often a waiting replica looks at the lock again.
const LOCK_POLL: Duration = Duration::from_millis(100);

/// The tokens of every upstream, in Redis.
pub(crate) struct SharedTokens {
    link: Arc<Link>,
    cipher: Aes256Gcm,
    pub(crate) fallback: Fallback,
}

impl SharedTokens {
    pub(super) fn new(link: Arc<Link>, key: &str, fallback: Fallback) -> Self {
        let key = Sha256::digest(key.as_bytes());
        Self {
            link,
            cipher: Aes256Gcm::new_from_slice(&key).expect("a 32-byte key"),
            fallback,
        }
    }

    fn key(&self, what: &str, server: &str) -> String {
        let digest = mcp_chain_middleware::shared::digest(server);
        format!("{}oauth:{what}:{digest}", self.link.prefix)
    }

    /// The entry stored for `server` (its key: the URL without secrets),
    /// decrypted.
    pub(crate) async fn read(&self, server: &str) -> Result<Option<Vec<u8>>, Unavailable> {
        let key = self.key("entry", server);
        let stored: Option<String> = self.link.ask(redis::cmd("GET").arg(&key)).await?;
        stored.map(|stored| self.open(&key, &stored)).transpose()
    }

    /// Every server's entry, decrypted (one that does not open: its error),
    /// for `mcp-chain auth status`.
    pub(crate) async fn every(&self) -> Result<Vec<Result<Vec<u8>, Unavailable>>, Unavailable> {
        let entries = format!("{}oauth:entry:", self.link.prefix);
        let pattern = format!("{}*", glob_escaped(&entries));
        let mut keys = Vec::new();
        let mut cursor = 0u64;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(100);
            let (next, found): (u64, Vec<String>) = self.link.ask(&scan).await?;
            keys.extend(found);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let mut entries = Vec::new();
        for key in keys {
            let stored: Option<String> = self.link.ask(redis::cmd("GET").arg(&key)).await?;
            if let Some(stored) = stored {
                entries.push(self.open(&key, &stored));
            }
        }
        Ok(entries)
    }

    /// Forgets `server`'s entry; `false` when none was stored.
    pub(crate) async fn remove(&self, server: &str) -> Result<bool, Unavailable> {
        let key = self.key("entry", server);
        let gone: i64 = self.link.ask(redis::cmd("DEL").arg(&key)).await?;
        Ok(gone > 0)
    }

    /// What was stored under `key`, decrypted: only a value sealed under
    /// that very key opens.
    fn open(&self, key: &str, stored: &str) -> Result<Vec<u8>, Unavailable> {
        let sealed = base64::engine::general_purpose::STANDARD
            .decode(stored.strip_prefix("v1:").unwrap_or_default())
            .map_err(|_| Unavailable("the stored tokens are not mcp-chain's".into()))?;
        if sealed.len() < 12 {
            return Err(Unavailable("the stored tokens are cut short".into()));
        }
        let (nonce, sealed) = sealed.split_at(12);
        let payload = Payload {
            msg: sealed,
            aad: key.as_bytes(),
        };
        self.cipher
            .decrypt(Nonce::from_slice(nonce), payload)
            .map_err(|_| {
                Unavailable(
                    "the stored tokens do not open with [state] key (another key, or altered)"
                        .into(),
                )
            })
    }

    /// Stores `plain` as `server`'s entry, encrypted.
    pub(crate) async fn write(&self, server: &str, plain: &[u8]) -> Result<(), Unavailable> {
        let key = self.key("entry", server);
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).map_err(|e| Unavailable(format!("no random nonce: {e}")))?;
        let payload = Payload {
            msg: plain,
            aad: key.as_bytes(),
        };
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), payload)
            .map_err(|_| Unavailable("the tokens could not be encrypted".into()))?;
        let value = [nonce.as_slice(), &sealed].concat();
        let value = format!(
            "v1:{}",
            base64::engine::general_purpose::STANDARD.encode(value)
        );
        self.link
            .ask::<()>(redis::cmd("SET").arg(&key).arg(value))
            .await
    }

    /// Takes `server`'s renewal lock, waiting at most `wait` while another
    /// replica holds it; `Ok(None)` when the wait ran out.
    pub(crate) async fn lock(
        &self,
        server: &str,
        wait: Duration,
    ) -> Result<Option<SharedLock>, Unavailable> {
        let key = self.key("lock", server);
        let mut token = [0u8; 16];
        getrandom::fill(&mut token)
            .map_err(|e| Unavailable(format!("no random lock token: {e}")))?;
        let token: String = token.iter().map(|b| format!("{b:02x}")).collect();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let mut set = redis::cmd("SET");
            set.arg(&key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(LOCK_TTL.as_millis() as u64);
            let taken: Option<String> = self.link.ask(&set).await?;
            if taken.is_some() {
                let link = self.link.clone();
                let (k, t) = (key.clone(), token.clone());
                // Kept alive while held: a login may take longer than the TTL.
                let alive = tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(LOCK_TTL / 3).await;
                        let _ = link
                            .run_on::<i64>(
                                &KEEP,
                                &k,
                                vec![t.clone(), LOCK_TTL.as_millis().to_string()],
                            )
                            .await;
                    }
                });
                return Ok(Some(SharedLock {
                    link: self.link.clone(),
                    key,
                    token,
                    alive,
                }));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(LOCK_POLL).await;
        }
    }
}

/// `text` with Redis's glob characters escaped (a prefix may hold them).
fn glob_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Extends a lock's life only if it is still the holder's.
static KEEP: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0",
    )
});

/// Releases a lock only if it is still the holder's (one that expired and
/// was taken by another replica is that replica's now).
static RELEASE: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
    )
});

/// A renewal lock held in Redis; released when dropped.
pub(crate) struct SharedLock {
    link: Arc<Link>,
    key: String,
    token: String,
    alive: tokio::task::JoinHandle<()>,
}

impl Drop for SharedLock {
    fn drop(&mut self) {
        self.alive.abort();
        let (link, key, token) = (self.link.clone(), self.key.clone(), self.token.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = link.run_on::<i64>(&RELEASE, &key, vec![token]).await;
            });
        }
    }
}
