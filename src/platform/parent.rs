//! mcp-chain ending when whoever started it dies without closing its
//! stdin (a client killed outright: its pipe to us may stay open in a
//! grandchild). The end is a shutdown request like a signal, so answers
//! owed are finished and the server's tree ended in order.
//!
//! - Linux: the kernel sends SIGTERM when our parent dies (the
//!   parent-death signal), which `signals` takes as a request.
//! - macOS and other Unix: the parent is looked at every second; being
//!   adopted (a parent id that is no longer the first one) means it died.
//! - Windows: a thread waits on the parent process's handle.

use std::time::Duration;
use tokio::sync::mpsc;

/// How often the parent is looked at where nothing tells us.
#[cfg_attr(any(target_os = "linux", windows), allow(dead_code))]
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Asks for a shutdown on `tx` when our parent is gone.
pub(crate) fn watch(tx: mpsc::Sender<()>) {
    #[cfg(target_os = "linux")]
    {
        // SIGTERM, which `signals` listens for.
        let _ =
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM));
        drop(tx);
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        let first = rustix::process::getppid();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LOOK_EVERY).await;
                if rustix::process::getppid() != first {
                    tracing::warn!("the process that started mcp-chain is gone; stopping");
                    let _ = tx.send(()).await;
                    return;
                }
            }
        });
    }
    #[cfg(windows)]
    {
        let Some(parent) = windows::parent() else {
            tracing::debug!("cannot find the process that started mcp-chain; not watching it");
            return;
        };
        std::thread::spawn(move || {
            if windows::wait_for_exit(parent) {
                tracing::warn!("the process that started mcp-chain is gone; stopping");
                let _ = tx.blocking_send(());
            }
        });
    }
}

#[cfg(windows)]
mod windows {
    //! The parent's process id, and waiting for a process: Win32 calls.

    use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W,
        TH32CS_SNAPPROCESS,
    };
    use windows_sys::Win32::System::Threading::{
        OpenProcess, WaitForSingleObject, INFINITE, PROCESS_SYNCHRONIZE,
    };

    /// Our parent's process id, from a snapshot of the process table.
    pub(super) fn parent() -> Option<u32> {
        let me = std::process::id();
        #[allow(unsafe_code)]
        // SAFETY: the snapshot handle is checked and closed; the entry is
        // zeroed with its size set, as Process32FirstW requires.
        unsafe {
            let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
            if snapshot == INVALID_HANDLE_VALUE {
                return None;
            }
            let mut entry: PROCESSENTRY32W = std::mem::zeroed();
            entry.dwSize = u32::try_from(std::mem::size_of::<PROCESSENTRY32W>()).ok()?;
            let mut found = None;
            let mut more = Process32FirstW(snapshot, &mut entry) != 0;
            while more {
                if entry.th32ProcessID == me {
                    found = Some(entry.th32ParentProcessID);
                    break;
                }
                more = Process32NextW(snapshot, &mut entry) != 0;
            }
            CloseHandle(snapshot);
            found
        }
    }

    /// Waits until process `pid` exits; `false` when it cannot be waited
    /// on (gone already, or not ours to see).
    pub(super) fn wait_for_exit(pid: u32) -> bool {
        #[allow(unsafe_code)]
        // SAFETY: the process handle is checked, waited on, and closed.
        unsafe {
            let process = OpenProcess(PROCESS_SYNCHRONIZE, 0, pid);
            if process.is_null() {
                return false;
            }
            WaitForSingleObject(process, INFINITE);
            CloseHandle(process);
            true
        }
    }
}
