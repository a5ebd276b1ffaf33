//! Opening a URL in the user's browser, the way each OS does it: `open` on
//! macOS, `xdg-open` elsewhere on Unix, the URL protocol handler on
//! Windows (through `rundll32`, which takes the URL as one argument and so
//! needs no shell quoting, unlike `cmd /c start`). The opener's stdout is
//! not ours: in stdio mode that is the protocol channel.

use std::io;
use std::process::{Command, Stdio};

/// Starts the browser on `url`; the program's name and why it could not
/// start, on failure. Does not wait for the browser.
pub(crate) fn open(url: &str) -> Result<(), (String, io::Error)> {
    let (program, args): (&str, &[&str]) = if cfg!(windows) {
        ("rundll32", &["url.dll,FileProtocolHandler"])
    } else if cfg!(target_os = "macos") {
        ("open", &[])
    } else {
        ("xdg-open", &[])
    };
    run(program, args, url).map_err(|e| (program.to_owned(), e))
}

/// Runs `program args… url` detached from our stdout, and reaps it.
pub(crate) fn run(program: &str, args: &[&str], url: &str) -> io::Result<()> {
    let mut child = Command::new(program)
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()?;
    std::thread::spawn(move || child.wait());
    Ok(())
}
