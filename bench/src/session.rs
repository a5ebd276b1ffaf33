//! One MCP session with a spawned process (the fixture itself, or a relay
//! in front of it): write request lines, read answer lines, read the
//! process's memory from /proc.

use crate::Result;
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Our side's read buffer: large, so a 10 MiB answer needs few reads.
const READ_BUFFER_BYTES: usize = 1024 * 1024;

/// How long a process may take to exit after its stdin closed.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Lines that missed the fast path and were parsed in full (should stay 0:
/// a full parse of every answer would weigh on every mode).
pub(crate) static SLOW_PARSES: AtomicU64 = AtomicU64::new(0);

/// How to start one mode's process.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<OsString>,
    pub(crate) env: Vec<(String, OsString)>,
    /// What the client puts before tool names (a rewrite's prefix).
    pub(crate) tool_prefix: &'static str,
    /// How many copies of the fixture's tools a listing holds (a gateway
    /// of three servers lists three).
    pub(crate) listed_copies: usize,
    /// The process whose memory the figures show, when it is not the one
    /// launched (a `front-*` mode's server).
    pub(crate) memory_of: Option<u32>,
}

/// What one line from the server side is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    Ok(u64),
    Error(u64, String),
    Notification,
    Other,
}

/// Classifies a line: a prefix check for what the fixture and mcp-chain
/// write (`{"jsonrpc":"2.0","id":N,"result":…`), a full parse otherwise.
pub(crate) fn classify(line: &[u8]) -> Line {
    const RESPONSE: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    const NOTIFICATION: &[u8] = br#"{"jsonrpc":"2.0","method":"#;
    if let Some(rest) = line.strip_prefix(RESPONSE) {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let id = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse().ok());
        if let (Some(id), true) = (id, rest[digits..].starts_with(br#","result":"#)) {
            return Line::Ok(id);
        }
    } else if line.starts_with(NOTIFICATION) {
        return Line::Notification;
    }
    SLOW_PARSES.fetch_add(1, Ordering::Relaxed);
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
        return Line::Other;
    };
    let id = value.get("id").and_then(serde_json::Value::as_u64);
    match (
        id,
        value.get("result"),
        value.get("error"),
        value.get("method"),
    ) {
        (Some(id), Some(_), _, _) => Line::Ok(id),
        (Some(id), _, Some(e), _) => Line::Error(id, e.to_string()),
        (None, None, None, Some(_)) => Line::Notification,
        _ => Line::Other,
    }
}

/// A running process and our two pipes to it.
#[derive(Debug)]
pub(crate) struct Session {
    child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) reader: BufReader<ChildStdout>,
    /// The last line read (reused: no allocation per answer).
    pub(crate) line: Vec<u8>,
    /// A request being built (reused).
    request: Vec<u8>,
    pub(crate) next_id: u64,
    pub(crate) tool_prefix: &'static str,
    pub(crate) listed_copies: usize,
    memory_of: Option<u32>,
    stderr_path: PathBuf,
}

impl Session {
    /// Starts the process; its stderr goes to `stderr_path`.
    pub(crate) fn spawn(launch: &Launch, stderr_path: &Path) -> Result<Self> {
        let stderr = File::create(stderr_path)?;
        let mut child = Command::new(&launch.program)
            .args(&launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", launch.program.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        Ok(Self {
            child,
            stdin: Some(stdin),
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, stdout),
            line: Vec::with_capacity(64 * 1024),
            request: Vec::with_capacity(1024),
            next_id: 1,
            tool_prefix: launch.tool_prefix,
            listed_copies: launch.listed_copies,
            memory_of: launch.memory_of,
            stderr_path: stderr_path.to_owned(),
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `initialize`, its answer, then `notifications/initialized`.
    pub(crate) fn initialize(&mut self) -> Result<()> {
        self.call("initialize", INITIALIZE_PARAMS)?;
        self.write_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
    }

    /// Sends one request and reads until its answer; returns how many
    /// notifications came before it. An error answer is an error.
    pub(crate) fn call(&mut self, method: &str, params: &str) -> Result<usize> {
        let id = self.next_id;
        self.next_id += 1;
        self.request.clear();
        write_request(&mut self.request, id, method, params);
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(&self.request)?;
        self.read_answer(id)
    }

    /// `tools/call` of `tool` (prefixed as this mode's chain wants).
    pub(crate) fn call_tool(&mut self, tool: &str, arguments: &str) -> Result<usize> {
        let params = format!(
            r#"{{"name":"{}{tool}","arguments":{arguments}}}"#,
            self.tool_prefix
        );
        self.call("tools/call", &params)
    }

    pub(crate) fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(bytes)?;
        Ok(())
    }

    /// Reads lines until the answer to `id`; counts notifications on the way.
    pub(crate) fn read_answer(&mut self, id: u64) -> Result<usize> {
        let mut notifications = 0;
        loop {
            self.read_line()?;
            match classify(&self.line) {
                Line::Ok(got) if got == id => return Ok(notifications),
                Line::Error(got, e) if got == id => {
                    return Err(format!("request {id} answered with an error: {e}").into())
                }
                Line::Notification => notifications += 1,
                other => return Err(format!("unexpected line waiting for {id}: {other:?}").into()),
            }
        }
    }

    /// Reads one line into `self.line` (newline kept).
    pub(crate) fn read_line(&mut self) -> Result<()> {
        self.line.clear();
        if self.reader.read_until(b'\n', &mut self.line)? == 0 {
            return Err(format!(
                "the process closed its stdout; its stderr ends with:\n{}",
                self.stderr_tail()
            )
            .into());
        }
        Ok(())
    }

    /// The last lines the process wrote to stderr, for error messages.
    pub(crate) fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }

    /// (VmRSS, VmHWM) of the spawned process, in KiB.
    pub(crate) fn memory_kib(&self) -> Result<(u64, u64)> {
        memory_kib(self.memory_of.unwrap_or_else(|| self.pid()))
    }

    /// Closes stdin and waits for the process to exit (killing it after
    /// [`EXIT_WAIT`]).
    pub(crate) fn finish(mut self) -> Result<()> {
        drop(self.stdin.take());
        let deadline = Instant::now() + EXIT_WAIT;
        loop {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                return Err("the process did not exit after its stdin closed".into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // After finish() this is a no-op; after an error it ends the process.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An `initialize` request's params.
pub(crate) const INITIALIZE_PARAMS: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcp-chain-bench","version":"0.1.0"}}"#;

/// Appends one request line.
pub(crate) fn write_request(buf: &mut Vec<u8>, id: u64, method: &str, params: &str) {
    // Writing into a Vec cannot fail.
    let _ = writeln!(
        buf,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
    );
}

/// (VmRSS, VmHWM) of a process, in KiB, from /proc/PID/status.
pub(crate) fn memory_kib(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .ok_or_else(|| format!("no {name} in /proc/{pid}/status"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_fast_and_slow_paths() {
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":42,"result":{}}"#),
            Line::Ok(42)
        );
        assert_eq!(
            classify(br#"{"id":7,"jsonrpc":"2.0","result":{}}"#),
            Line::Ok(7)
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/message"}"#),
            Line::Notification
        );
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"no"}}"#),
            Line::Error(3, _)
        ));
    }
}
