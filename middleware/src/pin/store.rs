//! The pin file: what was pinned of each tool, prompt and resource
//! template, and what drifted from it, kept on disk so a person can review
//! it, commit it, accept a change (`mcp-chain pin accept`) or edit it by
//! hand, and so a restart does not forget.
//!
//! ```json
//! {
//!   "version": 1,
//!   "tools": {
//!     "add": {
//!       "pinned": {"description": "sha256:…", "inputSchema": "sha256:…"},
//!       "pending": {"seen": "2026-11-23T10:00:00.000000Z", "changed": ["description"],
//!                   "fields": {"description": "sha256:…", "inputSchema": "sha256:…"}}
//!     }
//!   }
//! }
//! ```
//!
//! Sections and names in sorted order, two-space indents: the same pins
//! give the same file. Written whole to a temporary file (0600) and renamed
//! over, so a reader never sees half of it. The file is read again when it
//! changes on disk (an accept from the command line, a hand edit); one that
//! cannot be read then is ignored with a warning and the pins in memory
//! stay, rather than trusting nothing or everything.

pub use super::disk::Drift;
use super::disk::{self, drifts, read, stamp, Entry, Pending, PinFile, VERSION};
use super::error::PinFileError;
use super::fingerprint::{changed, Fields, Kind, Seen, Texts};
use crate::audit::Timestamp;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// How long a call may rely on the pins without looking at the file.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What the pins say of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    Pinned,
    Drifted(Drift),
    /// Never listed.
    Unknown,
}

/// The pin file and what is known of it.
#[derive(Debug)]
pub(crate) struct Store {
    path: PathBuf,
    state: Mutex<State>,
    /// With `[state]`: the replicas' pins were taken up at least once
    /// (from then on, their announcements keep this replica up to date).
    pub(super) shared_once: std::sync::atomic::AtomicBool,
}

#[derive(Debug)]
struct State {
    file: PinFile,
    /// The file on disk as last read or written (modified time, length).
    stamp: Option<(SystemTime, u64)>,
    /// When the file on disk was last looked at.
    looked: Instant,
    /// Kinds with no section in the file when it was opened: their first
    /// listing is pinned as it comes (trust on first use).
    first_sight: BTreeSet<Kind>,
    /// Counts the times the file was read again with other pins.
    generation: u64,
    /// Counts every change to the pins, in memory or on disk: a listing
    /// page judged at one version is judged the same way again while the
    /// version stands.
    version: u64,
}

impl Store {
    /// Opens the pin file at `path`. When there is none yet, it is written
    /// at the first listing, with the directories above it that are
    /// missing (a first run's state directory); the nearest that exists
    /// must be a directory now, so a path through a file is found at
    /// start-up (and `mcp-chain check` creates nothing).
    pub(crate) fn open(path: &Path) -> Result<Self, PinFileError> {
        let file = match read(path)? {
            Some(file) => file,
            None => {
                let dir = match path.parent() {
                    Some(dir) if !dir.as_os_str().is_empty() => dir,
                    _ => Path::new("."),
                };
                let nearest = dir
                    .ancestors()
                    .find(|d| d.exists())
                    .unwrap_or(Path::new("."));
                if !nearest.is_dir() {
                    return Err(PinFileError::NoDirectory {
                        path: path.to_owned(),
                        dir: dir.to_owned(),
                    });
                }
                PinFile {
                    version: VERSION,
                    ..PinFile::default()
                }
            }
        };
        let first_sight = Kind::ALL
            .into_iter()
            .filter(|&kind| file.section(kind).is_none())
            .collect();
        Ok(Self {
            shared_once: Default::default(),
            path: path.to_owned(),
            state: Mutex::new(State {
                file,
                stamp: stamp(path),
                looked: Instant::now(),
                first_sight,
                generation: 0,
                version: 0,
            }),
        })
    }

    /// Opens a pin file that must exist (the command line's `pin`).
    pub(crate) fn open_existing(path: &Path) -> Result<Self, PinFileError> {
        if !path.exists() {
            return Err(PinFileError::NotYet {
                path: path.to_owned(),
            });
        }
        Self::open(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding it leaves pins that are still whole.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn save(&self, state: &mut State) -> Result<(), PinFileError> {
        disk::write(&self.path, &state.file)?;
        state.stamp = stamp(&self.path);
        state.version += 1;
        Ok(())
    }

    fn save_or_warn(&self, state: &mut State) {
        if let Err(e) = self.save(state) {
            tracing::warn!(layer = "pin", error = %e, "pins not saved; they hold in memory");
        }
    }

    /// Runs `change` on the pins and the kinds not seen yet; when it says
    /// it changed them (its second answer), they are saved and their
    /// version and generation move on (a session watching tells its
    /// client).
    pub(super) fn with_file<R>(
        &self,
        change: impl FnOnce(&mut PinFile, &mut BTreeSet<Kind>) -> (R, bool),
    ) -> R {
        let mut state = self.lock();
        self.refresh_locked(&mut state);
        let State {
            file, first_sight, ..
        } = &mut *state;
        let (answer, changed) = change(file, first_sight);
        if changed {
            state.generation += 1;
            state.version += 1;
            self.save_or_warn(&mut state);
        }
        answer
    }

    /// Reads the file again if it changed on disk. Whether the pins are
    /// other than they were.
    pub(crate) fn refresh(&self) -> bool {
        let mut state = self.lock();
        self.refresh_locked(&mut state)
    }

    fn refresh_locked(&self, state: &mut State) -> bool {
        state.looked = Instant::now();
        let now = stamp(&self.path);
        if now == state.stamp {
            return false;
        }
        state.stamp = now;
        match read(&self.path) {
            Ok(Some(file)) if file != state.file => {
                state.file = file;
                state.generation += 1;
                state.version += 1;
                true
            }
            Ok(_) => false,
            Err(e) => {
                tracing::warn!(layer = "pin", error = %e, "pin file not read again; the pins in memory hold");
                false
            }
        }
    }

    /// Judges one page of a listing of `kind`: the items' keys and
    /// fingerprints. Records what is new or changed; the drifts, in order.
    /// `last_page`: the listing has no more pages.
    pub(crate) fn judge(&self, kind: Kind, items: Vec<Seen>, last_page: bool) -> Vec<Drift> {
        let mut state = self.lock();
        self.refresh_locked(&mut state);
        let first_sight = state.first_sight.contains(&kind);
        let mut dirty = state.file.section(kind).is_none();
        let section = state.file.section_mut(kind);
        let mut drifts: Vec<Drift> = Vec::new();
        let mut as_pinned = Vec::new();
        for (name, fields, texts) in items {
            let entry = section.entry(name.clone()).or_default();
            if entry.pinned.as_ref() == Some(&fields) {
                // A pin written without its text gets it now.
                if entry.texts.is_none() {
                    entry.texts = Some(texts);
                    dirty = true;
                }
                as_pinned.push(name);
                continue;
            }
            // Read by scan's rules before it is trusted: a poisoned
            // definition is not pinned on first sight, it waits for a
            // person like a drift.
            let fresh = entry.pending.as_ref().map(|p| &p.fields) != Some(&fields);
            let flagged = if fresh {
                crate::scan::flagged_definition(&texts)
            } else {
                entry
                    .pending
                    .as_ref()
                    .map_or_else(Vec::new, |p| p.flagged.clone())
            };
            if first_sight && entry.pinned.is_none() && flagged.is_empty() {
                entry.pinned = Some(fields);
                entry.texts = Some(texts);
                entry.pending = None;
                dirty = true;
                continue;
            }
            let changed = entry
                .pinned
                .as_ref()
                .map_or_else(Vec::new, |pinned| changed(pinned, &fields));
            if fresh {
                entry.pending = Some(Pending {
                    seen: Timestamp::now().to_string(),
                    changed: changed.clone(),
                    fields,
                    texts: Some(texts),
                    flagged: flagged.clone(),
                });
                dirty = true;
            }
            drifts.push(Drift {
                kind,
                name,
                changed,
                flagged,
            });
        }
        // Back as pinned: what drifted is forgotten, unless the same name
        // is listed again, differently, in this page (a server listing a
        // name twice cannot clear one with the other).
        for name in as_pinned {
            if !drifts.iter().any(|d| d.name == name) {
                if let Some(entry) = section.get_mut(&name) {
                    dirty |= entry.pending.take().is_some();
                }
            }
        }
        if last_page && state.first_sight.remove(&kind) {
            state.version += 1;
        }
        if dirty {
            // Saved or not, the pins in memory changed.
            state.version += 1;
            self.save_or_warn(&mut state);
        }
        drifts
    }

    /// What the pins say of `name` (the file on disk looked at again when
    /// it was not for a second: a call does not cost a `stat`).
    pub(crate) fn status(&self, kind: Kind, name: &str) -> Status {
        let mut state = self.lock();
        if state.looked.elapsed() >= LOOK_EVERY {
            self.refresh_locked(&mut state);
        }
        let entry = state.file.section(kind).and_then(|s| s.get(name));
        match entry {
            Some(Entry {
                pending: Some(pending),
                ..
            }) => Status::Drifted(Drift {
                kind,
                name: name.to_owned(),
                changed: pending.changed.clone(),
                flagged: pending.flagged.clone(),
            }),
            Some(Entry {
                pinned: Some(_), ..
            }) => Status::Pinned,
            _ => Status::Unknown,
        }
    }

    /// Whether no listing of `kind` was pinned yet (trust on first use).
    pub(crate) fn unseen(&self, kind: Kind) -> bool {
        self.lock().first_sight.contains(&kind)
    }

    /// The pins' version (see `State::version`), once the file on disk
    /// was looked at.
    pub(crate) fn version(&self) -> u64 {
        let mut state = self.lock();
        self.refresh_locked(&mut state);
        state.version
    }

    /// How many times the pins were read again from disk with a change.
    pub(crate) fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Every drift recorded, by kind and name.
    pub(crate) fn drifts(&self) -> Vec<Drift> {
        drifts(&self.lock().file)
    }

    /// Each drift with what is pinned (none for a new one) and what was
    /// seen, field by field: what a person compares before accepting. Each
    /// field as text where the file keeps it, else its fingerprint.
    pub(crate) fn compared(&self) -> Vec<(Drift, Option<Fields>, Fields)> {
        let shown = |fields: &Fields, texts: Option<&Texts>| -> Fields {
            fields
                .iter()
                .map(|(name, digest)| {
                    let text = texts.and_then(|t| t.get(name)).unwrap_or(digest);
                    (name.clone(), text.clone())
                })
                .collect()
        };
        let state = self.lock();
        drifts(&state.file)
            .into_iter()
            .filter_map(|drift| {
                let entry = state.file.section(drift.kind)?.get(&drift.name)?;
                let pending = entry.pending.as_ref()?;
                let seen = shown(&pending.fields, pending.texts.as_ref());
                let pinned = entry
                    .pinned
                    .as_ref()
                    .map(|fields| shown(fields, entry.texts.as_ref()));
                Some((drift, pinned, seen))
            })
            .collect()
    }

    /// The names pinned and unchanged, by kind.
    pub(crate) fn pinned(&self) -> Vec<(Kind, String)> {
        let state = self.lock();
        let mut pinned = Vec::new();
        for kind in Kind::ALL {
            for (name, entry) in state.file.section(kind).into_iter().flatten() {
                if entry.pinned.is_some() && entry.pending.is_none() {
                    pinned.push((kind, name.clone()));
                }
            }
        }
        pinned
    }

    /// Accepts the drifts of `names` (every drift `scan` does not flag
    /// when empty: a flagged one is accepted only by its name, so never
    /// silently): what was seen becomes what is pinned. The drifts
    /// accepted; `Err` naming what has no drift to accept, with nothing
    /// accepted.
    pub(crate) fn accept(&self, names: &[String]) -> Result<Vec<Drift>, PinFileError> {
        let mut state = self.lock();
        self.refresh_locked(&mut state);
        let drifts: Vec<Drift> = drifts(&state.file)
            .into_iter()
            .filter(|d| {
                if names.is_empty() {
                    d.flagged.is_empty()
                } else {
                    names.contains(&d.name)
                }
            })
            .collect();
        let missing: Vec<String> = names
            .iter()
            .filter(|n| !drifts.iter().any(|d| &d.name == *n))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(PinFileError::NoDrift(missing));
        }
        for drift in &drifts {
            let entry = state
                .file
                .section_mut(drift.kind)
                .get_mut(&drift.name)
                .expect("a drift's entry exists");
            let accepted = entry.pending.take();
            entry.texts = accepted.as_ref().and_then(|p| p.texts.clone());
            entry.pinned = accepted.map(|p| p.fields);
        }
        if !drifts.is_empty() {
            self.save(&mut state)?;
        }
        Ok(drifts)
    }
}
