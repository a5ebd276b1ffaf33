//! Newline-delimited JSON-RPC 2.0 over stdio, shared by the two stand-alone
//! MCP servers (`mcp-chain-demo-server` and the `fake-mcp-server` fixture).
//!
//! Both binaries include this file with `#[path = "…"] mod line_io;` instead
//! of depending on the proxy's own codec: a server that shares the proxy's
//! framing code could hide a framing bug from the very tests meant to find it.
//! It lives in a folder under `src/bin/` so Cargo does not take it for a bin.

use std::io::{self, BufRead, Write};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

/// JSON-RPC: the line is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: JSON, but not a request, notification or response.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: bad params; MCP also uses it for an unknown tool or prompt.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// MCP SDKs: `resources/read` of a URI the server does not have.
pub(crate) const RESOURCE_NOT_FOUND: i64 = -32002;

/// The protocol's only output channel. Every message is written as one
/// `write_all` of a whole line under the lock and flushed at once, so lines
/// from concurrent threads never interleave and a peer never waits on a
/// message sitting in our buffer.
#[derive(Debug, Clone)]
pub(crate) struct Out {
    stdout: Arc<Mutex<io::Stdout>>,
}

impl Out {
    pub(crate) fn new() -> Self {
        Self {
            stdout: Arc::new(Mutex::new(io::stdout())),
        }
    }

    /// Writes `msg` as one compact JSON line.
    pub(crate) fn send(&self, msg: &Value) -> io::Result<()> {
        let mut line = serde_json::to_vec(msg).expect("a Value always serializes");
        line.push(b'\n');
        self.write_line(&line)
    }

    /// Writes raw bytes that must already end in `\n` (the fixture uses it
    /// to emit lines that are not JSON).
    pub(crate) fn write_line(&self, line: &[u8]) -> io::Result<()> {
        // A thread that panicked mid-write leaves at worst a torn line; the
        // stream itself is still usable, so poisoning is not fatal here.
        let stdout = self.stdout.lock().unwrap_or_else(PoisonError::into_inner);
        let mut w = stdout.lock();
        w.write_all(line)?;
        w.flush()
    }
}

/// One message read from the peer, split into the JSON-RPC envelope kinds.
#[derive(Debug)]
pub(crate) enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response (result or error) to a request we sent, kept whole.
    Response(Value),
}

/// Reads stdin line by line until EOF, calling `on_message` for each JSON
/// value. A line that is not JSON (or not UTF-8) is answered with -32700 and
/// id null, then reading goes on: one bad line must not end the session.
pub(crate) fn read_messages(
    out: &Out,
    mut on_message: impl FnMut(Value) -> io::Result<()>,
) -> io::Result<()> {
    let mut stdin = io::stdin().lock();
    // Bytes, not `lines()`: invalid UTF-8 is a parse error, not an I/O error.
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if stdin.read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(&buf) {
            Ok(msg) => on_message(msg)?,
            Err(e) => out.send(&error(
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: {e}"),
            ))?,
        }
    }
}

/// Sorts a message into request, notification or response; anything else
/// is returned as the -32600 error to send back.
pub(crate) fn classify(msg: Value) -> Result<Incoming, Value> {
    let Value::Object(mut obj) = msg else {
        return Err(error(Value::Null, INVALID_REQUEST, "Invalid Request"));
    };
    if obj.contains_key("method") {
        let id = obj.remove("id");
        let params = obj.remove("params").unwrap_or(Value::Null);
        return match (obj.remove("method"), id) {
            (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request { id, method, params }),
            (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
            (_, id) => Err(error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "Invalid Request",
            )),
        };
    }
    // A response is passed on untouched, key order included.
    match obj.get("id") {
        Some(_) if obj.contains_key("result") || obj.contains_key("error") => {
            Ok(Incoming::Response(Value::Object(obj)))
        }
        id => Err(error(
            id.cloned().unwrap_or(Value::Null),
            INVALID_REQUEST,
            "Invalid Request",
        )),
    }
}

pub(crate) fn response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub(crate) fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// A tool result holding one text block.
pub(crate) fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}
