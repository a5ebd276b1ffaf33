//! The floor for serving many HTTP clients from one child: a minimal
//! Streamable HTTP → stdio bridge that starts one server, initializes it
//! once, answers every client's `initialize` from that handshake, and
//! relays each request to the one child under an id of its own, giving
//! the client's back. No checks, no chain, no session state: what the
//! `front-shared-floor` mode measures as the best a shared upstream can
//! do, beside mcp-chain's front.
//!
//!   bench-shared-bridge SERVER [ARGS…]   (prints its URL, serves until killed)

use mcp_chain_bench::http1::read_request;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

type Waiting = Arc<Mutex<HashMap<u64, Sender<Value>>>>;

struct Bridge {
    stdin: Mutex<ChildStdin>,
    waiting: Waiting,
    next: AtomicU64,
    initialized: Value,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (program, rest) = args
        .split_first()
        .ok_or("usage: bench-shared-bridge SERVER [ARGS…]")?;
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench-shared-bridge","version":"0"}}}"#;
    writeln!(stdin, "{init}")?;
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    let answer: Value = serde_json::from_str(&line)?;
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )?;
    let bridge = Arc::new(Bridge {
        stdin: Mutex::new(stdin),
        waiting: Arc::default(),
        next: AtomicU64::new(1),
        initialized: answer["result"].clone(),
    });
    let waiting = bridge.waiting.clone();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let Some(id) = message.get("id").and_then(Value::as_u64) else {
                continue;
            };
            if let Some(waiter) = waiting.lock().expect("not poisoned").remove(&id) {
                let _ = waiter.send(message);
            }
        }
    });
    let listener = TcpListener::bind("127.0.0.1:0")?;
    // Where it serves, for the bench to read (stdout is not MCP here).
    let mut out = std::io::stdout().lock();
    writeln!(out, "http://{}/mcp", listener.local_addr()?)?;
    out.flush()?;
    drop(out);
    for stream in listener.incoming().flatten() {
        let bridge = bridge.clone();
        std::thread::spawn(move || {
            let _ = serve(&bridge, stream);
        });
    }
    Ok(())
}

/// One keep-alive connection's requests.
fn serve(bridge: &Bridge, stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream);
    let (mut line, mut body) = (String::new(), Vec::new());
    loop {
        if read_request(&mut reader, &mut line, &mut body)?.is_none() {
            return Ok(());
        }
        let mut message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let answer = match (
            message.get("method").and_then(Value::as_str),
            message.get("id").cloned(),
        ) {
            (_, None) => None,
            (Some("initialize"), Some(id)) => {
                Some(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": bridge.initialized}))
            }
            (_, Some(id)) => {
                let ours = bridge.next.fetch_add(1, Ordering::Relaxed);
                message["id"] = ours.into();
                let (tx, rx) = channel();
                bridge
                    .waiting
                    .lock()
                    .expect("not poisoned")
                    .insert(ours, tx);
                // One write a message: the pipe is not buffered.
                let mut line = message.to_string().into_bytes();
                line.push(b'\n');
                bridge
                    .stdin
                    .lock()
                    .expect("not poisoned")
                    .write_all(&line)?;
                let mut answer = rx.recv().unwrap_or(Value::Null);
                answer["id"] = id;
                Some(answer)
            }
        };
        let out = reader.get_mut();
        match answer {
            None => out.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")?,
            Some(answer) => {
                let body = answer.to_string();
                let whole = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: shared\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                out.write_all(whole.as_bytes())?;
            }
        }
    }
}
