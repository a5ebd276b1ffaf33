//! Where the switches are kept: a private file of the state directory,
//! per server, read again every [`WATCH_EVERY`]; or, with `[state]`, the
//! replicas' shared state, one set per server for every replica, read
//! again at once when any replica announces a change.

use super::{Off, Switchboard, Unreadable, WATCH_EVERY};
use std::collections::BTreeSet;
use std::sync::Arc;

impl Switchboard {
    pub(super) fn read_all(&self) -> Result<Vec<Off>, Unreadable> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Unreadable {
                path: self.path.display().to_string(),
                why: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Unreadable {
                path: self.path.display().to_string(),
                why: e.to_string(),
            }),
        }
    }

    pub(super) fn read(&self) -> Result<BTreeSet<String>, Unreadable> {
        Ok(self
            .read_all()?
            .into_iter()
            .filter(|o| o.server == self.server)
            .map(|o| o.tool)
            .collect())
    }

    pub(super) fn set_in_file(&self, tool: &str, off: bool) -> std::io::Result<()> {
        let mut all = self
            .read_all()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let entry = Off {
            server: self.server.clone(),
            tool: tool.to_owned(),
        };
        all.retain(|o| *o != entry);
        if off {
            all.push(entry);
        }
        all.sort();
        let mut bytes = serde_json::to_vec_pretty(&all).unwrap_or_default();
        bytes.push(b'\n');
        mcp_chain_private::write_whole(&self.path, &bytes)
    }

    /// A switch of this server in the replicas' shared state: one row per
    /// tool switched off, so two people switching two tools on two
    /// replicas at once both count (and every replica is told).
    /// Unavailable: the file instead with `on_unavailable = "local"`, else
    /// refused.
    pub(super) async fn set_shared(
        &self,
        store: &dyn crate::shared::SharedState,
        tool: &str,
        off: bool,
    ) -> std::io::Result<()> {
        let table = self.table();
        let done = match off {
            true => store.put(&table, tool, b"off".to_vec(), false).await,
            false => store.remove(&table, tool).await,
        };
        match done {
            Ok(_) => Ok(()),
            Err(why) => self.unavailable(store, why, tool, off),
        }
    }

    pub(super) fn unavailable(
        &self,
        store: &dyn crate::shared::SharedState,
        why: crate::shared::Unavailable,
        tool: &str,
        off: bool,
    ) -> std::io::Result<()> {
        match store.fallback() {
            crate::shared::Fallback::Local => {
                tracing::warn!(error = %crate::shown::shown(&why.0, 300), "console: [state] unavailable; the switch is kept on this replica only");
                self.set_in_file(tool, off)
            }
            crate::shared::Fallback::Refuse => Err(std::io::Error::other(why.to_string())),
        }
    }

    /// This server's switches' table in the shared state.
    pub(super) fn table(&self) -> String {
        format!("switches:{}", crate::shared::digest(&self.server))
    }

    /// Takes up the switches now in the shared state.
    pub(super) async fn refresh_shared(&self, store: &dyn crate::shared::SharedState) {
        let Ok(rows) = store.rows(&self.table()).await else {
            return; // kept as it was: an unreachable store turns nothing on
        };
        let now: BTreeSet<String> = rows.into_iter().map(|(tool, _)| tool).collect();
        self.take_up(now);
    }

    pub(super) fn take_up(&self, now: BTreeSet<String>) {
        let changed = {
            let mut current = crate::lock(&self.off);
            let changed = *current != now;
            *current = now;
            changed
        };
        if changed {
            self.changed.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Reads the file again (another process may have switched).
    pub(super) fn refresh(&self) {
        let Ok(now) = self.read() else {
            return; // kept as it was: a half-written or broken file turns nothing on
        };
        self.take_up(now);
    }

    /// Follows other processes' switches for as long as the process runs:
    /// the file read again every [`WATCH_EVERY`]; with `[state]`, the
    /// replicas' shared switches, read again at once when any replica
    /// announces a change (and every [`WATCH_EVERY`], for what an
    /// interrupted announcement missed).
    pub async fn follow(self: Arc<Self>) {
        let Some(store) = crate::shared::installed() else {
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                self.refresh();
            }
        };
        let mut follow = crate::shared::Follow::new(store.as_ref(), self.table(), WATCH_EVERY);
        self.refresh_shared(store.as_ref()).await;
        loop {
            follow.next().await;
            self.refresh_shared(store.as_ref()).await;
        }
    }
}
