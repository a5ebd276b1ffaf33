//! Drives the real `mcp-chain` binary over pipes, with the fake server
//! behind it. Every read is under a timeout, and a failure shows the
//! proxy's stderr.

#![allow(dead_code, unreachable_pub)]

use serde_json::{json, Value};
use std::os::fd::AsFd;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Upper bound on any single wait in a test. Generous: the machines are
/// shared; nothing here measures time.
pub const WAIT: Duration = Duration::from_secs(20);

pub const PROXY: &str = env!("CARGO_BIN_EXE_mcp-chain");
pub const FAKE: &str = env!("CARGO_BIN_EXE_fake-mcp-server");
pub const DEMO: &str = env!("CARGO_BIN_EXE_mcp-chain-demo-server");

pub struct Proxy {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<String>>,
    stderr_done: Option<tokio::task::JoinHandle<()>>,
}

impl Proxy {
    /// The capacity of the pipes between the test and mcp-chain (stdin, stdout).
    pub fn pipe_sizes(&self) -> (usize, usize) {
        let size = |fd: std::os::fd::BorrowedFd<'_>| {
            rustix::pipe::fcntl_getpipe_size(fd).expect("our end of a pipe")
        };
        let stdin = self.stdin.as_ref().expect("stdin still open");
        (size(stdin.as_fd()), size(self.stdout.get_ref().as_fd()))
    }

    /// `mcp-chain <proxy_args> -- fake-mcp-server <fake_args>`.
    pub fn fake(proxy_args: &[&str], fake_args: &[&str]) -> Self {
        let mut args: Vec<&str> = proxy_args.to_vec();
        args.push("--");
        args.push(FAKE);
        args.extend(fake_args);
        Self::spawn(&args)
    }

    /// `mcp-chain <args>` as given.
    pub fn spawn(args: &[&str]) -> Self {
        Self::spawn_with(args, |_| {})
    }

    pub fn spawn_with(args: &[&str], tweak: impl FnOnce(&mut Command)) -> Self {
        let mut cmd = Command::new(PROXY);
        cmd.args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "mcp_chain=debug,mcp_chain_middleware=debug");
        }
        tweak(&mut cmd);
        let mut child = cmd.spawn().expect("mcp-chain starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err_pipe = child.stderr.take().expect("stderr piped");
        let sink = stderr.clone();
        let stderr_done = tokio::spawn(async move {
            let mut buf = vec![0; 64 * 1024];
            while let Ok(n) = err_pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                sink.lock().expect("stderr lock").push_str(&text);
            }
        });
        Self {
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().expect("stdout piped")),
            stderr,
            stderr_done: Some(stderr_done),
            child,
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr lock").clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    pub async fn send(&mut self, msg: Value) {
        let mut line = serde_json::to_vec(&msg).expect("serializes");
        line.push(b'\n');
        self.send_raw(&line).await;
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(bytes).await.expect("proxy reads stdin");
        stdin.flush().await.expect("flush");
    }

    /// The next line the proxy writes, parsed.
    pub async fn recv(&mut self) -> Value {
        match self.try_recv(WAIT).await {
            Some(v) => v,
            None => panic!(
                "no message from mcp-chain within {WAIT:?}\n--- stderr ---\n{}",
                self.stderr()
            ),
        }
    }

    /// The next message, or `None` at end of output or after `wait`.
    pub async fn try_recv(&mut self, wait: Duration) -> Option<Value> {
        let mut line = String::new();
        match tokio::time::timeout(wait, self.stdout.read_line(&mut line)).await {
            Ok(Ok(0)) | Err(_) => None,
            Ok(Ok(_)) => Some(serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!(
                    "mcp-chain wrote a line that is not JSON ({e}): {line:?}\n--- stderr ---\n{}",
                    self.stderr()
                )
            })),
            Ok(Err(e)) => panic!("reading stdout: {e}"),
        }
    }

    /// Reads until the answer with `id`, returning it and what came before.
    pub async fn recv_answer(&mut self, id: &Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let msg = self.recv().await;
            if msg.get("id") == Some(id)
                && (msg.get("result").is_some() || msg.get("error").is_some())
            {
                return (msg, before);
            }
            before.push(msg);
        }
    }

    /// Sends a request and waits for its answer.
    pub async fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        self.recv_answer(&id).await.0
    }

    pub async fn call_tool(&mut self, id: Value, name: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    pub async fn initialize(&mut self, version: &str) -> Value {
        let answer = self
            .request(
                json!("init"),
                "initialize",
                json!({"protocolVersion": version, "capabilities": {"sampling": {}, "roots": {"listChanged": true}, "elicitation": {}},
                       "clientInfo": {"name": "mcp-chain-tests", "version": "0"}}),
            )
            .await;
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        answer
    }

    /// Everything the fake server has received so far (its `debug/received`).
    pub async fn server_received(&mut self) -> Vec<Value> {
        let answer = self
            .request(json!("debug-received"), "debug/received", json!({}))
            .await;
        answer["result"]["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("debug/received answer: {answer}"))
            .clone()
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Waits for the proxy to exit, and for the last of its stderr.
    pub async fn wait(&mut self) -> ExitStatus {
        let status = match tokio::time::timeout(WAIT, self.child.wait()).await {
            Ok(status) => status.expect("wait"),
            Err(_) => panic!(
                "mcp-chain did not exit within {WAIT:?}\n--- stderr ---\n{}",
                self.stderr()
            ),
        };
        if let Some(done) = self.stderr_done.take() {
            // Bounded: a grandchild could hold the pipe open.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), done).await;
        }
        status
    }

    /// Closes stdin, reads the rest of stdout, and waits for exit.
    pub async fn finish(&mut self) -> (ExitStatus, Vec<Value>) {
        self.close_stdin();
        let mut rest = Vec::new();
        while let Some(msg) = self.try_recv(WAIT).await {
            rest.push(msg);
        }
        (self.wait().await, rest)
    }

    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .args(["-s", signal, &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }
}

/// Whether a process exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits (bounded) for `cond` to hold.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A request message.
pub fn req(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

/// A tools/call request.
pub fn call(id: Value, name: &str, arguments: Value) -> Value {
    req(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// A temporary directory for one test, removed when dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("mcp-chain-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write temp file");
        path.display().to_string()
    }

    /// An audit layer then a pin layer, their files here: the pin file's
    /// path, the audit file's, and the layers as TOML.
    pub fn audit_and_pin(&self) -> (std::path::PathBuf, std::path::PathBuf, String) {
        let pins = self.path("pins.json");
        let audit = self.path("audit.jsonl");
        let layers = format!(
            "[[middleware]]\ntype = \"audit\"\npath = {:?}\n\n[[middleware]]\ntype = \"pin\"\npath = {:?}\n",
            audit.display().to_string(),
            pins.display().to_string()
        );
        (pins, audit, layers)
    }

    /// A config in front of the fake server with `layers` (TOML), written
    /// here; its path.
    pub fn fake_config(&self, layers: &str) -> String {
        self.write(
            "c.toml",
            &format!("[upstream]\ncommand = {FAKE:?}\n{layers}\n"),
        )
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
