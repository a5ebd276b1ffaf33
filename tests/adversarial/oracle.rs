//! What must never happen, judged the way a lenient server and a trusting
//! client would read the messages, not the way mcp-chain does: a URI is
//! decoded fully (`%2F` as `/`, `\` as `/`), as some file servers do, so a
//! spelling mcp-chain let through must not reach a hidden file under any
//! reading. Messages are parsed with serde_json, which keeps the last of
//! duplicate keys, as servers and clients do.

use serde_json::Value;

/// The policy under test (see `CONFIG` in main.rs), as this oracle knows it.
pub(crate) const DENIED_METHODS: [&str; 3] =
    ["sampling/createMessage", "roots/list", "logging/setLevel"];
pub(crate) const SECRET: &str = "AKIAIOSFODNN7EXAMPLE";

pub(crate) fn hidden_tool(name: &str) -> bool {
    name == "crash" || name == "garbage" || name.starts_with("env")
}

pub(crate) fn hidden_prompt(name: &str) -> bool {
    name == "secret_prompt"
}

/// Whether a server that decodes everything could take `uri` for a hidden
/// resource (`file:///etc/**`, `mem://secret/**`) or the hidden template
/// (`file:///logs/*`).
pub(crate) fn hidden_uri(uri: &str) -> bool {
    let decoded = decode(uri).replace('\\', "/");
    let Some((scheme, rest)) = decoded.split_once(':') else {
        return false;
    };
    let scheme = scheme.to_ascii_lowercase();
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut host = host.to_ascii_lowercase();
    if let Some((_, h)) = host.rsplit_once('@') {
        host = h.to_owned();
    }
    if scheme == "file" && host == "localhost" {
        host.clear();
    }
    let path = resolve(path);
    match (scheme.as_str(), host.as_str()) {
        ("file", "") => path == "/etc" || path.starts_with("/etc/") || path.starts_with("/logs/"),
        ("mem", "secret") => true,
        _ => false,
    }
}

/// Every `%XX` decoded, whatever it stands for.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = text
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Empty and `.` segments dropped, `..` applied.
fn resolve(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                kept.pop();
            }
            s => kept.push(s),
        }
    }
    format!("/{}", kept.join("/"))
}

/// Why the server must not have received `msg`, if it must not.
pub(crate) fn server_must_not_get(msg: &Value) -> Option<String> {
    if let Value::Array(batch) = msg {
        return batch.iter().find_map(server_must_not_get);
    }
    let method = msg.get("method")?.as_str()?;
    if DENIED_METHODS.contains(&method) {
        return Some(format!("denied method {method}"));
    }
    let p = &msg["params"];
    let str_of = |v: &Value| v.as_str().map(str::to_owned);
    let hit = match method {
        "tools/call" => str_of(&p["name"]).filter(|n| hidden_tool(n)),
        "prompts/get" => str_of(&p["name"]).filter(|n| hidden_prompt(n)),
        "completion/complete" => str_of(&p["ref"]["name"])
            .filter(|n| hidden_prompt(n))
            .or_else(|| str_of(&p["ref"]["uri"]).filter(|u| hidden_uri(u))),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            str_of(&p["uri"]).filter(|u| hidden_uri(u))
        }
        _ => None,
    };
    hit.map(|what| format!("{method} of {what}"))
}

/// Why the client must not have seen `msg`, if it must not.
pub(crate) fn client_must_not_see(msg: &Value) -> Option<String> {
    if msg.to_string().contains(SECRET) {
        return Some("the secret".into());
    }
    if let Some(method) = msg.get("method").and_then(Value::as_str) {
        if DENIED_METHODS.contains(&method) {
            return Some(format!("a {method} request"));
        }
        if method == "notifications/resources/updated" {
            if let Some(uri) = msg["params"]["uri"].as_str().filter(|u| hidden_uri(u)) {
                return Some(format!("an update of {uri}"));
            }
        }
    }
    hidden_inside(msg)
}

/// A hidden item in a list, or a denied request embedded, at any depth.
fn hidden_inside(value: &Value) -> Option<String> {
    match value {
        Value::Array(items) => items.iter().find_map(hidden_inside),
        Value::Object(map) => {
            for (key, v) in map {
                let found = match (key.as_str(), v) {
                    ("tools", Value::Array(items)) => listed(items, "name", hidden_tool),
                    ("prompts", Value::Array(items)) => listed(items, "name", hidden_prompt),
                    ("resources", Value::Array(items)) => listed(items, "uri", hidden_uri),
                    ("resourceTemplates", Value::Array(items)) => {
                        listed(items, "uriTemplate", hidden_uri)
                    }
                    ("inputRequests", Value::Object(requests)) => requests.values().find_map(|r| {
                        let method = r["method"].as_str().unwrap_or("?");
                        let denied = DENIED_METHODS.contains(&method) || r["method"].is_null();
                        denied.then(|| format!("an embedded {method} request"))
                    }),
                    _ => None,
                };
                if let Some(found) = found.or_else(|| hidden_inside(v)) {
                    return Some(found);
                }
            }
            None
        }
        _ => None,
    }
}

fn listed(items: &[Value], field: &str, hidden: fn(&str) -> bool) -> Option<String> {
    items.iter().find_map(|item| {
        let name = item[field].as_str()?;
        hidden(name).then(|| format!("a listed {name}"))
    })
}

#[test]
fn the_oracle_reads_leniently() {
    for uri in [
        "file:///etc/passwd",
        "file:///etc%2Fpasswd",
        "FILE://LOCALHOST/x/../etc//passwd",
        "file:///etc\\passwd",
        "mem://SECRET/key",
        "file:///logs/{name}",
    ] {
        assert!(hidden_uri(uri), "{uri}");
    }
    for uri in [
        "file:///srv/readme.txt",
        "file:///ETC/passwd",
        "mem://public/x",
        "etc/passwd",
    ] {
        assert!(!hidden_uri(uri), "{uri}");
    }
}
