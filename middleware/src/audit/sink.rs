//! Where audit lines go: a file opened for appending, or stderr.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// `path = "-"`: write to stderr.
pub(super) const STDERR: &str = "-";

/// Queued lines written at once when they reach this size.
const FLUSH_AT: usize = 64 * 1024;

/// The audit log. Lines are added under a lock, so lines from concurrent
/// requests never interleave, and written in order: a request's line at
/// once, with any queued before it; the others (answers, notifications)
/// queued and written together at the end of the burst that made them, one
/// write(2) for many lines instead of one each.
#[derive(Debug)]
pub(super) struct Sink {
    /// The file's path, or `stderr`.
    path: PathBuf,
    /// Lines go to the file at `path` (not stderr).
    file: bool,
    log: Mutex<Log>,
}

#[derive(Debug)]
struct Log {
    out: Out,
    /// Lines not written yet.
    queued: Vec<u8>,
}

#[derive(Debug)]
enum Out {
    Stderr,
    /// Opened with `O_APPEND`: every write lands at the end, even when
    /// another process (a second proxy, logrotate's copytruncate) writes too.
    File(File),
}

/// What [`Sink::write_later`] did with a line.
#[derive(Debug)]
pub(super) enum Queued {
    /// First in an empty queue: someone must [`flush`](Sink::flush) soon.
    NeedsFlush,
    /// Behind others, which someone already will flush, or written.
    Done,
    /// The queue was full and writing it failed.
    Failed(io::Error),
}

impl Sink {
    /// Opens (creating it private to the user, see [`mcp_chain_private`]: audit lines
    /// may hold arguments) the
    /// file at `path`, or stderr for `"-"`. An existing file keeps its mode.
    pub(super) fn open(path: &str) -> io::Result<Self> {
        let out = if path == STDERR {
            Out::Stderr
        } else {
            Out::File(mcp_chain_private::open_append(path.as_ref())?)
        };
        let file = path != STDERR;
        let path = PathBuf::from(if file { path } else { "stderr" });
        let log = Log {
            out,
            queued: Vec::new(),
        };
        Ok(Self {
            path,
            file,
            log: Mutex::new(log),
        })
    }

    /// The file lines go to; `None` for stderr.
    pub(super) fn file(&self) -> Option<&Path> {
        self.file.then_some(self.path.as_path())
    }

    /// Writes one line (`line` adds it to the queue, newline included),
    /// after those queued, and hands it to the OS before returning, so the
    /// line survives the proxy being killed the moment after.
    pub(super) fn write_now(&self, line: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let mut log = self.lock();
        line(&mut log.queued);
        log.write()
    }

    /// Queues one line (`line` adds it), to be written by the next
    /// [`write_now`] or [`flush`](Self::flush), or at once when the queue is
    /// full. Lines are written straight into the queue, not built apart
    /// and copied in.
    ///
    /// [`write_now`]: Self::write_now
    pub(super) fn write_later(&self, line: impl FnOnce(&mut Vec<u8>)) -> Queued {
        let mut log = self.lock();
        let first = log.queued.is_empty();
        line(&mut log.queued);
        if log.queued.len() >= FLUSH_AT {
            // Whoever was to flush finds the queue empty; nothing is lost.
            return match log.write() {
                Ok(()) => Queued::Done,
                Err(e) => Queued::Failed(e),
            };
        }
        if first {
            Queued::NeedsFlush
        } else {
            Queued::Done
        }
    }

    /// Writes the queued lines.
    pub(super) fn flush(&self) -> io::Result<()> {
        self.lock().write()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        // A panic mid-write leaves at worst a partial line; later lines
        // still belong at the end, so keep writing.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// For messages: the file's path, or `stderr`.
    pub(super) fn describe(&self) -> &Path {
        &self.path
    }
}

impl Log {
    /// Writes the queue out and empties it, also when writing fails: lines
    /// that could not be written are reported, not kept to grow without
    /// bound.
    fn write(&mut self) -> io::Result<()> {
        if self.queued.is_empty() {
            return Ok(());
        }
        let written = match &mut self.out {
            Out::Stderr => io::stderr().lock().write_all(&self.queued),
            Out::File(file) => file.write_all(&self.queued),
        };
        self.queued.clear();
        if self.queued.capacity() > 4 * FLUSH_AT {
            // One huge line (a payload) should not stay allocated.
            self.queued = Vec::new();
        }
        written
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // The last answers of a session that ends before its flush ran.
        let _ = self.lock().write();
    }
}
