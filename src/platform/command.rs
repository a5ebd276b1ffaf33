//! Finding the program a server's command names. On Unix the system's own
//! search of `PATH` is what users expect, and it is used as it is. On
//! Windows a command named without an extension, as Claude Desktop configs
//! write them (`npx`, `uvx`), is often a batch file (`npx.cmd`) that the
//! standard search, which only tries `.exe`, never finds: there it is
//! looked for in each `PATH` directory with each of `PATHEXT`'s extensions
//! in turn, as `cmd.exe` does, and when nothing is found the error says
//! what was tried.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The extensions a server's program may have, in cmd.exe's default order.
#[cfg_attr(not(windows), allow(dead_code))]
const STARTABLE: &str = ".COM;.EXE;.BAT;.CMD";

/// Nothing in `PATH` answers to the command.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot find the server `{command}`: tried {tried} in each of the {dirs} directories of PATH"
)]
pub(crate) struct NotFound {
    pub(crate) command: String,
    tried: String,
    dirs: usize,
}

/// What to start for `command`.
pub(crate) fn program(command: &str) -> Result<OsString, NotFound> {
    #[cfg(windows)]
    {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let pathext = std::env::var_os("PATHEXT");
        let path = path.to_string_lossy();
        let pathext = pathext.as_ref().map(|e| e.to_string_lossy());
        search(command, &path, pathext.as_deref(), Path::is_file)
    }
    #[cfg(not(windows))]
    Ok(OsString::from(command))
}

/// The Windows search, for `command` given `PATH` and `PATHEXT` (`;`
/// separated) and a test of whether a file exists.
#[cfg_attr(not(windows), allow(dead_code))]
fn search(
    command: &str,
    path: &str,
    pathext: Option<&str>,
    exists: impl Fn(&Path) -> bool,
) -> Result<OsString, NotFound> {
    let named = Path::new(command);
    // A path, or a name with its extension: started as it is written.
    if command.contains(['\\', '/', ':']) || named.extension().is_some() {
        return Ok(OsString::from(command));
    }
    // Of PATHEXT, in its order, what CreateProcess can start (.com,
    // .exe) and what the standard library starts through cmd.exe (.bat,
    // .cmd); scripts for other hosts (.vbs, .js) are not servers.
    let extensions: Vec<&str> = pathext
        .unwrap_or(STARTABLE)
        .split(';')
        .filter(|e| STARTABLE.split(';').any(|s| s.eq_ignore_ascii_case(e)))
        .collect();
    let dirs: Vec<&str> = path.split(';').filter(|d| !d.is_empty()).collect();
    for dir in &dirs {
        for ext in &extensions {
            let candidate: PathBuf =
                Path::new(dir.trim_matches('"')).join(format!("{command}{ext}"));
            if exists(&candidate) {
                return Ok(candidate.into_os_string());
            }
        }
    }
    Err(NotFound {
        command: command.to_owned(),
        tried: extensions
            .iter()
            .map(|e| format!("{command}{e}"))
            .collect::<Vec<_>>()
            .join(", "),
        dirs: dirs.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_is_found_with_pathext_in_path_order() {
        // Windows' file names are not case-sensitive; `\` and `/` both
        // separate (the test runs on Linux and under Wine).
        let exists = |p: &Path| {
            let p = p.to_string_lossy().to_lowercase().replace('\\', "/");
            matches!(
                p.as_str(),
                "c:/node/npx.cmd" | "c:/tools/npx.exe" | "c:/node/node.exe"
            )
        };
        let path = "C:\\node;\"C:\\tools\"";
        let at = |dir: &str, file: &str| Path::new(dir).join(file).into_os_string();
        // The first directory's batch file comes before the second's .exe.
        assert_eq!(
            search("npx", path, None, exists).expect("found"),
            at("C:\\node", "npx.CMD")
        );
        assert_eq!(
            search("node", path, Some(".EXE;.CMD"), exists).expect("found"),
            at("C:\\node", "node.EXE")
        );
        // Scripts for other hosts are not tried.
        let vbs = search("uvx", path, Some(".VBS;.EXE"), exists).expect_err("not found");
        assert!(!vbs.to_string().contains(".VBS"), "{vbs}");
        // Written with an extension, or as a path: as it is.
        assert_eq!(
            search("npx.cmd", path, None, exists).expect("as is"),
            "npx.cmd"
        );
        assert_eq!(
            search("C:\\x\\y", "", None, |_| false).expect("as is"),
            "C:\\x\\y"
        );
        let missing = search("uvx", path, None, exists).expect_err("not found");
        let said = missing.to_string();
        assert!(
            said.contains("uvx.COM, uvx.EXE, uvx.BAT, uvx.CMD") && said.contains("2 directories"),
            "{said}"
        );
    }
}
