//! The floor for any process that sits in a stdio pipe: two threads copying
//! bytes as they come, no framing, no parsing, no layers.
//!
//! ```text
//! bench-byte-relay SERVER [ARGS...]
//! ```
//!
//! The benchmark runs it as a reference mode, so mcp-chain's cost can be
//! read against what a process in the middle costs at the least (two extra
//! pipe hops and two extra wake-ups per message).

use std::io::{self, Read, Write};
use std::process::{Command, Stdio};
use std::thread;

/// One read's worth; a 10 MiB message moves in 160 hops.
const COPY_BUFFER_BYTES: usize = 64 * 1024;

fn pump(mut from: impl Read, mut to: impl Write) -> io::Result<()> {
    let mut buf = vec![0u8; COPY_BUFFER_BYTES];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        to.flush()?;
    }
}

fn main() -> io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let program = args
        .next()
        .ok_or_else(|| io::Error::other("usage: bench-byte-relay SERVER [ARGS...]"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let child_in = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("no stdin"))?;
    let child_out = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    let down = thread::spawn(move || pump(child_out, io::stdout()));
    // Dropping child_in when our stdin ends closes the server's stdin.
    let up = pump(io::stdin(), child_in);
    let down = down
        .join()
        .map_err(|_| io::Error::other("relay thread panicked"))?;
    child.wait()?;
    up.and(down)
}
