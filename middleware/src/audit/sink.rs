//! Where audit lines go: a file opened for appending, or stderr.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// `path = "-"`: write to stderr.
pub(super) const STDERR: &str = "-";

/// The audit log. Writes are whole lines, made under a lock, so lines from
/// concurrent requests never interleave.
#[derive(Debug)]
pub(super) enum Sink {
    Stderr,
    /// Opened with `O_APPEND`: every write lands at the end, even when
    /// another process (a second proxy, logrotate's copytruncate) writes too.
    File {
        path: PathBuf,
        file: Mutex<File>,
    },
}

impl Sink {
    /// Opens (creating with mode 0600: audit lines may hold arguments) the
    /// file at `path`, or stderr for `"-"`. An existing file keeps its mode.
    pub(super) fn open(path: &str) -> io::Result<Self> {
        if path == STDERR {
            return Ok(Self::Stderr);
        }
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(path)?;
        Ok(Self::File {
            path: PathBuf::from(path),
            file: Mutex::new(file),
        })
    }

    /// Writes one line and flushes it to the OS before returning, so the
    /// line survives the proxy being killed the moment after.
    pub(super) fn write_line(&self, line: &[u8]) -> io::Result<()> {
        match self {
            Self::Stderr => {
                let mut err = io::stderr().lock();
                err.write_all(line)?;
                err.flush()
            }
            Self::File { file, .. } => {
                // A panic mid-write leaves at worst a partial line; later
                // lines still belong at the end, so keep writing.
                let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
                file.write_all(line)?;
                file.flush()
            }
        }
    }

    /// For messages: the file's path, or `stderr`.
    pub(super) fn describe(&self) -> &Path {
        match self {
            Self::Stderr => Path::new("stderr"),
            Self::File { path, .. } => path,
        }
    }
}
