//! `mcp-chain-soak`: pushes a million messages (or `--messages N`) through
//! `target/release/mcp-chain` with every layer in the chain and the fake
//! server behind it, pipelined `--window` deep, and checks that every
//! request gets exactly one answer, the right one, and that the proxy's
//! memory is flat: VmRSS once warmed up versus at the end.
//!
//! The mix per ten messages: seven `tools/call echo` (the answer must carry
//! the call's own `i` back), one `ping`, one `tools/list`, one client
//! notification; one call in a hundred goes to a tool the filter denies and
//! must come back as -32602. Exit code 0 only when nothing was lost or
//! mismatched and RSS stayed within `--rss-slack-mib` of its warm value.
//!
//! Run from the repository root (`make soak` does): paths default to the
//! release build and `soak/full-chain.toml`.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What an answer must look like, by request id.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Echo,
    Ping,
    List,
    Denied,
}

#[derive(Debug)]
struct Opts {
    messages: u64,
    window: u64,
    proxy: String,
    server: String,
    config: String,
    rss_slack_mib: u64,
}

impl Opts {
    fn parse() -> Result<Self, String> {
        let mut o = Opts {
            messages: 1_000_000,
            window: 256,
            proxy: "target/release/mcp-chain".into(),
            server: "target/release/fake-mcp-server".into(),
            config: "soak/full-chain.toml".into(),
            rss_slack_mib: 8,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or(format!("{flag} needs a value"));
            let number = |v: String| v.parse::<u64>().map_err(|e| format!("{v}: {e}"));
            match flag.as_str() {
                "--messages" => o.messages = number(value()?)?,
                "--window" => o.window = number(value()?)?.max(1),
                "--proxy" => o.proxy = value()?,
                "--server" => o.server = value()?,
                "--config" => o.config = value()?,
                "--rss-slack-mib" => o.rss_slack_mib = number(value()?)?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        Ok(o)
    }
}

/// Requests in flight, and the window the writer waits on.
#[derive(Default)]
struct Pending {
    map: Mutex<HashMap<u64, Expect>>,
    space: Condvar,
}

fn rss(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn line(msg: &Value, out: &mut impl Write) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, msg)?;
    out.write_all(b"\n")
}

fn main() -> ExitCode {
    let o = match Opts::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mcp-chain-soak: {e}");
            return ExitCode::from(2);
        }
    };
    let mut child = match Command::new(&o.proxy)
        .args(["--config", &o.config, "--", &o.server])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "mcp-chain-soak: cannot start {}: {e} (make soak builds it)",
                o.proxy
            );
            return ExitCode::FAILURE;
        }
    };
    let pid = child.id();
    let mut stdin = BufWriter::with_capacity(64 * 1024, child.stdin.take().expect("piped"));
    let stdout = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("piped"));

    let pending = Arc::new(Pending::default());
    let answered = Arc::new(AtomicU64::new(0));
    let mismatched = Arc::new(AtomicU64::new(0));
    let unexpected = Arc::new(AtomicU64::new(0));
    let done_reading = Arc::new(AtomicBool::new(false));

    // Handshake first, outside the count.
    let init = json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"soak","version":"0"}}});
    let mut lines = stdout.lines();
    if line(&init, &mut stdin)
        .and_then(|()| stdin.flush())
        .is_err()
    {
        eprintln!("mcp-chain-soak: the proxy did not take the handshake");
        return ExitCode::FAILURE;
    }
    match lines.next() {
        Some(Ok(l)) if l.contains("\"init\"") && l.contains("result") => {}
        other => {
            eprintln!("mcp-chain-soak: bad initialize answer: {other:?}");
            return ExitCode::FAILURE;
        }
    }
    let _ = line(
        &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        &mut stdin,
    );

    let reader = {
        let (pending, answered, mismatched, unexpected, done) = (
            pending.clone(),
            answered.clone(),
            mismatched.clone(),
            unexpected.clone(),
            done_reading.clone(),
        );
        thread::spawn(move || {
            for l in lines {
                let Ok(l) = l else { break };
                let v: Value = match serde_json::from_str(&l) {
                    Ok(v) => v,
                    Err(_) => {
                        mismatched.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                };
                let Some(id) = v["id"].as_u64() else {
                    // Notifications from the server are not expected here.
                    unexpected.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let expect = {
                    let mut map = pending.map.lock().expect("pending lock");
                    let e = map.remove(&id);
                    pending.space.notify_one();
                    e
                };
                let ok = match expect {
                    None => false,
                    Some(Expect::Echo) => {
                        v["result"]["structuredContent"]["received"]["arguments"]["i"] == id
                    }
                    Some(Expect::Ping) => v["result"] == json!({}),
                    Some(Expect::List) => v["result"]["tools"].is_array(),
                    Some(Expect::Denied) => v["error"]["code"] == -32602,
                };
                if !ok && mismatched.fetch_add(1, Ordering::Relaxed) < 5 {
                    eprintln!("mcp-chain-soak: mismatched answer ({expect:?}): {l}");
                }
                answered.fetch_add(1, Ordering::Relaxed);
            }
            done.store(true, Ordering::Relaxed);
        })
    };

    // Memory is sampled once a second; "warm" is the first sample after 5%
    // of the messages, when buffers and maps have reached their size.
    let started = Instant::now();
    let warm_at = o.messages / 20;
    let sent = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (sent, done) = (sent.clone(), done_reading.clone());
        let total = o.messages;
        thread::spawn(move || {
            let mut warm = None;
            let mut max = 0;
            let mut samples = Vec::new();
            loop {
                let s = sent.load(Ordering::Relaxed);
                let r = rss(pid, "VmRSS");
                max = max.max(r);
                if warm.is_none() && s >= warm_at {
                    warm = Some(r);
                }
                samples.push(r);
                if s >= total || done.load(Ordering::Relaxed) {
                    return (warm.unwrap_or(r), max, samples);
                }
                thread::sleep(Duration::from_millis(1000));
            }
        })
    };

    let mut requests = 0u64;
    let mut notifications = 0u64;
    let mut write_failed = false;
    for i in 1..=o.messages {
        let (msg, expect) = match i % 10 {
            9 => (
                json!({"jsonrpc":"2.0","method":"notifications/roots/list_changed"}),
                None,
            ),
            8 => (
                json!({"jsonrpc":"2.0","id":i,"method":"tools/list"}),
                Some(Expect::List),
            ),
            7 => (
                json!({"jsonrpc":"2.0","id":i,"method":"ping"}),
                Some(Expect::Ping),
            ),
            _ if i % 100 == 42 => (
                json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"crash","arguments":{}}}),
                Some(Expect::Denied),
            ),
            _ => (
                json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{
                    "name":"echo","arguments":{"i":i,"text":"soak message, nothing secret here"}}}),
                Some(Expect::Echo),
            ),
        };
        if let Some(expect) = expect {
            let mut map = pending.map.lock().expect("pending lock");
            if map.len() as u64 >= o.window {
                // About to wait: make sure what we wrote is on its way.
                drop(map);
                if stdin.flush().is_err() {
                    write_failed = true;
                    break;
                }
                map = pending.map.lock().expect("pending lock");
                while map.len() as u64 >= o.window {
                    let (m, timeout) = pending
                        .space
                        .wait_timeout(map, Duration::from_secs(30))
                        .expect("pending lock");
                    map = m;
                    if timeout.timed_out() {
                        eprintln!("mcp-chain-soak: no answer for 30 s; giving up");
                        write_failed = true;
                        break;
                    }
                }
                if write_failed {
                    break;
                }
            }
            map.insert(i, expect);
            requests += 1;
        } else {
            notifications += 1;
        }
        if line(&msg, &mut stdin).is_err() {
            write_failed = true;
            break;
        }
        sent.store(i, Ordering::Relaxed);
    }
    let _ = stdin.flush();
    // Wait (bounded) for what is still owed, then end the session.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pending.map.lock().expect("pending lock").is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    let elapsed = started.elapsed();
    let end_rss = rss(pid, "VmRSS");
    let hwm = rss(pid, "VmHWM");
    sent.store(o.messages, Ordering::Relaxed);
    drop(stdin);
    let status = child.wait();
    let _ = reader.join();
    let (warm, max, samples) = sampler.join().expect("sampler");

    let lost = pending.map.lock().expect("pending lock").len() as u64;
    let answered = answered.load(Ordering::Relaxed);
    let mismatched = mismatched.load(Ordering::Relaxed);
    let unexpected = unexpected.load(Ordering::Relaxed);
    let total = requests + notifications + answered;
    let growth = end_rss.saturating_sub(warm);
    println!("mcp-chain soak: {} through {}", o.config, o.proxy);
    println!(
        "  sent      {requests} requests + {notifications} notifications, window {}",
        o.window
    );
    println!(
        "  answered  {answered}; lost {lost}; mismatched {mismatched}; unexpected {unexpected}"
    );
    println!(
        "  messages  {total} through the proxy in {:.1} s ({:.0} msg/s, {:.0} round trips/s)",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        answered as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  VmRSS     warm {} -> end {} (growth {}); max {}; VmHWM {}; {} samples",
        mib(warm),
        mib(end_rss),
        mib(growth),
        mib(max),
        mib(hwm),
        samples.len()
    );
    println!("  proxy     exit {status:?}");
    let flat = growth <= o.rss_slack_mib << 20;
    let ok = !write_failed && lost == 0 && mismatched == 0 && answered == requests && flat;
    println!("  verdict   {}", if ok { "PASS" } else { "FAIL" });
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
