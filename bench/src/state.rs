//! The `limited` and `limited-state` modes: one `rate_limit` rule that
//! never refuses (a million a second), on the process's own buckets or on
//! `[state]` in a Redis the run starts on loopback (Debian's
//! `redis-server`), so what sharing the buckets costs a call is their
//! difference; and Redis's own round trip, measured beside it, is what
//! that difference is judged against.

use crate::served::{free_port, Served};
use crate::Result;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Instant;

/// The Redis a run's `limited-state` mode keeps its buckets in.
pub(crate) struct Redis {
    _served: Served,
    pub(crate) port: u16,
}

/// Where Debian puts it.
const REDIS_SERVER: &str = "/usr/bin/redis-server";

impl Redis {
    /// Why the mode cannot run here, if it cannot.
    pub(crate) fn unavailable() -> Option<String> {
        (!Path::new(REDIS_SERVER).is_file())
            .then(|| "redis-server is not installed (apt-get install redis-server)".into())
    }

    pub(crate) fn start(work: &Path) -> Result<Self> {
        let port = free_port()?;
        let args = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        .map(Into::into);
        let served = Served::listening(
            Path::new(REDIS_SERVER),
            &args,
            &[],
            port,
            &work.join("redis.log"),
        )?;
        Ok(Self {
            _served: served,
            port,
        })
    }

    /// The medians of `n` round trips on one connection, in µs: a PING,
    /// and the bucket script `[state]` runs for a call (EVALSHA, one token
    /// of a bucket that never runs out), what "one Redis round trip" of a
    /// limited call is.
    pub(crate) fn round_trips_us(&self, n: usize) -> Result<(f64, f64)> {
        let mut conn = TcpStream::connect(("127.0.0.1", self.port))?;
        conn.set_nodelay(true)?;
        let script = include_str!("../../src/state/buckets.lua");
        let load = format!(
            "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n${}\r\n{script}\r\n",
            script.len()
        );
        let sha = ask(&mut conn, load.as_bytes(), 2)?;
        let sha = sha
            .lines()
            .nth(1)
            .ok_or("no SHA from SCRIPT LOAD")?
            .trim()
            .to_owned();
        let take = format!("EVALSHA {sha} 1 bench:rtt 1000000 1000000 -1 1\r\n");
        let mut timed = |command: &[u8], lines: usize| -> Result<f64> {
            let mut times = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                ask(&mut conn, command, lines)?;
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
            Ok(crate::stats::median(&times))
        };
        Ok((timed(b"PING\r\n", 1)?, timed(take.as_bytes(), 5)?))
    }
}

/// Sends `command`, reads an answer of `lines` lines.
fn ask(conn: &mut TcpStream, command: &[u8], lines: usize) -> Result<String> {
    conn.write_all(command)?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    while answer.windows(2).filter(|w| w == b"\r\n").count() < lines {
        let got = conn.read(&mut buf)?;
        if got == 0 {
            return Err("redis closed the connection".into());
        }
        answer.extend_from_slice(&buf[..got]);
    }
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// The config of the `limited` modes: `[state]` on `redis` when given.
pub(crate) fn config(redis: Option<u16>) -> String {
    let state = redis.map_or(String::new(), |port| {
        format!("[state]\nurl = \"redis://127.0.0.1:{port}/0\"\nprefix = \"bench:\"\ntimeout = \"1s\"\n\n")
    });
    format!("{state}[[middleware]]\ntype = \"rate_limit\"\nrules = [ {{ rate = \"1000000/s\", burst = 1000000 }} ]\n")
}
