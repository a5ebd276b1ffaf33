//! Pins replicas keep as one (`[state]`): what is pinned of each tool,
//! prompt and template is a row of the shared table `pins:{digest of the
//! server pinned}` (each replica's file may be elsewhere), so a drift accepted on one replica is accepted on
//! every other within a second (their clients told `list_changed`), and a
//! replica started on an empty disk does not trust on first use what the
//! others pinned long ago: a kind with rows in the table is judged
//! against them.
//!
//! The pin file stays each replica's copy (a restart without the store
//! still has its pins). What drifted is each replica's own observation
//! (`pending`), kept in its file as without `[state]`. A first pin is put
//! only where the table has none (the first replica's wins; a later one
//! judges against it); an accept replaces the row. A table emptied by a
//! restart of Redis is filled again from the replicas' files.

use super::disk::Entry;
use super::error::PinFileError;
use super::fingerprint::{changed, Fields, Kind, Texts};
use super::service::{PinLayer, LAYER};
use super::store::{Drift, Store};
use crate::shared::{self, SharedState, Unavailable};
use crate::{Message, RequestId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a replica reads the table again without being told (for an
/// announcement lost while the change channel was down; the table holds
/// every pinned definition's text, so it is not read for nothing).
const READ_EVERY: Duration = Duration::from_secs(15);

/// One row: what is pinned of a name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Row {
    pinned: Fields,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    texts: Option<Texts>,
}

/// The row's field: the kind's section and the name.
fn field(kind: Kind, name: &str) -> String {
    format!("{}:{name}", kind.section())
}

fn parse_field(field: &str) -> Option<(Kind, &str)> {
    let (section, name) = field.split_once(':')?;
    let kind = Kind::ALL.into_iter().find(|k| k.section() == section)?;
    Some((kind, name))
}

/// What each pin file pins, as the replicas name it (the server it
/// guards: every replica's the same, wherever its own file is).
static SHARED_AS: Mutex<BTreeMap<PathBuf, String>> = Mutex::new(BTreeMap::new());

/// Names what the pin file at `path` pins for every replica: the server
/// it guards (the binary says so at start).
pub fn share_as(path: &Path, server: &str) {
    crate::lock(&SHARED_AS).insert(path.to_owned(), server.to_owned());
}

/// The table of the pin file at `path`: by the server it pins, else by
/// its path.
pub(super) fn table_of(path: &Path) -> String {
    let named = crate::lock(&SHARED_AS).get(path).cloned();
    let server = named.unwrap_or_else(|| path.display().to_string());
    format!("pins:{}", shared::digest(&server))
}

impl Store {
    /// Takes up the table: rows pinned otherwise than here replace this
    /// replica's pins (a drift they settle is forgotten), and a kind the
    /// table has rows of is no longer seen for the first time. Whether
    /// the pins changed. Rows this replica has and the table lacks are put
    /// back (only where still missing).
    pub(super) async fn take_shared(&self, store: &dyn SharedState) -> Result<bool, Unavailable> {
        let table = table_of(self.path());
        let rows = store.rows(&table).await?;
        let mut taken: BTreeMap<String, Row> = BTreeMap::new();
        for (field, bytes) in rows {
            if let Ok(row) = serde_json::from_slice::<Row>(&bytes) {
                taken.insert(field, row);
            }
        }
        let (changed_here, missing) = self.with_file(|file, first_sight| {
            let mut changed_here = false;
            for (field, row) in &taken {
                let Some((kind, name)) = parse_field(field) else {
                    continue;
                };
                changed_here |= first_sight.remove(&kind);
                let entry = file.section_mut(kind).entry(name.to_owned()).or_default();
                changed_here |= settle(entry, row);
            }
            let mut missing = Vec::new();
            for kind in Kind::ALL {
                for (name, entry) in file.section(kind).into_iter().flatten() {
                    let field = field(kind, name);
                    if let (Some(pinned), false) = (&entry.pinned, taken.contains_key(&field)) {
                        let row = Row {
                            pinned: pinned.clone(),
                            texts: entry.texts.clone(),
                        };
                        missing.push((field, row));
                    }
                }
            }
            ((changed_here, missing), changed_here)
        });
        for (field, row) in missing {
            let bytes = serde_json::to_vec(&row).unwrap_or_default();
            store.put(&table, &field, bytes, true).await?;
        }
        self.shared_once
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(changed_here)
    }

    /// Puts what this replica pinned of `drifts` (accepted) in the table,
    /// replacing the rows there.
    async fn give_accepted(
        &self,
        store: &dyn SharedState,
        drifts: &[Drift],
    ) -> Result<(), Unavailable> {
        let table = table_of(self.path());
        let rows: Vec<(String, Row)> = self.with_file(|file, _| {
            let rows = drifts
                .iter()
                .filter_map(|d| {
                    let entry = file.section(d.kind)?.get(&d.name)?;
                    let row = Row {
                        pinned: entry.pinned.clone()?,
                        texts: entry.texts.clone(),
                    };
                    Some((field(d.kind, &d.name), row))
                })
                .collect();
            (rows, false)
        });
        for (field, row) in rows {
            let bytes = serde_json::to_vec(&row).unwrap_or_default();
            store.put(&table, &field, bytes, false).await?;
        }
        Ok(())
    }
}

impl PinLayer {
    /// With `[state]`, takes up the replicas' pins before a listing is
    /// judged, until it once did (then their announcements, which every
    /// replica follows, keep it up to date; a kind this replica has not
    /// pinned yet is read again each time, so a first listing is never
    /// trusted on its own). Unavailable: judged on this replica's pins, except a kind
    /// never pinned here under `on_unavailable = "refuse"` (trusting it on
    /// first use could trust what the others hold as drifted): refused.
    pub(super) async fn take_shared(&self, id: &RequestId, kind: Kind) -> Result<(), Box<Message>> {
        let Some(shared) = crate::shared::installed() else {
            return Ok(());
        };
        if !self.following.swap(true, Ordering::Relaxed) {
            let follow = follow(Arc::downgrade(&self.store), shared.clone());
            tokio::spawn(follow);
        }
        if self.store.shared_once.load(Ordering::Relaxed) && !self.store.unseen(kind) {
            return Ok(());
        }
        let Err(why) = self.store.take_shared(shared.as_ref()).await else {
            return Ok(());
        };
        match shared.fallback() {
            crate::shared::Fallback::Refuse if self.store.unseen(kind) => {
                let error = crate::shared::refusal(LAYER, &why);
                Err(Box::new(Message::error(Some(id.clone()), error)))
            }
            _ => Ok(()),
        }
    }

    /// With `[state]`, puts what a judgement pinned first (the pins moved
    /// on from `version`) in the replicas' table, in the background.
    pub(super) fn give_shared(&self, version: u64) {
        let Some(shared) = crate::shared::installed() else {
            return;
        };
        if self.store.version() == version {
            return;
        }
        let store = self.store.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = store.take_shared(shared.as_ref()).await;
            });
        }
    }
}

/// Makes `entry` pinned as `row` says; whether it changed.
fn settle(entry: &mut Entry, row: &Row) -> bool {
    if entry.pinned.as_ref() == Some(&row.pinned) {
        return false;
    }
    entry.pinned = Some(row.pinned.clone());
    entry.texts = row.texts.clone();
    match entry.pending.take() {
        // Accepted elsewhere: what this replica saw is what is pinned now.
        Some(pending) if pending.fields == row.pinned => {}
        Some(mut pending) => {
            pending.changed = changed(&row.pinned, &pending.fields);
            entry.pending = Some(pending);
        }
        None => {}
    }
    true
}

/// Accepts drifts in the pin file at `path` and, with `[state]`, puts
/// what is now pinned of them in the replicas' table (every replica takes
/// it up within a second).
pub async fn accept(path: &Path, names: &[String]) -> Result<Vec<Drift>, PinFileError> {
    let store = Store::open_existing(path)?;
    let drifts = store.accept(names)?;
    if let Some(shared) = shared::installed() {
        store
            .give_accepted(shared.as_ref(), &drifts)
            .await
            .map_err(|why| PinFileError::Shared(why.to_string()))?;
    }
    Ok(drifts)
}

/// Follows the table for as long as `store` is in use: read again when a
/// replica announces a change to it, and every [`READ_EVERY`].
pub(super) async fn follow(store: std::sync::Weak<Store>, shared: Arc<dyn SharedState>) {
    let Some(table) = store.upgrade().map(|s| table_of(s.path())) else {
        return;
    };
    let mut follow = crate::shared::Follow::new(shared.as_ref(), table, READ_EVERY);
    loop {
        follow.next().await;
        let Some(store) = store.upgrade() else {
            return;
        };
        // Unavailable: the pins here hold until it is back.
        let _ = store.take_shared(shared.as_ref()).await;
    }
}
