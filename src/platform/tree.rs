//! A server's whole process tree, ended as one. Servers start helpers
//! (`npx` → node, `uvx` → python, a shell → its pipeline); ending only the
//! process mcp-chain started leaves them running.
//!
//! - Unix: the server gets a process group of its own; the group is sent
//!   SIGTERM, then SIGKILL. On Linux the server also gets SIGTERM when
//!   mcp-chain dies outright (the parent-death signal, set between fork and
//!   exec); on macOS a server outlives a SIGKILLed mcp-chain only until its
//!   stdin closes, which a killed parent's pipe does.
//! - Windows: the server is put in a Job Object that kills everything in it
//!   when its last handle closes: when mcp-chain ends, however it ends, the
//!   tree ends with it. There is no gentle signal to a tree on Windows, so
//!   both ending steps terminate the job (the gentle part of shutdown is
//!   closing the server's stdin, which comes first on every platform).

use tokio::process::{Child, Command};

/// Sets up `cmd` so that what it starts can be ended as one tree.
pub(crate) fn prepare(cmd: &mut Command) {
    #[cfg(unix)]
    {
        cmd.process_group(0);
    }
    #[cfg(target_os = "linux")]
    {
        #[allow(unsafe_code)]
        // SAFETY: the closure runs in the forked child before exec and only
        // makes one prctl(2) system call, which is async-signal-safe; it
        // touches no memory of the parent and allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::TERM,
                ))
                .map_err(std::io::Error::from)
            });
        }
    }
    #[cfg(not(unix))]
    let _ = cmd;
}

/// How a running server's tree is ended.
#[derive(Debug)]
pub(crate) struct Tree {
    #[cfg(unix)]
    group: Option<rustix::process::Pid>,
    #[cfg(windows)]
    job: Option<job::Job>,
}

/// How hard to end it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum End {
    /// SIGTERM: the tree may clean up.
    Ask,
    /// SIGKILL.
    Force,
}

impl Tree {
    /// The tree of `child`, just started through a [`prepare`]d command.
    pub(crate) fn of(child: &Child) -> Self {
        #[cfg(unix)]
        {
            let group = child
                .id()
                .and_then(|id| rustix::process::Pid::from_raw(i32::try_from(id).ok()?));
            Self { group }
        }
        #[cfg(windows)]
        {
            let job = child.raw_handle().and_then(|process| match job::Job::holding(process) {
                Ok(job) => Some(job),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot put the server in a job object; only the server itself will be ended");
                    None
                }
            });
            Self { job }
        }
    }

    /// Ends every process of the tree that is left.
    pub(crate) fn end(&self, how: End) {
        #[cfg(unix)]
        if let Some(group) = self.group {
            let signal = match how {
                End::Ask => rustix::process::Signal::TERM,
                End::Force => rustix::process::Signal::KILL,
            };
            // ESRCH: the group is already gone, which is what we want.
            let _ = rustix::process::kill_process_group(group, signal);
        }
        #[cfg(windows)]
        if let Some(job) = &self.job {
            let _ = how;
            job.terminate();
        }
    }

    /// Whether any process of the tree is left.
    pub(crate) fn alive(&self) -> bool {
        #[cfg(unix)]
        {
            self.group
                .is_some_and(|group| rustix::process::test_kill_process_group(group).is_ok())
        }
        #[cfg(windows)]
        {
            self.job.as_ref().is_some_and(job::Job::alive)
        }
    }
}

#[cfg(windows)]
mod job {
    //! A Job Object with kill-on-close: the Win32 calls, in one place.

    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
        JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
        TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };

    /// Exit code of the processes a terminated job ends.
    const TERMINATED: u32 = 1;

    #[derive(Debug)]
    pub(super) struct Job(OwnedHandle);

    impl Job {
        /// A new job, killing its processes when its last handle closes,
        /// holding `process`.
        pub(super) fn holding(process: RawHandle) -> std::io::Result<Self> {
            #[allow(unsafe_code)]
            // SAFETY: plain Win32 calls with valid arguments: a null name and
            // attributes, a zeroed limit structure of the size given, and
            // handles that live for the call (ours, and the child's, which
            // tokio holds open while the child is running).
            unsafe {
                let handle = CreateJobObjectW(std::ptr::null(), std::ptr::null());
                if handle.is_null() {
                    return Err(std::io::Error::last_os_error());
                }
                let job = Self(OwnedHandle::from_raw_handle(handle));
                let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
                limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
                let set = SetInformationJobObject(
                    handle,
                    JobObjectExtendedLimitInformation,
                    std::ptr::from_ref(&limits).cast(),
                    u32::try_from(std::mem::size_of_val(&limits)).unwrap_or(u32::MAX),
                );
                if set == 0 || AssignProcessToJobObject(handle, process.cast()) == 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(job)
            }
        }

        pub(super) fn terminate(&self) {
            #[allow(unsafe_code)]
            // SAFETY: the job's handle is owned and open.
            unsafe {
                TerminateJobObject(self.0.as_raw_handle().cast(), TERMINATED);
            }
        }

        pub(super) fn alive(&self) -> bool {
            self.active() > 0
        }

        /// How many processes are in the job: the server and every process
        /// it started, and they started, that has not ended.
        pub(super) fn active(&self) -> u32 {
            #[allow(unsafe_code)]
            // SAFETY: the handle is owned and open; the structure is zeroed
            // and its size given.
            unsafe {
                let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = std::mem::zeroed();
                let ok = QueryInformationJobObject(
                    self.0.as_raw_handle().cast(),
                    JobObjectBasicAccountingInformation,
                    std::ptr::from_mut(&mut info).cast(),
                    u32::try_from(std::mem::size_of_val(&info)).unwrap_or(u32::MAX),
                    std::ptr::null_mut(),
                );
                if ok == 0 {
                    0
                } else {
                    info.ActiveProcesses
                }
            }
        }
    }
}

#[cfg(all(test, windows))]
mod tests {
    //! Under Wine in `make check-platforms`: a server that starts a helper
    //! (cmd → ping here, npx → node in life) is ended whole.
    use super::*;
    use std::time::{Duration, Instant};

    fn server_with_a_helper() -> Child {
        let mut cmd = Command::new("cmd.exe");
        cmd.args(["/c", "ping -n 120 127.0.0.1 > nul"])
            .kill_on_drop(false);
        prepare(&mut cmd);
        cmd.spawn().expect("cmd starts")
    }

    fn processes(tree: &Tree) -> u32 {
        tree.job.as_ref().map_or(0, job::Job::active)
    }

    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[tokio::test]
    async fn ending_the_tree_ends_the_helper_too() {
        let mut child = server_with_a_helper();
        let tree = Tree::of(&child);
        // The helper joined the server's job: two processes in it.
        until("the helper starts", || processes(&tree) >= 2).await;
        tree.end(End::Ask);
        until("the tree ends", || !tree.alive()).await;
        assert_eq!(processes(&tree), 0);
        child.wait().await.expect("the server is reaped");
    }

    #[tokio::test]
    async fn closing_the_job_ends_the_tree() {
        let mut child = server_with_a_helper();
        let tree = Tree::of(&child);
        until("the helper starts", || processes(&tree) >= 2).await;
        // What happens when mcp-chain dies: its handles close.
        drop(tree);
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
        assert!(status.is_ok(), "the server outlived the closed job");
    }
}
