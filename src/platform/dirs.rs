//! Where mcp-chain keeps what it writes for a user across runs (the token
//! store of OAuth logins; pin files and audit logs a config puts there):
//! one directory per user, named the way each OS names such a place.
//!
//! | OS      | directory                                                 |
//! |---------|-----------------------------------------------------------|
//! | Linux   | `$XDG_STATE_HOME/mcp-chain`, else `~/.local/state/mcp-chain` |
//! | macOS   | `~/Library/Application Support/mcp-chain`                 |
//! | Windows | `%LOCALAPPDATA%\mcp-chain`                                |
//!
//! A config names it as `${MCP_CHAIN_STATE_DIR}` (setting that variable
//! moves it). It is found, not created: whatever writes a private file
//! there creates the missing directories, private to the user.

use std::path::PathBuf;

/// The variable a config writes for the directory; set in the
/// environment, it wins.
pub(crate) const STATE_DIR_VAR: &str = "MCP_CHAIN_STATE_DIR";

/// This user's state directory, or why there is none (the variable the
/// OS convention needs is unset).
pub(crate) fn state_dir() -> Result<PathBuf, NoStateDir> {
    state_dir_from(|name| std::env::var_os(name).filter(|value| !value.is_empty()))
}

/// There is no state directory: the variable the OS convention needs is
/// not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no state directory: {0} is not set (set {STATE_DIR_VAR} to choose one)")]
pub(crate) struct NoStateDir(pub(crate) &'static str);

fn state_dir_from(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf, NoStateDir> {
    if let Some(dir) = env(STATE_DIR_VAR) {
        return Ok(PathBuf::from(dir));
    }
    let under = |var: &'static str, path: &[&str]| -> Result<PathBuf, NoStateDir> {
        let base = env(var).ok_or(NoStateDir(var))?;
        Ok(path
            .iter()
            .fold(PathBuf::from(base), |dir, part| dir.join(part)))
    };
    if cfg!(windows) {
        under("LOCALAPPDATA", &["mcp-chain"])
    } else if cfg!(target_os = "macos") {
        under("HOME", &["Library", "Application Support", "mcp-chain"])
    } else {
        // XDG: a relative XDG_STATE_HOME is invalid and ignored.
        match env("XDG_STATE_HOME").map(PathBuf::from) {
            Some(base) if base.is_absolute() => Ok(base.join("mcp-chain")),
            _ => under("HOME", &[".local", "state", "mcp-chain"]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_variable_wins_everywhere() {
        let dir = state_dir_from(with(&[(STATE_DIR_VAR, "/srv/state"), ("HOME", "/h")]));
        assert_eq!(dir, Ok(PathBuf::from("/srv/state")));
    }

    #[test]
    fn each_os_names_its_own_place() {
        let env = with(&[
            ("HOME", "/home/me"),
            ("XDG_STATE_HOME", "/xdg"),
            ("LOCALAPPDATA", r"C:\Users\me\AppData\Local"),
        ]);
        let expected = if cfg!(windows) {
            PathBuf::from(r"C:\Users\me\AppData\Local").join("mcp-chain")
        } else if cfg!(target_os = "macos") {
            PathBuf::from("/home/me/Library/Application Support/mcp-chain")
        } else {
            PathBuf::from("/xdg/mcp-chain")
        };
        assert_eq!(state_dir_from(env), Ok(expected));
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn linux_falls_back_to_home_when_xdg_is_unset_or_relative() {
        for env in [
            with(&[("HOME", "/home/me")]),
            with(&[("HOME", "/home/me"), ("XDG_STATE_HOME", "rel")]),
        ] {
            assert_eq!(
                state_dir_from(env),
                Ok(PathBuf::from("/home/me/.local/state/mcp-chain"))
            );
        }
        let missing = state_dir_from(with(&[])).expect_err("no HOME");
        assert_eq!(missing, NoStateDir("HOME"));
        let said = missing.to_string();
        assert!(said.contains(STATE_DIR_VAR), "{said}");
    }
}
