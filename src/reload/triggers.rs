//! What asks for a reload: SIGHUP, always (Unix), and with `[proxy]
//! watch_config = true` the config file changing. The file's directory is
//! watched, not the file: an editor that saves by writing a new file and
//! renaming it over the old one replaces what a watch on the file would
//! follow. Bursts (an editor's write, rename and attribute change; several
//! saves in a row) become one reload once the file has been quiet for
//! [`QUIET`]. A SIGHUP is someone asking now: it reloads at once.

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the file must stay unchanged before it is read.
const QUIET: Duration = Duration::from_millis(200);

/// Reload requests, debounced.
pub(crate) struct Triggers {
    signals: mpsc::Receiver<()>,
    files: mpsc::Receiver<()>,
    _watcher: Option<RecommendedWatcher>,
    /// Kept, so that neither stream ends where nothing feeds it (no SIGHUP
    /// on Windows, no watcher unless asked).
    _open: [mpsc::Sender<()>; 2],
}

impl Triggers {
    /// SIGHUP, and the file at `path` when `watch` is set. A file that
    /// cannot be watched is said once; SIGHUP still works.
    pub(crate) fn new(path: &Path, watch: bool) -> Self {
        let (signalled, signals) = mpsc::channel(1);
        crate::platform::signals::reloads(signalled.clone());
        let (changed, files) = mpsc::channel(1);
        let watcher = match watch {
            true => match watching(path, changed.clone()) {
                Ok(watcher) => Some(watcher),
                Err(e) => {
                    tracing::warn!(config = %path.display(), error = %e, "cannot watch the config file; SIGHUP still reloads it");
                    None
                }
            },
            false => None,
        };
        Self {
            signals,
            files,
            _watcher: watcher,
            _open: [signalled, changed],
        }
    }

    /// Waits for a SIGHUP, or for the file to change and then be quiet.
    pub(crate) async fn next(&mut self) {
        tokio::select! {
            Some(()) = self.signals.recv() => return,
            Some(()) = self.files.recv() => {}
        }
        loop {
            tokio::select! {
                Some(()) = self.signals.recv() => return,
                quiet = tokio::time::timeout(QUIET, self.files.recv()) => match quiet {
                    Ok(Some(())) => continue,
                    Ok(None) | Err(_) => return,
                },
            }
        }
    }
}

/// A watcher of `path`'s directory that sends on `tx` whenever `path` is
/// written, created, renamed or removed there.
fn watching(path: &Path, tx: mpsc::Sender<()>) -> notify::Result<RecommendedWatcher> {
    let path = std::path::absolute(path)?;
    let name = path.file_name().map(ToOwned::to_owned);
    let dir = path.parent().unwrap_or(Path::new(".")).to_owned();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        if event.paths.iter().any(|p| p.file_name() == name.as_deref()) {
            let _ = tx.try_send(());
        }
    })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    Ok(watcher)
}
