//! The tokens of one server while mcp-chain runs: the header every request
//! carries, renewed before it expires, and what to do when the server
//! refuses it. A 401 gets a refresh (or, failing that, a login) and the
//! request is sent once more; a 403 `insufficient_scope` gets a new
//! authorization with the union of the scopes (a step-up, at most
//! [`MAX_STEP_UPS`] times). One renewal runs at a time: requests refused
//! meanwhile wait for it and then go with the new token, so nothing is
//! lost and nothing sends a second browser tab. The client of mcp-chain
//! never sees the server's challenge: a request that cannot be authorized
//! is answered with an error saying a login is needed and how.
//!
//! A login runs in a task of its own, open for `login_timeout`; requests
//! wait for it only `login_wait` (less than the minute clients give a
//! request) and are then answered that a login is needed, so the person
//! reads what to do rather than a timeout; a login finished later serves
//! the next request. A server that refuses the token a login just got is
//! not given another login (another browser tab) within the quiet period:
//! its requests fail `unauthorized`.

use super::challenge::Challenge;
use super::error::OAuthError;
use super::fetch::Fetch;
use super::kept::Kept;
use super::login::{login, Ask};
use super::store::{self, Entry, Tokens};
use super::tokens;
use crate::config::{Grant, OAuthConfig};
use reqwest::header::HeaderValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;
use url::Url;

/// A token this close to its expiry is refreshed before it is used.
const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// After a login fails, requests refused within this long get its error
/// rather than a login of their own (one browser tab per failure, not one
/// per request that was waiting for it).
const QUIET_AFTER_FAILURE: Duration = Duration::from_secs(30);

/// Step-ups allowed in one run before the server's requests for more
/// scope are refused (a server that never says yes must not loop).
pub(crate) const MAX_STEP_UPS: u32 = 3;

pub(crate) struct Auth {
    server: Url,
    config: OAuthConfig,
    fetch: Fetch,
    /// Where the tokens are kept: a file, or `[state]` for every replica.
    kept: Kept,
    /// Whether what is kept was read (a file is read when made; `[state]`
    /// at the first request).
    loaded: std::sync::atomic::AtomicBool,
    /// What is stored, and the header made from its access token.
    held: Mutex<Held>,
    /// Held while a refresh or a login runs (by the login's own task).
    renewing: Arc<tokio::sync::Mutex<()>>,
    step_ups: AtomicU32,
    /// When the last login failed, and why.
    failed: Mutex<Option<(tokio::time::Instant, String)>>,
    /// The header a login got, and when, until the server first accepts
    /// it: refused before that, it is a fresh token refused.
    fresh: Mutex<Option<(tokio::time::Instant, HeaderValue)>>,
    /// Whether `fresh` holds one: every accepted request asks, and the
    /// lock is taken only in the moments after a login.
    unproven: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Held {
    entry: Entry,
    header: Option<HeaderValue>,
}

/// The one `Auth` per server in this process: every session of the HTTP
/// front toward that server holds the same identity and renews it once.
static SHARED: std::sync::OnceLock<Mutex<HashMap<String, Weak<Auth>>>> = std::sync::OnceLock::new();

impl Auth {
    /// This process's `Auth` for `server`, made on first use.
    pub(crate) fn shared(
        server: &Url,
        config: &OAuthConfig,
        ca_file: Option<&std::path::Path>,
    ) -> Result<Arc<Self>, OAuthError> {
        let key = store::server_key(server);
        let mut shared = SHARED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(auth) = shared.get(&key).and_then(Weak::upgrade) {
            return Ok(auth);
        }
        shared.retain(|_, auth| auth.strong_count() > 0);
        let auth = Arc::new(Self::new(server, config, ca_file)?);
        shared.insert(key, Arc::downgrade(&auth));
        Ok(auth)
    }

    /// The tokens stored for `server`, if any; nothing is fetched yet.
    fn new(
        server: &Url,
        config: &OAuthConfig,
        ca_file: Option<&std::path::Path>,
    ) -> Result<Self, OAuthError> {
        let kept = Kept::of(server)?;
        let entry = match kept.file().map(|file| store::read(file)) {
            Some(Ok(entry)) => entry.unwrap_or_default(),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "stored tokens not used");
                Entry::default()
            }
            None => Entry::default(),
        };
        Ok(Self {
            server: server.clone(),
            config: config.clone(),
            fetch: Fetch::new(ca_file)?,
            loaded: std::sync::atomic::AtomicBool::new(kept.file().is_some()),
            kept,
            held: Mutex::new(Held::of(entry)),
            renewing: Arc::new(tokio::sync::Mutex::new(())),
            step_ups: AtomicU32::new(0),
            failed: Mutex::new(None),
            fresh: Mutex::new(None),
            unproven: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The `Authorization` header for a request now: `None` until there is
    /// a token. One about to expire is refreshed first.
    pub(crate) async fn header(&self) -> Option<HeaderValue> {
        if !self.loaded.load(Ordering::Relaxed) {
            let _renewing = self.renewing.lock().await;
            if !self.loaded.swap(true, Ordering::Relaxed) {
                self.adopt_stored(None, &[]).await;
            }
        }
        let expiring = {
            let held = self.held();
            match &held.entry.tokens {
                Some(t) if t.refresh_token.is_some() && t.expires_within(REFRESH_AHEAD) => {
                    held.header.clone()
                }
                _ => return held.header.clone(),
            }
        };
        let _renewing = self.renewing.lock().await;
        if self.held().header != expiring {
            return self.held().header.clone();
        }
        // Not while another process logs in: the token is still good.
        if let Ok(Some(_lock)) = self.kept.lock(Duration::ZERO).await {
            if !self.adopt_stored(expiring.as_ref(), &[]).await {
                if let Err(e) = self.refresh().await {
                    tracing::warn!(error = %e, "the token could not be refreshed ahead of its expiry");
                }
            }
        }
        self.held().header.clone()
    }

    /// The server refused a request sent with `sent`: renews what it asks
    /// for. `Ok` when the request should be sent again.
    pub(crate) async fn refused(
        self: &Arc<Self>,
        step_up: bool,
        challenge: Option<&Challenge>,
        sent: Option<&HeaderValue>,
    ) -> Result<(), OAuthError> {
        let wait = self.config.login_wait.min(self.config.login_timeout);
        let renewing = tokio::time::timeout(wait, self.renewing.clone().lock_owned())
            .await
            .map_err(|_| self.pending())?;
        // Renewed by another request meanwhile: try that.
        if self.held().header.as_ref() != sent {
            return Ok(());
        }
        // Renewals of one server are one at a time across processes too.
        let lock = self.kept.lock(wait).await?.ok_or_else(|| self.pending())?;
        let wanted = challenge.map(Challenge::scopes).unwrap_or_default();
        if self
            .adopt_stored(sent, if step_up { &wanted } else { &[] })
            .await
        {
            return Ok(());
        }
        if step_up {
            let n = self.step_ups.fetch_add(1, Ordering::Relaxed) + 1;
            if n > MAX_STEP_UPS {
                return Err(OAuthError::StepUpLimit(MAX_STEP_UPS));
            }
            tracing::info!("the server asks for more scope; authorizing again");
        } else if sent.is_some() && self.refresh().await.is_ok() {
            return Ok(());
        }
        let failed = self
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some((_, why)) = failed.filter(|(at, _)| at.elapsed() < QUIET_AFTER_FAILURE) {
            return Err(OAuthError::FailedJustNow { why });
        }
        // The token a login just got was refused before the server ever
        // accepted it: a server that refuses every token gets no second
        // page within the quiet period.
        let fresh = self.fresh().clone();
        let refused_fresh = fresh.is_some_and(|(at, header)| {
            at.elapsed() < QUIET_AFTER_FAILURE && sent == Some(&header)
        });
        if refused_fresh && !step_up && self.config.grant == Grant::AuthorizationCode {
            return Err(OAuthError::FreshTokenRefused);
        }
        let this = self.clone();
        let challenge = challenge.cloned();
        let login = tokio::spawn(async move {
            let (_renewing, _lock) = (renewing, lock);
            let done = this.login(challenge.as_ref(), step_up).await;
            let now = tokio::time::Instant::now();
            match &done {
                Ok(()) => {
                    *this.fresh() = this.held().header.clone().map(|h| (now, h));
                    this.unproven.store(true, Ordering::Relaxed);
                }
                Err(e) => {
                    *this.failed.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some((now, e.to_string()))
                }
            }
            done
        });
        let joined = match self.config.login_wait < self.config.login_timeout {
            true => tokio::time::timeout(wait, login)
                .await
                // The login goes on; this request is answered now.
                .map_err(|_| self.pending())?,
            // The login ends (done or timed out) before the wait would.
            false => login.await,
        };
        joined.unwrap_or_else(|_| {
            Err(OAuthError::FailedJustNow {
                why: "the login stopped unexpectedly".into(),
            })
        })
    }

    /// A login is open (or another process's is) but not finished in the
    /// time a request waits.
    fn pending(&self) -> OAuthError {
        match self.config.login_wait < self.config.login_timeout {
            true => OAuthError::LoginPending {
                server: super::error::shown(&self.server),
            },
            false => OAuthError::TimedOut(self.config.login_timeout),
        }
    }

    /// The server accepted a request sent with `sent`: a login's token is
    /// no longer fresh once it has worked.
    pub(crate) fn accepted(&self, sent: &HeaderValue) {
        if !self.unproven.load(Ordering::Relaxed) {
            return;
        }
        let mut fresh = self.fresh();
        if fresh.as_ref().is_some_and(|(_, header)| header == sent) {
            *fresh = None;
            self.unproven.store(false, Ordering::Relaxed);
        }
    }

    fn fresh(&self) -> std::sync::MutexGuard<'_, Option<(tokio::time::Instant, HeaderValue)>> {
        self.fresh.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the tokens another process stored meanwhile, when they are
    /// not the ones sent and hold the scopes `wanted`. Whether it did.
    async fn adopt_stored(&self, sent: Option<&HeaderValue>, wanted: &[String]) -> bool {
        let stored = match self.kept.read().await {
            Ok(Some(stored)) => stored,
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(error = %e, "stored tokens not read");
                return false;
            }
        };
        let Some(tokens) = &stored.tokens else {
            return false;
        };
        let newer = header_of(Some(tokens)).as_ref() != sent;
        if newer && wanted.iter().all(|w| tokens.scopes.contains(w)) {
            *self.held() = Held::of(stored);
            return true;
        }
        false
    }

    /// Refreshes the access token and stores the new one.
    async fn refresh(&self) -> Result<(), OAuthError> {
        let entry = self.held().entry.clone();
        let (Some(registration), Some(metadata), Some(old)) =
            (&entry.registration, &entry.metadata, &entry.tokens)
        else {
            return Err(OAuthError::LoginNeeded {
                server: self.server.to_string(),
            });
        };
        let client = tokens::client(registration, metadata, None)?;
        let resource = entry.resource.as_deref().and_then(|r| Url::parse(r).ok());
        let fresh = tokens::refresh(&self.fetch, &client, old, resource.as_ref()).await?;
        tracing::info!("the access token was refreshed");
        self.keep(Entry {
            tokens: Some(fresh),
            ..entry
        })
        .await
    }

    /// Logs in; the caller holds the login lock.
    async fn login(&self, challenge: Option<&Challenge>, step_up: bool) -> Result<(), OAuthError> {
        let held_scopes = match step_up {
            true => self
                .held()
                .entry
                .tokens
                .as_ref()
                .map(|t| t.scopes.clone())
                .unwrap_or_default(),
            false => Vec::new(),
        };
        if self.config.grant == Grant::AuthorizationCode {
            tracing::warn!(server = %super::error::shown(&self.server), "a login is needed; opening the browser");
        }
        let ask = Ask {
            server: &self.server,
            config: &self.config,
            challenge,
            held: &held_scopes,
        };
        let stored = self.held().entry.clone();
        let entry = login(&self.fetch, &ask, stored).await?;
        self.keep(entry).await
    }

    /// Stores `entry` and uses its token from now on.
    async fn keep(&self, entry: Entry) -> Result<(), OAuthError> {
        let written = self.kept.write(&entry).await;
        *self.held() = Held::of(entry);
        written.map_err(OAuthError::from)
    }
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("server", &super::error::shown(&self.server))
            .finish_non_exhaustive()
    }
}

impl Held {
    fn of(entry: Entry) -> Self {
        let header = header_of(entry.tokens.as_ref());
        Self { entry, header }
    }
}

/// `Bearer …`, marked sensitive (never in a log).
fn header_of(tokens: Option<&Tokens>) -> Option<HeaderValue> {
    let token = &tokens?.access_token;
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}
