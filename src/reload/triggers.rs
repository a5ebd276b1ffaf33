//! What asks for a reload: SIGHUP, always (Unix), and with `[proxy]
//! watch_config = true` the config file changing. The file's directory is
//! watched, not the file: an editor that saves by writing a new file and
//! renaming it over the old one replaces what a watch on the file would
//! follow. Bursts (an editor's write, rename and attribute change; several
//! saves in a row) become one reload once the file has been quiet for
//! [`QUIET`].

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the file must stay unchanged before it is read.
const QUIET: Duration = Duration::from_millis(200);

/// Reload requests, debounced.
pub(crate) struct Triggers {
    rx: mpsc::Receiver<()>,
    _watcher: Option<RecommendedWatcher>,
}

impl Triggers {
    /// SIGHUP, and the file at `path` when `watch` is set. A file that
    /// cannot be watched is said once; SIGHUP still works.
    pub(crate) fn new(path: &Path, watch: bool) -> Self {
        let (tx, rx) = mpsc::channel(1);
        crate::platform::signals::reloads(tx.clone());
        let watcher = match watch {
            true => match watching(path, tx) {
                Ok(watcher) => Some(watcher),
                Err(e) => {
                    tracing::warn!(config = %path.display(), error = %e, "cannot watch the config file; SIGHUP still reloads it");
                    None
                }
            },
            false => None,
        };
        Self {
            rx,
            _watcher: watcher,
        }
    }

    /// Waits for a request, then for the file to be quiet; `false` when no
    /// request can come any more.
    pub(crate) async fn next(&mut self) -> bool {
        if self.rx.recv().await.is_none() {
            return false;
        }
        loop {
            match tokio::time::timeout(QUIET, self.rx.recv()).await {
                Ok(Some(())) => continue,
                Ok(None) | Err(_) => return true,
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
