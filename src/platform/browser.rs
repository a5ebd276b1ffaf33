//! Opening a URL in the user's browser, the way each OS does it: `open` on
//! macOS, `xdg-open` elsewhere on Unix, the URL protocol handler on
//! Windows (through `rundll32`, which takes the URL as one argument and so
//! needs no shell quoting, unlike `cmd /c start`). The opener's stdout is
//! not ours: in stdio mode that is the protocol channel.
//!
//! An OS opener runs whatever the URL names: a `file:` program, an `smb:`
//! share, any registered protocol handler. So only web pages are opened:
//! https, or http on loopback; anything else is refused here, whoever
//! built the URL (the last line of defence behind discovery's checks).

use std::io;
use std::process::{Command, Stdio};
use url::Url;

/// The variable naming the command that opens a page mcp-chain shows a
/// person (the login, the approval page) instead of the browser: it is
/// run with the URL as its last argument (machines without a display,
/// tests).
pub(crate) const OPEN_URL_VAR: &str = "MCP_CHAIN_OPEN_URL";

/// Shows `url` to the person: the command `MCP_CHAIN_OPEN_URL` names, else
/// the browser. The program's name and why it could not start, on failure.
pub(crate) fn show(url: &Url) -> Result<(), (String, io::Error)> {
    match std::env::var(OPEN_URL_VAR)
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        Some(command) => {
            let mut words = command.split_whitespace();
            let program = words.next().unwrap_or_default().to_owned();
            let args: Vec<&str> = words.collect();
            run(&program, &args, url).map_err(|why| (program, why))
        }
        None => open(url),
    }
}

/// Starts the browser on `url`; the program's name and why it could not
/// start, on failure. Does not wait for the browser.
pub(crate) fn open(url: &Url) -> Result<(), (String, io::Error)> {
    let (program, args): (&str, &[&str]) = if cfg!(windows) {
        ("rundll32", &["url.dll,FileProtocolHandler"])
    } else if cfg!(target_os = "macos") {
        ("open", &[])
    } else {
        ("xdg-open", &[])
    };
    run(program, args, url).map_err(|e| (program.to_owned(), e))
}

/// Runs `program args… url` detached from our stdout, and reaps it; a
/// URL that is not a web page is refused before anything runs.
pub(crate) fn run(program: &str, args: &[&str], url: &Url) -> io::Result<()> {
    if !crate::config::is_secure(url) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "only https pages (http on loopback) are opened",
        ));
    }
    let mut child = Command::new(program)
        .args(args)
        .arg(url.as_str())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_pages_are_opened() {
        for bad in [
            "file:///C:/Windows/System32/calc.exe",
            "smb://host/share/payload.exe",
            "javascript:alert(1)",
            "vscode://extension/run",
            "http://example.com/login",
        ] {
            let url = Url::parse(bad).expect("a URL");
            // A program that would fail to start if it were ever run.
            let refused = run("/nonexistent/opener", &[], &url).expect_err(bad);
            assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied, "{bad}");
        }
    }
}
