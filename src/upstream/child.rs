//! Starting, draining and stopping the MCP server child process.
//!
//! The child inherits our whole environment plus the configured `env`
//! (clients pass secrets that way), runs in a process group of its own so
//! that shutdown reaches what it started (`npx` → node, `uvx` → python), and
//! has its stderr copied to ours line by line by a task of its own: a pipe
//! nobody drains fills up and stalls the server.

use crate::config::CommandConfig;
use crate::platform::command::{self, NotFound};
use crate::platform::tree::{self, End, Tree};
use crate::transport::stdio::widen;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child as Process, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

/// How long the process group gets between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    #[error("cannot start the server `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("the server process has no {0} pipe")]
    MissingPipe(&'static str),
    #[error(transparent)]
    NotFound(#[from] NotFound),
}

/// A running child, its pipes taken out by the relay.
#[derive(Debug)]
pub(crate) struct Child {
    child: Process,
    /// The child and what it started, ended as one.
    tree: Tree,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
}

impl Child {
    pub(crate) fn spawn(cfg: &CommandConfig) -> Result<Self, SpawnError> {
        let program = command::program(&cfg.command)?;
        let mut cmd = Command::new(program);
        cmd.args(&cfg.args)
            .envs(&cfg.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Backstop only: shutdown normally ends the whole tree first.
            .kill_on_drop(true);
        if let Some(cwd) = &cfg.cwd {
            cmd.current_dir(cwd);
        }
        tree::prepare(&mut cmd);
        let mut child = cmd.spawn().map_err(|source| SpawnError::Spawn {
            command: cfg.command.clone(),
            source,
        })?;
        let tree = Tree::of(&child);
        let stderr = child
            .stderr
            .take()
            .ok_or(SpawnError::MissingPipe("stderr"))?;
        tokio::spawn(drain_stderr(stderr));
        if let Some(pipe) = &child.stdin {
            widen(pipe);
        }
        if let Some(pipe) = &child.stdout {
            widen(pipe);
        }
        tracing::info!(command = %cfg.command, args = ?cfg.args, pid = ?child.id(), "started the server");
        Ok(Self {
            tree,
            stdin: Some(child.stdin.take().ok_or(SpawnError::MissingPipe("stdin"))?),
            stdout: Some(
                child
                    .stdout
                    .take()
                    .ok_or(SpawnError::MissingPipe("stdout"))?,
            ),
            child,
        })
    }

    /// The child's stdin, for its writer; taken once per child.
    pub(crate) fn take_stdin(&mut self) -> ChildStdin {
        self.stdin
            .take()
            .expect("a child's stdin is taken once, by its writer")
    }

    /// The child's stdout, for its reader; taken once per child.
    pub(crate) fn take_stdout(&mut self) -> ChildStdout {
        self.stdout
            .take()
            .expect("a child's stdout is taken once, by its reader")
    }

    /// The child's stdin before its writer takes it (the replayed handshake).
    pub(crate) fn stdin_mut(&mut self) -> Option<&mut ChildStdin> {
        self.stdin.as_mut()
    }

    /// Waits for the child to exit on its own.
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Ends the child and everything it started: wait up to `grace` for it
    /// to exit by itself (its stdin should be closed by now), or until
    /// `hurry` turns true (a second signal), then ask the tree to end
    /// (SIGTERM), then force it (SIGKILL). Returns the child's status.
    pub(crate) async fn shutdown(
        &mut self,
        grace: Duration,
        hurry: &mut watch::Receiver<bool>,
    ) -> Option<ExitStatus> {
        let waited = tokio::select! {
            waited = tokio::time::timeout(grace, self.child.wait()) => waited.ok(),
            _ = hurry.wait_for(|hurry| *hurry) => None,
        };
        let status = match waited {
            Some(status) => status.ok(),
            None => {
                tracing::warn!(grace = ?grace, "the server did not exit after its stdin closed; terminating it");
                self.tree.end(End::Ask);
                match tokio::time::timeout(TERM_GRACE, self.child.wait()).await {
                    Ok(status) => status.ok(),
                    Err(_) => {
                        self.tree.end(End::Force);
                        self.child.wait().await.ok()
                    }
                }
            }
        };
        self.end_group().await;
        status
    }

    /// The child is gone; anything left of its tree is ended too.
    async fn end_group(&mut self) {
        if !self.tree.alive() {
            return;
        }
        self.tree.end(End::Ask);
        let deadline = tokio::time::Instant::now() + TERM_GRACE;
        while self.tree.alive() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if self.tree.alive() {
            self.tree.end(End::Force);
        }
    }
}

/// The longest line of the child's stderr passed on; the rest of a longer
/// one is dropped (a line is held whole before it is written, so this
/// bounds what a server that never writes a newline costs).
const MAX_STDERR_LINE: usize = 16 * 1024;

/// Copies the child's stderr to ours, line by line, until it closes. Each
/// line is the server's text shown to a person: its control and invisible
/// characters are escaped and it is cut at [`MAX_STDERR_LINE`].
async fn drain_stderr(stderr: ChildStderr) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut cut = false;
    let mut out = tokio::io::stderr();
    loop {
        let buf = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(buf) => buf,
        };
        let end = buf.iter().position(|b| *b == b'\n');
        let chunk = &buf[..end.unwrap_or(buf.len())];
        let room = MAX_STDERR_LINE - line.len();
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        cut |= chunk.len() > room;
        let taken = chunk.len() + usize::from(end.is_some());
        reader.consume(taken);
        if end.is_some() {
            // Our stderr gone: keep draining so the child never stalls.
            let _ = out.write_all(&shown_line(&line, cut)).await;
            line.clear();
            cut = false;
        }
    }
    if !line.is_empty() {
        let _ = out.write_all(&shown_line(&line, cut)).await;
    }
}

/// A line of the child's stderr as it is passed on.
fn shown_line(line: &[u8], cut: bool) -> Vec<u8> {
    let text = String::from_utf8_lossy(line);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    let mut shown = mcp_chain_middleware::shown::defanged(text).into_owned();
    if cut {
        shown += "… (cut)";
    }
    shown.push('\n');
    shown.into_bytes()
}
