//! What a client's server entry runs: a command and its arguments, or a
//! URL with its headers (literal, or read from variables as Codex does),
//! read the way each client writes it.

use super::json::Entry;
use super::Client;
use serde_json::Value;

/// What an entry runs.
#[derive(Debug, PartialEq)]
pub(super) enum Shape {
    /// A command, its arguments.
    Stdio { command: String, args: Vec<String> },
    /// A URL (Streamable HTTP or SSE), its headers.
    Remote {
        url: String,
        headers: Vec<(String, String)>,
        /// Headers whose value the client reads from a variable (Codex):
        /// (header, variable); `Authorization` from `bearer_token_env_var`
        /// is `Bearer ` and the variable's value.
        from_env: Vec<(String, String)>,
    },
}

/// The members a remote entry's headers may be in, per client.
pub(super) const HEADER_KEYS: [&str; 4] = [
    "headers",
    "http_headers",
    "env_http_headers",
    "bearer_token_env_var",
];

/// The `Authorization` header a bearer token's variable gives.
pub(super) const BEARER: &str = "Authorization: Bearer";

impl Entry {
    /// What the entry runs; `Err` for a shape this mcp-chain does not know
    /// (the entry is left as it is).
    pub(super) fn shape(&self, client: Client) -> Result<Shape, String> {
        let v = &self.value;
        if let Some(command) = v.get("command").and_then(Value::as_str) {
            let args = match v.get("args") {
                None => Vec::new(),
                Some(Value::Array(args)) => args
                    .iter()
                    .map(|a| a.as_str().map(str::to_owned))
                    .collect::<Option<_>>()
                    .ok_or("\"args\" holds something that is not a string")?,
                Some(_) => return Err("\"args\" is not an array".into()),
            };
            return Ok(Shape::Stdio {
                command: command.to_owned(),
                args,
            });
        }
        let pairs = |key: &str| -> Result<Vec<(String, String)>, String> {
            match v.get(key) {
                None => Ok(Vec::new()),
                Some(Value::Object(h)) => h
                    .iter()
                    .map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect::<Option<_>>()
                    .ok_or_else(|| format!("a value of \"{key}\" is not a string")),
                Some(_) => Err(format!("\"{key}\" is not a table")),
            }
        };
        for (key, _) in client.url_keys() {
            if let Some(url) = v.get(*key).and_then(Value::as_str) {
                let (headers, mut from_env) = match client {
                    Client::Codex => (pairs("http_headers")?, pairs("env_http_headers")?),
                    _ => (pairs("headers")?, Vec::new()),
                };
                if let Some(var) = v.get("bearer_token_env_var").and_then(Value::as_str) {
                    from_env.push((BEARER.to_owned(), var.to_owned()));
                }
                return Ok(Shape::Remote {
                    url: url.to_owned(),
                    headers,
                    from_env,
                });
            }
        }
        Err("neither a command nor a URL this client names one with".into())
    }
}
