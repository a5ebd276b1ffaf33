//! Listing pages judged before: a client lists often, a server answers
//! with the same page, and fingerprinting a thousand tools each time cost
//! milliseconds. A page whose text is byte for byte one judged at the
//! pins' current version is judged the same way again, so its verdict is
//! kept and reused.

use super::fingerprint::Kind;
use super::store::Drift;
use std::sync::Mutex;

/// Pages remembered.
const KEPT: usize = 8;

/// A page's verdict.
#[derive(Debug, Clone)]
pub(super) struct Verdict {
    pub(super) last_page: bool,
    pub(super) drifts: Vec<Drift>,
}

#[derive(Debug)]
struct Page {
    kind: Kind,
    version: u64,
    text: Vec<u8>,
    verdict: Verdict,
}

#[derive(Debug, Default)]
pub(super) struct Pages(Mutex<Vec<Page>>);

impl Pages {
    /// The verdict on `text` of `kind`, if it was judged at `version`.
    pub(super) fn get(&self, kind: Kind, version: u64, text: &[u8]) -> Option<Verdict> {
        let pages = self.0.lock().unwrap_or_else(|p| p.into_inner());
        pages
            .iter()
            .find(|p| p.kind == kind && p.version == version && p.text == text)
            .map(|p| p.verdict.clone())
    }

    /// Keeps a verdict reached at `version` (the oldest goes).
    pub(super) fn keep(&self, kind: Kind, version: u64, text: &[u8], verdict: &Verdict) {
        let mut pages = self.0.lock().unwrap_or_else(|p| p.into_inner());
        pages.retain(|p| p.version == version);
        if pages.len() == KEPT {
            pages.remove(0);
        }
        pages.push(Page {
            kind,
            version,
            text: text.to_vec(),
            verdict: verdict.clone(),
        });
    }
}
