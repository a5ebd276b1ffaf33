//! `mcp-chain-demo-server`: a small but real MCP server over stdio, the one
//! `make run` and `config/demo.toml` put behind mcp-chain, so trying the
//! proxy needs nothing beyond the Rust toolchain.
//!
//! It offers a little of each MCP feature a middleware may act on: tools
//! (`echo`, `add` with structured output, `slow_count` with progress and
//! cancellation, `read_secret` whose fake AWS key is there to be redacted), a
//! resource and a resource template, a prompt with argument completion, and
//! logging. Protocol goes to stdout only; the little it logs (stray responses,
//! I/O failures) goes to stderr. It exits 0 when stdin closes, once any
//! `slow_count` in progress has answered.

#[path = "common/line_io.rs"]
mod line_io;

use std::collections::HashSet;
use std::io;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use line_io::{
    classify, error, notification, response, text_result, Incoming, Out, INVALID_PARAMS,
    METHOD_NOT_FOUND, RESOURCE_NOT_FOUND,
};
use serde_json::{json, Value};

/// Versions whose lifecycle we follow; `initialize` echoes any of them.
const SUPPORTED_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];
/// Answered when the client asks for a version we do not know.
const PREFERRED_VERSION: &str = "2025-11-25";
/// Between `slow_count` steps: slow enough to watch progress arrive in a
/// terminal, fast enough that a demo does not drag.
const COUNT_STEP: Duration = Duration::from_millis(100);
/// Caps `slow_count` at ten seconds, so a typo cannot hang a demo.
const MAX_COUNT: u64 = 100;
/// AWS's documented example credentials: realistic enough to trip a
/// redaction pattern, useless to anyone who finds them.
const SECRET: &str = "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\
                      aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";
const README: &str = "This is mcp-chain's demo server.\n\
    Try tools/call on echo, add, slow_count (with a progressToken) or read_secret,\n\
    read demo://notes/anything, or get the greet prompt.\n";
const NOTES_PREFIX: &str = "demo://notes/";
/// Completions offered for the `greet` prompt's `name` argument.
const NAMES: [&str; 6] = ["Ada", "Alan", "Barbara", "Grace", "Linus", "Margaret"];
/// The RFC 5424 severities, by the names MCP's `logging/setLevel` uses.
const LOG_LEVELS: &str = "debug info notice warning error critical alert emergency";

fn main() -> ExitCode {
    let out = Out::new();
    // Ids of `slow_count` calls still counting. A `notifications/cancelled`
    // removes the id; the counting thread stops once it finds it gone.
    let counting = Arc::new(Mutex::new(HashSet::new()));
    if let Err(e) = line_io::read_messages(&out, |msg| handle(&out, &counting, msg)) {
        eprintln!("mcp-chain-demo-server: stdio: {e}");
        return ExitCode::FAILURE;
    }
    // Let counts already started finish (at most MAX_COUNT steps), so
    // `printf … | mcp-chain-demo-server` shows their answers too.
    while !lock(&counting).is_empty() {
        thread::sleep(COUNT_STEP);
    }
    ExitCode::SUCCESS
}

type Counting = Arc<Mutex<HashSet<String>>>;

fn handle(out: &Out, counting: &Counting, msg: Value) -> io::Result<()> {
    match classify(msg) {
        Err(reply) => out.send(&reply),
        Ok(Incoming::Request { id, method, params }) => {
            if method == "tools/call" && params["name"] == "slow_count" {
                return slow_count(out, counting, id, &params);
            }
            match request(&method, &params) {
                Ok(result) => out.send(&response(id, result)),
                Err((code, message)) => out.send(&error(id, code, message)),
            }
        }
        Ok(Incoming::Notification { method, params }) => {
            if method == "notifications/cancelled" {
                lock(counting).remove(&params["requestId"].to_string());
            }
            Ok(())
        }
        // We never send requests, so any response is stray: note it, move on.
        Ok(Incoming::Response(resp)) => {
            eprintln!("mcp-chain-demo-server: stray response, id {}", resp["id"]);
            Ok(())
        }
    }
}

fn lock(counting: &Counting) -> std::sync::MutexGuard<'_, HashSet<String>> {
    // Each critical section is one insert or remove; poison cannot tear it.
    counting.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A result, or the JSON-RPC error (code, message) to answer instead.
type Reply = Result<Value, (i64, String)>;

fn fail(code: i64, message: impl Into<String>) -> Reply {
    Err((code, message.into()))
}

fn request(method: &str, params: &Value) -> Reply {
    match method {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or_default();
            let known = SUPPORTED_VERSIONS.contains(&asked);
            let version = if known { asked } else { PREFERRED_VERSION };
            Ok(json!({
                "protocolVersion": version,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": "A demo server: echo, add, slow_count, read_secret.",
            }))
        }
        "server/discover" => Ok(json!({
            "supportedVersions": SUPPORTED_VERSIONS,
            "capabilities": capabilities(),
            "serverInfo": server_info(),
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools()})),
        "tools/call" => call_tool(params),
        "resources/list" => Ok(json!({"resources": [{
            "uri": "demo://readme", "name": "readme", "title": "About this server",
            "mimeType": "text/plain",
        }]})),
        "resources/templates/list" => Ok(json!({"resourceTemplates": [{
            "uriTemplate": format!("{NOTES_PREFIX}{{name}}"), "name": "notes",
            "title": "Notes on any topic", "mimeType": "text/plain",
        }]})),
        "resources/read" => {
            let uri = params["uri"].as_str().unwrap_or_default();
            let text = match uri.strip_prefix(NOTES_PREFIX) {
                Some(name) if !name.is_empty() => format!("Notes on {name}: nothing yet.\n"),
                _ if uri == "demo://readme" => README.to_owned(),
                _ => return fail(RESOURCE_NOT_FOUND, format!("Resource not found: {uri}")),
            };
            Ok(json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}))
        }
        "prompts/list" => Ok(json!({"prompts": [{
            "name": "greet", "title": "Greet someone",
            "arguments": [{"name": "name", "description": "Who to greet", "required": true}],
        }]})),
        "prompts/get" => {
            let prompt = params["name"].as_str().unwrap_or_default();
            if prompt != "greet" {
                return fail(INVALID_PARAMS, format!("Unknown prompt: {prompt}"));
            }
            let Some(name) = params["arguments"]["name"].as_str() else {
                return fail(INVALID_PARAMS, "Missing required argument: name");
            };
            let text = format!("Please write a warm, one-line greeting for {name}.");
            Ok(json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}))
        }
        "completion/complete" => {
            let wanted = params["ref"]["name"] == "greet" && params["argument"]["name"] == "name";
            let value = params["argument"]["value"].as_str().unwrap_or_default();
            let prefix = value.to_lowercase();
            let values: Vec<&str> = NAMES
                .into_iter()
                .filter(|n| wanted && n.to_lowercase().starts_with(&prefix))
                .collect();
            let completion = json!({"values": values, "total": values.len(), "hasMore": false});
            Ok(json!({"completion": completion}))
        }
        "logging/setLevel" => match params["level"].as_str() {
            Some(level) if LOG_LEVELS.split(' ').any(|l| l == level) => Ok(json!({})),
            _ => fail(INVALID_PARAMS, "Unknown log level"),
        },
        _ => fail(METHOD_NOT_FOUND, format!("Method not found: {method}")),
    }
}

fn tools() -> Value {
    let number = json!({"type": "number"});
    let echo = tool(
        "echo",
        "Echoes the text back",
        json!({"text": {"type": "string"}}),
    );
    let mut add = tool("add", "Adds two numbers", json!({"a": number, "b": number}));
    add["outputSchema"] = schema(json!({"sum": number}));
    let n = json!({"type": "integer", "minimum": 0, "maximum": MAX_COUNT});
    let count = tool("slow_count", "Counts to n, 100 ms a step", json!({"n": n}));
    let secret = tool("read_secret", "Returns a (fake) AWS credential", json!({}));
    json!([echo, add, count, secret])
}

fn tool(name: &str, description: &str, properties: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": schema(properties)})
}

/// An object schema requiring every property it lists.
fn schema(properties: Value) -> Value {
    let required: Vec<&String> = properties
        .as_object()
        .map_or(vec![], |p| p.keys().collect());
    json!({"type": "object", "properties": properties, "required": required})
}

/// A tool's own failure: a result the model can read, not a protocol error.
fn tool_error(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

fn call_tool(params: &Value) -> Reply {
    let args = &params["arguments"];
    match params["name"].as_str().unwrap_or_default() {
        "echo" => match args["text"].as_str() {
            Some(text) => Ok(text_result(text)),
            None => Ok(tool_error("echo needs a string argument `text`")),
        },
        "add" => {
            // Integers stay exact; anything else is added as f64.
            let sum = match (args["a"].as_i64(), args["b"].as_i64()) {
                (Some(a), Some(b)) if a.checked_add(b).is_some() => json!(a + b),
                _ => match (args["a"].as_f64(), args["b"].as_f64()) {
                    (Some(a), Some(b)) => json!(a + b),
                    _ => return Ok(tool_error("add needs numbers `a` and `b`")),
                },
            };
            let structured = json!({"sum": sum});
            Ok(json!({
                "content": [{"type": "text", "text": structured.to_string()}],
                "structuredContent": structured,
            }))
        }
        "read_secret" => Ok(text_result(SECRET)),
        name => fail(INVALID_PARAMS, format!("Unknown tool: {name}")),
    }
}

/// Counts on its own thread, so pings and other calls are answered while it
/// runs and a `notifications/cancelled` can stop it midway.
fn slow_count(out: &Out, counting: &Counting, id: Value, params: &Value) -> io::Result<()> {
    let n = match params["arguments"]["n"].as_u64() {
        Some(n) if n <= MAX_COUNT => n,
        _ => {
            let text = format!("slow_count needs an integer `n` from 0 to {MAX_COUNT}");
            return out.send(&response(id, tool_error(&text)));
        }
    };
    let token = params["_meta"]["progressToken"].clone();
    let (out, counting, key) = (out.clone(), Arc::clone(counting), id.to_string());
    lock(&counting).insert(key.clone());
    thread::spawn(move || {
        for i in 1..=n {
            thread::sleep(COUNT_STEP);
            if !lock(&counting).contains(&key) {
                return; // cancelled: the client wants no answer
            }
            if !token.is_null() {
                let params = json!({"progressToken": token, "progress": i, "total": n,
                                    "message": format!("{i} of {n}")});
                let _ = out.send(&notification("notifications/progress", params));
            }
        }
        if lock(&counting).remove(&key) {
            let _ = out.send(&response(id, text_result(format!("Counted to {n}."))));
        }
    });
    Ok(())
}

fn capabilities() -> Value {
    json!({"tools": {}, "resources": {}, "prompts": {}, "logging": {}, "completions": {}})
}

fn server_info() -> Value {
    json!({"name": "mcp-chain-demo-server", "title": "mcp-chain demo server",
           "version": env!("CARGO_PKG_VERSION")})
}
