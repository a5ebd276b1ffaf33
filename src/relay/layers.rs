//! A session's layers, and how a reload changes them.
//!
//! A session holds its own instance of each layer that applies to it (per
//! session state: approve's remembered answers, validate's schemas, the
//! timeouts watched). When the policy changes, the session keeps the
//! instance of every entry the reload kept (the same entry, at the same
//! place) and makes one of each new entry; what it kept keeps its state.

use crate::chain::AnyLayer;
use crate::layers::{Entry, Policy};
use std::sync::Arc;
use tokio::sync::watch;

/// The session's instance of an entry, if the entry applies to it.
pub(crate) type Make = Box<dyn Fn(&Entry) -> Option<AnyLayer> + Send + Sync>;

pub(crate) struct SessionLayers {
    /// The entries the instances were made from, in order.
    entries: Vec<Arc<Entry>>,
    instances: Vec<Option<AnyLayer>>,
    make: Make,
    /// Where new policies come from; `None`: the layers never change.
    pub(super) updates: Option<watch::Receiver<Arc<Policy>>>,
}

/// What a change of layers may change for a client.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Changed {
    /// A layer that edits or hides what a listing shows (filter, rewrite,
    /// pin, limit) was added, removed or changed: the client should list
    /// again.
    pub(crate) lists: bool,
}

impl SessionLayers {
    /// Layers that never change (a pool's own sessions).
    pub(crate) fn fixed(layers: Vec<AnyLayer>) -> Self {
        Self {
            entries: Vec::new(),
            instances: layers.into_iter().map(Some).collect(),
            make: Box::new(|_| None),
            updates: None,
        }
    }

    /// Layers made by `make` from the policy `updates` holds, following it.
    pub(crate) fn following(mut updates: watch::Receiver<Arc<Policy>>, make: Make) -> Self {
        let policy = updates.borrow_and_update().clone();
        let instances = policy.entries.iter().map(|e| make(e)).collect();
        Self {
            entries: policy.entries.clone(),
            instances,
            make,
            updates: Some(updates),
        }
    }

    /// The session's layers, in order.
    pub(crate) fn layers(&self) -> Vec<AnyLayer> {
        self.instances.iter().flatten().cloned().collect()
    }

    /// Takes up `policy`: an entry kept (the same one, at the same place)
    /// keeps its instance, any other gets a new one.
    pub(super) fn take_up(&mut self, policy: &Policy) -> Changed {
        let mut changed = Changed::default();
        let mut instances = Vec::with_capacity(policy.entries.len());
        for (n, entry) in policy.entries.iter().enumerate() {
            let kept = self.entries.get(n).filter(|old| Arc::ptr_eq(old, entry));
            match kept {
                Some(_) => instances.push(self.instances[n].take()),
                None => {
                    changed.lists |= shapes_lists(entry);
                    instances.push((self.make)(entry));
                }
            }
        }
        for (n, old) in self.entries.iter().enumerate() {
            let gone = policy
                .entries
                .get(n)
                .is_none_or(|new| !Arc::ptr_eq(old, new));
            changed.lists |= gone && shapes_lists(old);
        }
        self.entries.clone_from(&policy.entries);
        self.instances = instances;
        changed
    }
}

/// Whether the layer changes what a listing shows.
fn shapes_lists(entry: &Entry) -> bool {
    matches!(entry.layer.name(), "filter" | "rewrite" | "pin" | "limit")
}
