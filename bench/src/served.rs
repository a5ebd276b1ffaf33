//! Servers a run keeps listening while it measures: the fixture over HTTP
//! (for the `http-*` modes), and what serves the fixture to HTTP clients
//! (for the `front-*` modes): `mcp-chain --listen` with the empty or the
//! full chain, and supergateway's stdio→Streamable HTTP server, what users
//! run for this without mcp-chain. Each is killed when dropped.

use crate::Result;
use std::ffi::OsString;
use std::io::BufRead;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to listen.
const LISTEN_WAIT: Duration = Duration::from_secs(20);

pub(crate) struct Served {
    child: Child,
    pub(crate) url: String,
}

impl Served {
    /// The fixture serving Streamable HTTP; it prints its URL.
    pub(crate) fn fixture(fixture: &Path) -> Result<Self> {
        Self::printing(fixture, &["--http".into()])
    }

    /// `program args`, which prints the URL it serves at on its first line.
    pub(crate) fn printing(program: &Path, args: &[OsString]) -> Result<Self> {
        let mut child = Command::new(program)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut url = String::new();
        std::io::BufReader::new(stdout).read_line(&mut url)?;
        let url = url.trim().to_owned();
        if !url.starts_with("http://") {
            let _ = child.kill();
            return Err(format!("{} said {url:?}", program.display()).into());
        }
        Ok(Self { child, url })
    }

    /// `program args` listening on `port` of 127.0.0.1 (its output goes to
    /// `log`), serving MCP at `/mcp`.
    pub(crate) fn listening(
        program: &Path,
        args: &[OsString],
        env: &[(String, OsString)],
        port: u16,
        log: &Path,
    ) -> Result<Self> {
        let log = std::fs::File::create(log)?;
        let child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let mut served = Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > LISTEN_WAIT || served.child.try_wait()?.is_some() {
                return Err(format!("{} did not listen on {port}", program.display()).into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(served)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1 (free when asked; the server binds it next).
pub(crate) fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
