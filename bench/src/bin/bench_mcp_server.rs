//! The benchmark's fixture MCP server: answers every request at once, so
//! what the load generator measures is the pipe and whatever sits in it.
//!
//! ```text
//! bench-mcp-server [--tools N] [--http]     (default 1,000 tools in tools/list)
//! ```
//!
//! - `initialize` → a minimal result (tools capability); `ping` → `{}`.
//! - `tools/list` → N tools: `echo`, `blob`, `notify` and `tool_0003` …,
//!   each with a description and an input schema (about 150 bytes apiece).
//! - `tools/call echo` → a one-word text result.
//! - `tools/call blob {"bytes": N}` → a text result of N bytes (one
//!   letter repeated; with `"prose": true`, sentences with accents, ids
//!   and a URL).
//! - `tools/call notify {"count": N}` → N `notifications/message` first,
//!   then the result.
//! - anything else with an id → -32601; notifications are ignored.
//!
//! Requests are parsed into a borrowed struct (unknown fields skipped) and
//! answers are written from cached bytes: the fixture should cost as little
//! as possible, the same in every mode. Output is flushed whenever no input
//! is waiting, so pipelined requests are answered in batches.
//!
//! With `--http` the same answers are served over Streamable HTTP (the
//! stateless shape: no session, no GET stream) on a free loopback port,
//! whose URL is the first line on stdout: each POST is answered with one
//! JSON body, or an SSE stream when there are notifications before the
//! answer; a notification gets 202. One thread per connection, connections
//! kept alive; std only, like the rest of the benchmark.

use mcp_chain_bench::http1::{read_request, Head};
use serde::Deserialize;
use serde_json::value::Value;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::net::{TcpListener, TcpStream};

/// Tools in `tools/list` unless `--tools` says otherwise.
const DEFAULT_TOOLS: usize = 1000;

/// Big enough that a 10 MiB request line is read in few syscalls.
const READ_BUFFER_BYTES: usize = 1024 * 1024;

/// Big enough for a burst of pipelined answers in one write.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(borrow, default)]
    method: Option<&'a str>,
    #[serde(default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<&'a str>,
    #[serde(default)]
    arguments: Option<Arguments>,
    #[serde(borrow, default, rename = "protocolVersion")]
    protocol_version: Option<&'a str>,
}

#[derive(Deserialize)]
struct Arguments {
    #[serde(default)]
    bytes: Option<usize>,
    /// The text as prose (sentences, accents, ids) instead of one letter.
    #[serde(default)]
    prose: bool,
    #[serde(default)]
    count: Option<usize>,
}

/// Answers built once and reused.
struct Cache {
    tools: usize,
    tools_list: Option<Vec<u8>>,
    blobs: HashMap<(usize, bool), Vec<u8>>,
}

/// What a prose result repeats: release notes as a server might return
/// them, with characters outside ASCII, a hash, an id, a URL, numbers and
/// the words the scan rules look for, in sentences that ask nothing of
/// the model. JSON-safe as it is (no quote, no backslash).
const PROSE: &str = "Release notes — version 4.2.1 (build 9f86d081884c7d65): the café’s ordering service now returns “open” and “closed” hours for each weekday; see https://example.com/docs/hours for the schema. Each entry has an id such as 3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b, a price in € or £, and the user who last changed it. Requests that time out are retried twice, 250 ms apart, before the error is reported to the caller; read the changelog before you upgrade from 3.x. Größere Anfragen werden in Teilen gesendet. ";

impl Cache {
    /// Built on first use, so start-up stays cheap.
    fn tools_list(&mut self) -> &[u8] {
        let n = self.tools;
        self.tools_list.get_or_insert_with(|| tools_list(n))
    }

    fn blob(&mut self, bytes: usize, prose: bool) -> &[u8] {
        self.blobs.entry((bytes, prose)).or_insert_with(|| {
            let mut out = Vec::with_capacity(bytes + 64);
            out.extend_from_slice(br#"{"content":[{"type":"text","text":""#);
            let end = out.len() + bytes;
            while prose && out.len() + PROSE.len() <= end {
                out.extend_from_slice(PROSE.as_bytes());
            }
            out.resize(end, if prose { b' ' } else { b'x' });
            out.extend_from_slice(br#""}]}"#);
            out
        })
    }
}

fn tools_list(n: usize) -> Vec<u8> {
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            let name = match i {
                0 => "echo".to_owned(),
                1 => "blob".to_owned(),
                2 => "notify".to_owned(),
                _ => format!("tool_{i:04}"),
            };
            serde_json::json!({
                "name": name,
                "description": format!("Benchmark tool number {i}: does nothing, quickly."),
                "inputSchema": {
                    "type": "object",
                    "properties": { "text": { "type": "string", "description": "Any text" } },
                    "required": []
                }
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "tools": tools })).unwrap_or_default()
}

fn write_result(out: &mut impl Write, id: &Value, result: &[u8]) -> io::Result<()> {
    out.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
    serde_json::to_writer(&mut *out, id)?;
    out.write_all(br#","result":"#)?;
    out.write_all(result)?;
    out.write_all(b"}\n")
}

fn write_error(out: &mut impl Write, id: &Value, code: i32, message: &str) -> io::Result<()> {
    out.write_all(br#"{"jsonrpc":"2.0","id":"#)?;
    serde_json::to_writer(&mut *out, id)?;
    write!(out, r#","error":{{"code":{code},"message":"#)?;
    serde_json::to_writer(&mut *out, message)?;
    out.write_all(b"}}\n")
}

fn handle(line: &[u8], cache: &mut Cache, out: &mut impl Write) -> io::Result<()> {
    let Ok(msg) = serde_json::from_slice::<Incoming<'_>>(line) else {
        return write_error(out, &Value::Null, -32700, "parse error");
    };
    let Some(id) = msg.id else {
        return Ok(()); // a notification (or a response): nothing to answer
    };
    let params = msg.params;
    match msg.method.unwrap_or_default() {
        "initialize" => {
            let version = params
                .as_ref()
                .and_then(|p| p.protocol_version)
                .unwrap_or("2025-06-18");
            let result = serde_json::json!({
                "protocolVersion": version,
                "capabilities": { "tools": { "listChanged": false } },
                "serverInfo": { "name": "bench-mcp-server", "version": "0.1.0" }
            });
            write_result(out, &id, &serde_json::to_vec(&result)?)
        }
        "ping" => write_result(out, &id, b"{}"),
        "tools/list" => write_result(out, &id, cache.tools_list()),
        "tools/call" => {
            let (name, args) = match params {
                Some(p) => (p.name.unwrap_or_default(), p.arguments),
                None => ("", None),
            };
            match name {
                "echo" => write_result(out, &id, br#"{"content":[{"type":"text","text":"ok"}]}"#),
                "blob" => {
                    let (bytes, prose) =
                        args.map_or((0, false), |a| (a.bytes.unwrap_or(0), a.prose));
                    write_result(out, &id, cache.blob(bytes, prose))
                }
                "notify" => {
                    let count = args.and_then(|a| a.count).unwrap_or(0);
                    for i in 0..count {
                        writeln!(
                            out,
                            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","logger":"bench","data":"notification {i}"}}}}"#
                        )?;
                    }
                    write_result(out, &id, br#"{"content":[{"type":"text","text":"done"}]}"#)
                }
                _ => write_error(out, &id, -32602, "unknown tool"),
            }
        }
        _ => write_error(out, &id, -32601, "method not found"),
    }
}

fn main() -> io::Result<()> {
    let mut tools = DEFAULT_TOOLS;
    let mut http = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = true,
            "--tools" => {
                tools = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| io::Error::other("--tools needs a number"))?;
            }
            other => return Err(io::Error::other(format!("unknown argument {other:?}"))),
        }
    }
    if http {
        return serve_http(tools);
    }
    let mut cache = Cache {
        tools,
        tools_list: None,
        blobs: HashMap::new(),
    };
    let mut input = BufReader::with_capacity(READ_BUFFER_BYTES, io::stdin().lock());
    let mut out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let trimmed = line.trim_ascii_end();
        if !trimmed.is_empty() {
            handle(trimmed, &mut cache, &mut out)?;
        }
        // Flush when nothing more is waiting: one write per burst.
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
    out.flush()
}

/// Serves over HTTP until killed.
fn serve_http(tools: usize) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    // The URL is the one line on stdout: the load generator reads it.
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "http://{}/mcp", listener.local_addr()?)?;
    stdout.flush()?;
    drop(stdout);
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            let cache = Cache {
                tools,
                tools_list: None,
                blobs: HashMap::new(),
            };
            // A connection that breaks is the client's business.
            let _ = connection(stream, cache);
        });
    }
    Ok(())
}

/// One keep-alive connection: a request, its answer, until it closes.
fn connection(stream: TcpStream, mut cache: Cache) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut input = BufReader::with_capacity(READ_BUFFER_BYTES, stream.try_clone()?);
    let mut out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, stream);
    let mut line = String::new();
    let mut body = Vec::new();
    let mut answer = Vec::new();
    loop {
        let Some(Head { method, close }) = read_request(&mut input, &mut line, &mut body)? else {
            return Ok(());
        };
        answer.clear();
        let status = match method.as_str() {
            "POST" => {
                handle(&body, &mut cache, &mut answer)?;
                if answer.is_empty() {
                    "202 Accepted"
                } else {
                    "200 OK"
                }
            }
            "DELETE" => "200 OK",
            _ => "405 Method Not Allowed",
        };
        let lines = answer.iter().filter(|&&b| b == b'\n').count();
        let events = lines > 1;
        let content_type = if events {
            "text/event-stream"
        } else {
            "application/json"
        };
        let length = if events {
            answer.len() + lines * "data: \n".len()
        } else {
            answer.len()
        };
        write!(
            out,
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {length}\r\n\r\n"
        )?;
        if events {
            for message in answer.split(|&b| b == b'\n').filter(|m| !m.is_empty()) {
                out.write_all(b"data: ")?;
                out.write_all(message)?;
                out.write_all(b"\n\n")?;
            }
        } else {
            out.write_all(&answer)?;
        }
        out.flush()?;
        if close {
            return Ok(());
        }
    }
}
