//! Slow peers and a vanished client (issue 5, items 2 and 3): a peer that
//! stops reading must not make mcp-chain's memory grow without bound (the
//! backpressure reaches the other side instead), traffic resumes when it
//! reads again, and when our parent dies the whole server process group
//! goes with us.

mod support;

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use support::{alive, eventually, req, Proxy, FAKE, PROXY, WAIT};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const MIB: u64 = 1 << 20;
/// How much a stalled peer may cost the proxy, above what it used before.
const RSS_BUDGET: u64 = 64 * MIB;
/// How long a peer stays stalled while memory is sampled.
const STALL: Duration = Duration::from_secs(3);

/// A `/proc/PID/status` field in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// The highest VmRSS seen while sampling for `how_long`.
async fn max_rss_during(pid: u32, how_long: Duration) -> u64 {
    let end = tokio::time::Instant::now() + how_long;
    let mut max = 0;
    while tokio::time::Instant::now() < end {
        max = max.max(status_bytes(pid, "VmRSS"));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    max
}

#[tokio::test]
async fn a_client_that_stops_reading_holds_the_server_back_not_the_memory() {
    // ~100 bytes each: 300,000 notifications are ~30 MB on the wire and
    // several times that as parsed messages, far over the budget.
    const FLOOD: u64 = 300_000;
    let mut proxy = Proxy::fake(&[], &["--flood", &FLOOD.to_string()]);
    proxy.initialize("2025-06-18").await;
    let start = status_bytes(proxy.pid(), "VmRSS");
    // `initialized` starts the flood; we read nothing for a while.
    let stalled = max_rss_during(proxy.pid(), STALL).await;
    assert!(
        stalled < start + RSS_BUDGET,
        "VmRSS went from {start} to {stalled} bytes while the client did not read"
    );
    // Reading again: everything arrives, in order, then the ping's answer.
    proxy.send(req(json!(1), "ping", json!({}))).await;
    let mut seen = 0;
    loop {
        let msg = proxy.recv().await;
        if msg["id"] == 1 {
            assert_eq!(msg["result"], json!({}));
            break;
        }
        seen += 1;
        assert_eq!(msg["params"]["data"], seen, "out of order or lost");
    }
    assert_eq!(seen, FLOOD);
    let peak = status_bytes(proxy.pid(), "VmHWM");
    assert!(
        peak < start + RSS_BUDGET,
        "peak RSS {peak} bytes (start {start}) relaying the flood"
    );
}

/// A server that reads nothing until the test opens its gate: `sh` waits
/// on a FIFO, then becomes the fake server. Unlike a timed sleep, the stall
/// lasts exactly as long as the test needs, however loaded the machine.
struct GatedServer {
    proxy: Proxy,
    gate: std::path::PathBuf,
    _dir: support::TempDir,
}

impl GatedServer {
    fn start() -> Self {
        let dir = support::TempDir::new("gate");
        let gate = dir.path("gate");
        let made = std::process::Command::new("mkfifo")
            .arg(&gate)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let script = format!("read _ < '{}'; exec '{FAKE}'", gate.display());
        Self {
            proxy: Proxy::spawn(&["--", "sh", "-c", &script]),
            gate,
            _dir: dir,
        }
    }
}

/// Lets a gated server start reading.
fn open_gate(gate: &std::path::Path) {
    std::fs::write(gate, "go\n").expect("the server waits on its gate");
}

/// Writes pings padded to `size` bytes until a write blocks for longer
/// than `blocked`, or `limit` bytes are out. Returns the ids sent whole and
/// the bytes accepted. With `unblock`, once blocked it is called (to let
/// the server read again) and the line a blocked write may have left
/// half-written is ended, so it is one bad line.
async fn write_until_blocked(
    proxy: &mut Proxy,
    size: usize,
    limit: u64,
    blocked: Duration,
    unblock: Option<&dyn Fn()>,
) -> (Vec<u64>, u64) {
    let pad = "p".repeat(size);
    let mut sent = Vec::new();
    let mut bytes = 0;
    for id in 1.. {
        let mut line = serde_json::to_vec(
            &json!({"jsonrpc":"2.0","id":id,"method":"ping","params":{"pad":pad}}),
        )
        .expect("serializes");
        line.push(b'\n');
        if tokio::time::timeout(blocked, proxy.send_raw(&line))
            .await
            .is_err()
        {
            if let Some(unblock) = unblock {
                unblock();
                proxy.send_raw(b"\n").await;
            }
            return (sent, bytes);
        }
        sent.push(id);
        bytes += line.len() as u64;
        if bytes > limit {
            break;
        }
    }
    (sent, bytes)
}

async fn stalled_server_pushes_back(message_bytes: usize) {
    let gated = GatedServer::start();
    let mut proxy = gated.proxy;
    let pid = proxy.pid();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = status_bytes(pid, "VmRSS");
    // Four times the budget: a proxy that queues without bound takes it all.
    let limit = 4 * RSS_BUDGET;
    let gate = gated.gate.clone();
    let unblock = move || open_gate(&gate);
    let (sent, bytes) =
        write_until_blocked(&mut proxy, message_bytes, limit, STALL, Some(&unblock)).await;
    assert!(
        bytes < limit,
        "the client wrote {bytes} bytes to a server that reads nothing, unblocked"
    );
    let peak = status_bytes(pid, "VmHWM");
    assert!(
        peak < start + RSS_BUDGET,
        "peak RSS {peak} bytes (start {start}) holding {bytes} bytes for a stalled server"
    );
    // The server wakes up: every request sent whole is answered.
    let mut owed: std::collections::HashSet<u64> = sent.iter().copied().collect();
    while !owed.is_empty() {
        let msg = proxy.recv().await;
        match msg["id"].as_u64() {
            Some(id) => {
                assert!(owed.remove(&id), "unexpected answer {msg}");
                assert_eq!(msg["result"], json!({}), "{msg}");
            }
            // The line cut off by the timeout.
            None => assert_eq!(msg["error"]["code"], -32700, "{msg}"),
        }
    }
    let answer = proxy.request(json!("after"), "ping", json!({})).await;
    assert_eq!(answer["result"], json!({}));
}

#[tokio::test]
async fn a_server_that_stops_reading_blocks_the_client_small_messages() {
    stalled_server_pushes_back(16 * 1024).await;
}

#[tokio::test]
async fn a_server_that_stops_reading_blocks_the_client_large_messages() {
    // The write queue is counted in messages; with 4 MiB messages a
    // message-count bound alone would hold a gigabyte.
    stalled_server_pushes_back(4 * 1024 * 1024).await;
}

#[tokio::test]
async fn a_server_that_never_reads_does_not_grow_the_proxy() {
    let mut proxy = Proxy::fake(&[], &["--no-read"]);
    let pid = proxy.pid();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = status_bytes(pid, "VmRSS");
    let (_, bytes) = write_until_blocked(&mut proxy, 64 * 1024, 512 * MIB, STALL, None).await;
    assert!(bytes < 512 * MIB, "{bytes} bytes written without blocking");
    let peak = status_bytes(pid, "VmHWM");
    assert!(
        peak < start + RSS_BUDGET,
        "peak RSS {peak} bytes (start {start}) with a server that never reads"
    );
}

#[tokio::test]
async fn when_our_parent_dies_the_server_and_its_grandchild_go_too() {
    // sh starts the proxy in the background and waits; the proxy's stdin
    // is our pipe (held open by us, so no end of input), its parent is sh.
    let script =
        format!("exec 3<&0; '{PROXY}' --shutdown-grace 1s -- '{FAKE}' <&3 & echo $! >&2; wait");
    let mut sh = tokio::process::Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("sh starts");
    let mut stdin = sh.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(sh.stdout.take().expect("stdout"));
    let mut stderr = BufReader::new(sh.stderr.take().expect("stderr"));
    let mut pid_line = String::new();
    tokio::time::timeout(WAIT, stderr.read_line(&mut pid_line))
        .await
        .expect("sh prints the proxy's pid")
        .expect("read");
    let proxy_pid: u32 = pid_line.trim().parse().expect("a pid");
    // Drain the rest of stderr (the proxy inherits it).
    tokio::spawn(async move {
        let mut sink = Vec::new();
        let _ = stderr.read_to_end(&mut sink).await;
    });
    let msg = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"grandchild"}});
    let mut line = serde_json::to_vec(&msg).expect("serializes");
    line.push(b'\n');
    stdin.write_all(&line).await.expect("write");
    stdin.flush().await.expect("flush");
    let mut answer = String::new();
    tokio::time::timeout(WAIT, stdout.read_line(&mut answer))
        .await
        .expect("the grandchild call is answered")
        .expect("read");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    let grandchild = answer["result"]["structuredContent"]["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or_else(|| panic!("grandchild pid in {answer}"));
    assert!(alive(proxy_pid) && alive(grandchild));
    // The parent dies; we keep the proxy's stdin open.
    sh.start_kill().expect("kill sh");
    let _ = sh.wait().await;
    let died = std::time::Instant::now();
    eventually("the proxy to exit after its parent died", || {
        !alive(proxy_pid)
    })
    .await;
    eventually("the grandchild to be gone", || !alive(grandchild)).await;
    // The grace is 1 s; the rest is slack for a loaded machine.
    assert!(
        died.elapsed() < Duration::from_secs(5),
        "the server's group outlived its grace: {:?}",
        died.elapsed()
    );
    drop(stdin);
}
