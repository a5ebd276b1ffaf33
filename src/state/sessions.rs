//! `[front] max_sessions_per_principal` across replicas: each caller's
//! sessions are a sorted set in Redis (`{prefix}sessions:DIGEST`), each
//! session a digest of its id with a lease on the server's clock. A new
//! session is let in by one script that drops the ended leases, counts and
//! adds (`sessions.lua`): two replicas opening the caller's last session
//! at once cannot both have it. Each replica renews the leases of the
//! sessions it holds every [`RENEW_EVERY`]; a replica that dies frees its
//! callers' sessions when their leases end ([`LEASE`]). Neither the
//! caller's name nor a session id is stored in clear.

use super::Link;
use mcp_chain_middleware::shared::{digest, Fallback, Unavailable};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

static SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("sessions.lua")));

/// How long a session counts after its replica last said it holds it.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// How often a replica renews its sessions' leases.
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Says the store is away (at most once a minute, with every other use).
type Say = Box<dyn Fn(&Unavailable) + Send + Sync>;

/// Every caller's sessions, in Redis.
pub(crate) struct SharedSessions {
    link: Arc<Link>,
    pub(crate) fallback: Fallback,
    say: Say,
}

impl SharedSessions {
    pub(super) fn new(link: Arc<Link>, fallback: Fallback, say: Say) -> Self {
        Self {
            link,
            fallback,
            say,
        }
    }

    /// `answer`, its failure said.
    fn said<T>(&self, answer: Result<T, Unavailable>) -> Result<T, Unavailable> {
        if let Err(why) = &answer {
            (self.say)(why);
        }
        answer
    }

    fn key(&self, caller: &str) -> String {
        format!("{}sessions:{}", self.link.prefix, digest(caller))
    }

    /// Counts `session` for `caller`, unless it holds `max` already
    /// (`Ok(false)`).
    pub(crate) async fn open(
        &self,
        caller: &str,
        session: &str,
        max: usize,
    ) -> Result<bool, Unavailable> {
        let args = vec![
            "open".to_owned(),
            lease_ms(),
            max.to_string(),
            digest(session),
        ];
        let let_in = self.link.run_on::<i64>(&SCRIPT, &self.key(caller), args);
        Ok(self.said(let_in.await)? == 1)
    }

    /// Stops counting `sessions`, by caller, in one round trip.
    pub(crate) async fn close(
        &self,
        held: HashMap<String, Vec<String>>,
    ) -> Result<(), Unavailable> {
        let mut pipe = redis::pipe();
        for (caller, sessions) in &held {
            let command = pipe.cmd("ZREM").arg(self.key(caller));
            for session in sessions {
                command.arg(digest(session));
            }
            command.ignore();
        }
        self.said(self.link.ask_all::<()>(&pipe).await)
    }

    /// Renews the leases of the sessions this replica holds, by caller
    /// (and counts again those a Redis restarted empty forgot).
    pub(crate) async fn renew(
        &self,
        held: HashMap<String, Vec<String>>,
    ) -> Result<(), Unavailable> {
        let asks = held.into_iter().map(|(caller, sessions)| {
            let mut args = vec!["renew".to_owned(), lease_ms()];
            args.extend(sessions.iter().map(|s| digest(s)));
            self.link.run_on::<i64>(&SCRIPT, &self.key(&caller), args)
        });
        let answers = futures_util::future::join_all(asks).await;
        self.said(answers.into_iter().try_for_each(|answer| answer.map(drop)))
    }
}

fn lease_ms() -> String {
    LEASE.as_millis().to_string()
}
