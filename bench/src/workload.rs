//! The measurements. Each takes a ready session (or a way to start one) and
//! returns raw figures; `main.rs` interleaves the modes and `stats.rs`
//! takes medians.

use crate::session::{classify, write_request, Launch, Line, Session};
use crate::Result;
use std::path::Path;
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

/// Pipelined `tools/call`: keeps up to `in_flight` requests outstanding until
/// `total` are answered; returns answers per second.
///
/// One thread does both sides, so no hand-off between threads is measured:
/// it tops the window up in one write, then reads what has arrived, and
/// tops up again once it has drained its read buffer. A blocking write
/// cannot deadlock: a full window (256 small requests) is far below a pipe's
/// 64 KiB.
pub(crate) fn throughput(s: &mut Session, in_flight: u64, total: u64) -> Result<f64> {
    let first_id = s.next_id;
    s.next_id += total;
    let params = format!(
        r#"{{"name":"{}echo","arguments":{ECHO_ARGS}}}"#,
        s.tool_prefix
    );
    let mut batch = Vec::with_capacity(in_flight as usize * 128);
    let (mut sent, mut got) = (0u64, 0u64);
    let started = Instant::now();
    while got < total {
        if s.reader.buffer().is_empty() && sent < total && sent - got < in_flight {
            let n = (in_flight - (sent - got)).min(total - sent);
            batch.clear();
            for i in 0..n {
                write_request(&mut batch, first_id + sent + i, "tools/call", &params);
            }
            s.write_raw(&batch)?;
            sent += n;
        }
        s.read_line()?;
        match classify(&s.line) {
            Line::Ok(_) => got += 1,
            Line::Notification => {}
            other => return Err(format!("unexpected answer: {other:?}").into()),
        }
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

/// `tools/call blob` returning `bytes` of text (one letter repeated, or
/// with `prose` sentences); each call's time in ms.
pub(crate) fn big_results(
    s: &mut Session,
    bytes: usize,
    prose: bool,
    warm_up: usize,
    calls: usize,
) -> Result<Vec<f64>> {
    let args = format!(r#"{{"bytes":{bytes},"prose":{prose}}}"#);
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

/// `tools/list` (the fixture's 1,000 tools, as many times as the session
/// lists copies of them); each call's time in µs. The first answer is
/// parsed and checked: that many tools, all with the prefix.
pub(crate) fn tool_lists(
    s: &mut Session,
    tools: usize,
    warm_up: usize,
    calls: usize,
) -> Result<Vec<f64>> {
    s.call("tools/list", "{}")?;
    let tools = tools * s.listed_copies;
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
