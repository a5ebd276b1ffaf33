//! What asks mcp-chain to stop, as one message per request: the first
//! starts a graceful shutdown (answers owed are finished within the grace,
//! then the server's tree is ended), a second cuts it short.
//!
//! - Unix: SIGINT (Ctrl-C in a terminal) and SIGTERM (what a client or a
//!   service manager sends). SIGHUP asks for the config to be read again
//!   ([`reloads`]), as daemons take it; a terminal that goes away closes
//!   stdin as well, which ends a stdio session anyway.
//! - Windows: Ctrl-C and Ctrl-Break in a console, and the console being
//!   closed, the user logging off or the system shutting down (the last
//!   three give a process a few seconds, so they hurry at once).
//!
//! And, where the kernel cannot tie us to our parent, the parent going
//! away ([`super::parent`]).

use tokio::sync::mpsc;

/// The stream of stop requests; with `parent`, our parent going away is
/// one too (a stdio proxy lives for its client; a `--listen` front may
/// outlive the shell that started it).
pub(crate) fn shutdown(parent: bool) -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel(4);
    listen(tx.clone());
    if parent {
        super::parent::watch(tx);
    }
    rx
}

#[cfg(unix)]
fn listen(tx: mpsc::Sender<()>) {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                    if tx.send(()).await.is_err() {
                        break;
                    }
                }
            });
        }
        _ => tracing::warn!(
            "cannot listen for signals; SIGINT and SIGTERM will end mcp-chain at once"
        ),
    }
}

/// Sends one message on `tx` per SIGHUP: read the config again. Listened
/// for from the start, so a SIGHUP never ends mcp-chain (the default
/// action) even before a config could be reloaded.
#[cfg(unix)]
pub(crate) fn reloads(tx: mpsc::Sender<()>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP; it will end mcp-chain at once");
        return;
    };
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            // A reload is already waiting: this one adds nothing.
            let _ = tx.try_send(());
        }
    });
}

/// Windows has no SIGHUP: `[proxy] watch_config` is the way to reload.
#[cfg(windows)]
pub(crate) fn reloads(_: mpsc::Sender<()>) {}

#[cfg(windows)]
fn listen(tx: mpsc::Sender<()>) {
    use tokio::signal::windows;
    let (Ok(mut c), Ok(mut brk), Ok(mut close), Ok(mut logoff), Ok(mut down)) = (
        windows::ctrl_c(),
        windows::ctrl_break(),
        windows::ctrl_close(),
        windows::ctrl_logoff(),
        windows::ctrl_shutdown(),
    ) else {
        tracing::warn!("cannot listen for console events; Ctrl-C will end mcp-chain at once");
        return;
    };
    tokio::spawn(async move {
        loop {
            // Windows gives a closing console a few seconds: two requests,
            // so the shutdown hurries at once.
            let times = tokio::select! {
                _ = c.recv() => 1,
                _ = brk.recv() => 1,
                _ = close.recv() => 2,
                _ = logoff.recv() => 2,
                _ = down.recv() => 2,
            };
            for _ in 0..times {
                if tx.send(()).await.is_err() {
                    return;
                }
            }
        }
    });
}
