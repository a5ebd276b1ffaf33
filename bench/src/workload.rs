//! The measurements. Each takes a ready session (or a way to start one) and
//! returns raw figures; `main.rs` interleaves the modes and `stats.rs`
//! takes medians.

use crate::session::{classify, write_request, Launch, Line, Session};
use crate::Result;
use std::io::Write;
use std::path::Path;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// Arguments of the cheap tool: the fixture answers with a 2-byte text.
const ECHO_ARGS: &str = r#"{"text":"hello"}"#;

/// Sequential `tools/call` round trips after `warm_up` unmeasured ones;
/// returns each measured round trip in µs.
pub(crate) fn round_trips(s: &mut Session, warm_up: usize, calls: usize) -> Result<Vec<f64>> {
    let params = format!(
        r#"{{"name":"{}echo","arguments":{ECHO_ARGS}}}"#,
        s.tool_prefix
    );
    for _ in 0..warm_up {
        s.call("tools/call", &params)?;
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        s.call("tools/call", &params)?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(times)
}

/// Shared between the writer and the reader of a pipelined run.
#[derive(Debug, Default)]
struct Progress {
    received: u64,
    failed: bool,
}

/// Pipelined `tools/call`: keeps up to `in_flight` requests outstanding until
/// `total` are answered; returns answers per second.
///
/// The writer tops the window up in one write whenever it has room; the
/// reader reports progress each time it has drained what it read, so the
/// window is refilled without a wake-up per answer.
pub(crate) fn throughput(s: &mut Session, in_flight: u64, total: u64) -> Result<f64> {
    let first_id = s.next_id;
    s.next_id += total;
    let params = format!(
        r#"{{"name":"{}echo","arguments":{ECHO_ARGS}}}"#,
        s.tool_prefix
    );
    let progress = Mutex::new(Progress::default());
    let wake = Condvar::new();
    let stdin = s.stdin.as_mut().ok_or("stdin closed")?;
    let reader = &mut s.reader;
    let line = &mut s.line;
    let started = Instant::now();
    std::thread::scope(|scope| -> Result<f64> {
        let read = scope.spawn(|| -> Result<()> {
            use std::io::BufRead;
            let outcome = (|| -> Result<()> {
                let mut got = 0u64;
                while got < total {
                    line.clear();
                    if reader.read_until(b'\n', line)? == 0 {
                        return Err("the process closed its stdout".into());
                    }
                    match classify(line) {
                        Line::Ok(_) => got += 1,
                        Line::Notification => {}
                        other => return Err(format!("unexpected answer: {other:?}").into()),
                    }
                    if reader.buffer().is_empty() || got == total {
                        lock(&progress)?.received = got;
                        wake.notify_one();
                    }
                }
                Ok(())
            })();
            if outcome.is_err() {
                lock(&progress)?.failed = true;
                wake.notify_one();
            }
            outcome
        });
        let mut batch = Vec::with_capacity(in_flight as usize * 128);
        let mut sent = 0u64;
        while sent < total {
            let room = {
                let mut p = lock(&progress)?;
                while sent - p.received >= in_flight && !p.failed {
                    p = wake.wait(p).map_err(|_| "lock poisoned")?;
                }
                if p.failed {
                    break;
                }
                in_flight - (sent - p.received)
            };
            let n = room.min(total - sent);
            batch.clear();
            for i in 0..n {
                write_request(&mut batch, first_id + sent + i, "tools/call", &params);
            }
            stdin.write_all(&batch)?;
            sent += n;
        }
        read.join().map_err(|_| "reader panicked")??;
        Ok(total as f64 / started.elapsed().as_secs_f64())
    })
}

fn lock(m: &Mutex<Progress>) -> Result<std::sync::MutexGuard<'_, Progress>> {
    m.lock().map_err(|_| "lock poisoned".into())
}

/// `tools/call blob` returning `bytes` of text; each call's time in ms.
pub(crate) fn big_results(
    s: &mut Session,
    bytes: usize,
    warm_up: usize,
    calls: usize,
) -> Result<Vec<f64>> {
    let args = format!(r#"{{"bytes":{bytes}}}"#);
    for _ in 0..warm_up {
        s.call_tool("blob", &args)?;
        check_len(s, bytes)?;
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        s.call_tool("blob", &args)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    check_len(s, bytes)?;
    Ok(times)
}

fn check_len(s: &Session, bytes: usize) -> Result<()> {
    if s.line.len() < bytes {
        return Err(format!("a {bytes}-byte result arrived as {} bytes", s.line.len()).into());
    }
    Ok(())
}

/// `tools/list` (the fixture's 1,000 tools); each call's time in µs. The
/// first answer is parsed and checked: `tools` tools, all with the prefix.
pub(crate) fn tool_lists(
    s: &mut Session,
    tools: usize,
    warm_up: usize,
    calls: usize,
) -> Result<Vec<f64>> {
    s.call("tools/list", "{}")?;
    let value: serde_json::Value = serde_json::from_slice(&s.line)?;
    let names: Vec<&str> = value["result"]["tools"]
        .as_array()
        .ok_or("tools/list without tools")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    if names.len() != tools || names.iter().any(|n| !n.starts_with(s.tool_prefix)) {
        return Err(format!(
            "tools/list: expected {tools} tools named {}…, got {} (first {:?})",
            s.tool_prefix,
            names.len(),
            names.first()
        )
        .into());
    }
    for _ in 0..warm_up {
        s.call("tools/list", "{}")?;
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        s.call("tools/list", "{}")?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(times)
}

/// `tools/call notify`: the server sends `count` notifications, then the
/// answer; each run's time in ms, from the request to the answer.
pub(crate) fn notifications(
    s: &mut Session,
    count: usize,
    warm_up: usize,
    runs: usize,
) -> Result<Vec<f64>> {
    let args = format!(r#"{{"count":{count}}}"#);
    let mut times = Vec::with_capacity(runs);
    for i in 0..warm_up + runs {
        let t = Instant::now();
        let got = s.call_tool("notify", &args)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if got != count {
            return Err(format!("{got} of {count} notifications arrived").into());
        }
        if i >= warm_up {
            times.push(ms);
        }
    }
    Ok(times)
}

/// Starts the process, sends `initialize`, and times the answer (ms); then
/// closes the session and waits for the process to exit.
pub(crate) fn start_up(launch: &Launch, stderr: &Path) -> Result<f64> {
    let t = Instant::now();
    let mut s = Session::spawn(launch, stderr)?;
    s.call("initialize", crate::session::INITIALIZE_PARAMS)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    s.finish()?;
    Ok(ms)
}
