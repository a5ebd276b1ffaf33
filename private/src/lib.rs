//! Files mcp-chain writes next to a user's data (the pin file; the audit
//! log; the token store), and how: private to the user, and never through
//! a path someone else prepared. A planted symlink or file at a
//! predictable temporary name would otherwise redirect the write or keep
//! the planter's mode, so a whole-file write goes to a new file of a
//! random name in the same directory, created exclusively (an existing
//! name, symlink or not, is an error, never followed), then renamed over
//! the target.
//!
//! Private means, per platform: mode 0600 on Unix (0700 for a directory
//! mcp-chain creates); on Windows a protected DACL with one entry, the
//! current user's full control, set as the file is created (see
//! `windows.rs`), so nothing is inherited from a shared parent. A missing
//! parent directory is created.
//!
//! A crate of its own so that its `unsafe` (eleven blocks, all in
//! `windows.rs`: building the user-only security descriptor and the
//! `CreateFileW` call that creates a file with it) stays out of the
//! middleware crate, which handles messages and forbids `unsafe`; the pin
//! and audit layers and the binary's token store all write through it.
//! Unix needs none: a mode is an option of `OpenOptions` and `DirBuilder`.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[cfg(windows)]
mod windows;

/// Opens `path` for appending, created private to the user when it does
/// not exist; an existing file keeps its permissions.
pub fn open_append(path: &Path) -> io::Result<File> {
    create_parent(path)?;
    #[cfg(windows)]
    {
        windows::open(path, windows::Open::Append)
    }
    #[cfg(not(windows))]
    {
        unix_private(std::fs::OpenOptions::new().create(true).append(true)).open(path)
    }
}

/// Creates `path`, which must not exist (a symlink there is an error, not
/// followed), private to the user, for writing.
fn create_new(path: &Path) -> io::Result<File> {
    #[cfg(windows)]
    {
        windows::open(path, windows::Open::CreateNew)
    }
    #[cfg(not(windows))]
    {
        unix_private(std::fs::OpenOptions::new().write(true).create_new(true)).open(path)
    }
}

#[cfg(not(windows))]
fn unix_private(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

/// Creates the directories above `path` that are missing, private to the
/// user on Unix (0700); on Windows they inherit their parent's ACL (a
/// user's profile is theirs alone) and the file itself is restricted.
fn create_parent(path: &Path) -> io::Result<()> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(parent)
}

/// Makes `dir` a directory private to the user: created 0700 when
/// missing; an existing one that others may enter (group or other bits
/// set) is tightened to 0700, and one that cannot be tightened (another
/// user's) is an error, never used as it is. On Windows each file carries
/// its own user-only ACL, so the directory is only created.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "others may open it (mode {:o}) and it cannot be made private: {e}",
                        mode & 0o777
                    ),
                )
            })?;
        }
    }
    Ok(())
}

/// Replaces `path` with `bytes` whole: a reader sees the old file or the
/// new one, never half of either.
pub fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    create_parent(path)?;
    let tmp = temporary_beside(path)?;
    let written = create_new(&tmp)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A fresh name in `path`'s directory: `.NAME.RANDOM.tmp`.
fn temporary_beside(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut random = [0u8; 8];
    getrandom::fill(&mut random)
        .map_err(|_| io::Error::other("no randomness for a temporary name"))?;
    let random: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".{random}.tmp"));
    Ok(path.with_file_name(tmp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcp-chain-private-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        dir
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_others_may_enter_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = dir("open");
        let open = dir.join("oauth");
        std::fs::create_dir(&open).expect("created");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("0777");
        private_dir(&open).expect("tightened");
        let mode = std::fs::metadata(&open).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let fresh = dir.join("new/oauth");
        private_dir(&fresh).expect("created");
        let mode = std::fs::metadata(&fresh)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_whole_write_replaces_the_file_and_leaves_nothing_beside() {
        let dir = dir("whole");
        let path = dir.join("pins.json");
        write_whole(&path, b"one\n").expect("written");
        write_whole(&path, b"two\n").expect("written again");
        assert_eq!(std::fs::read(&path).expect("read"), b"two\n");
        let names: Vec<_> = std::fs::read_dir(&dir).expect("dir").flatten().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_directories_above_are_created_private() {
        let dir = dir("parents");
        let pins = dir.join("state").join("mcp-chain").join("pins.json");
        write_whole(&pins, b"pins\n").expect("written");
        let log = dir.join("logs").join("audit.jsonl");
        open_append(&log).expect("opened");
        assert!(log.is_file());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for made in [
                dir.join("state"),
                dir.join("state/mcp-chain"),
                dir.join("logs"),
            ] {
                let mode = std::fs::metadata(&made).expect("meta").permissions().mode();
                assert_eq!(mode & 0o777, 0o700, "{}", made.display());
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_temporary_file_or_symlink_is_neither_followed_nor_reused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = dir("planted");
        let path = dir.join("pins.json");
        let victim = dir.join("victim");
        std::fs::write(&victim, b"keep").expect("victim");
        // The old fixed name, planted as a symlink and as a world-readable file.
        std::os::unix::fs::symlink(&victim, dir.join("pins.json.tmp")).expect("symlink");
        write_whole(&path, b"pins\n").expect("written");
        assert_eq!(std::fs::read(&victim).expect("victim"), b"keep");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A fresh name each time: never one that exists.
        let a = temporary_beside(&path).expect("a name");
        let b = temporary_beside(&path).expect("a name");
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(dir.as_path()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
