//! `[console]`: mcp-chain's own pages for a person, served by the running
//! process: the approval page where a call waits when the client cannot
//! ask (`approve` with `ask = [..., "page"]`). Loopback only: the page
//! decides which tools run and has no login of its own, so a config that
//! would serve it elsewhere is refused at start.

use super::validate::Problem;
use serde::Deserialize;
use std::net::SocketAddr;

/// `[console]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConsoleFile {
    listen: Option<String>,
    open: Option<String>,
}

/// When the browser is opened at the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAt {
    /// When a call starts waiting while none did (once per burst).
    FirstPending,
    /// Never: the URL is only printed.
    Never,
}

/// `[console]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleConfig {
    pub listen: SocketAddr,
    pub open: OpenAt,
}

pub(super) fn console(
    file: Option<ConsoleFile>,
    problems: &mut Vec<Problem>,
) -> Option<ConsoleConfig> {
    let file = file?;
    let mut problem = |message: String| problems.push((None, format!("console.{message}")));
    let listen = match file
        .listen
        .as_deref()
        .unwrap_or("127.0.0.1:0")
        .parse::<SocketAddr>()
    {
        Ok(addr) if addr.ip().is_loopback() => addr,
        Ok(addr) => {
            problem(format!(
                "listen: {addr} is not loopback; the console decides which tools run and has no login of its own, so it is served on 127.0.0.1 or [::1] only"
            ));
            return None;
        }
        Err(e) => {
            problem(format!("listen: not an address (host:port): {e}"));
            return None;
        }
    };
    let open = match file.open.as_deref() {
        None | Some("first-pending") => OpenAt::FirstPending,
        Some("never") => OpenAt::Never,
        Some(other) => {
            problem(format!(
                "open: {other:?} is not \"first-pending\" or \"never\""
            ));
            OpenAt::FirstPending
        }
    };
    Some(ConsoleConfig { listen, open })
}
