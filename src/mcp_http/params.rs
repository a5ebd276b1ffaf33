//! The `Mcp-Param-{Name}` headers of the 2026-07-28 revision: a server may
//! mark a tool's parameters with `x-mcp-header` in its `inputSchema`, and an
//! HTTP client must then mirror each marked argument of a `tools/call` into
//! that header, so intermediaries can route on it.
//!
//! mcp-chain learns the marks from the `tools/list` answers it relays from
//! the server (the server's names, which are what a call carries once it has
//! left the chain). A tool whose marks break the revision's rules (an empty
//! or non-token name, one used twice, a mark not reached through
//! `properties` alone, a parameter that is not a string, integer or
//! boolean) must not be offered: it is dropped from the listing, with a
//! warning naming it and why. Listings without a mark cost one search for
//! the word, and nothing more while no tool has one.
//!
//! The HTTP front uses the same marks the other way: a 2026-07-28 client's
//! call must carry the headers its arguments call for (see
//! [`Routing::check`](super::Routing::check)).

use super::encoding::encoded;
use hyper::header::{HeaderName, HeaderValue};
use mcp_chain_middleware::payload::Payload;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;

const MARK: &str = "x-mcp-header";

/// Keywords whose values are data, not schemas: a mark-shaped key in an
/// `enum` value is no mark.
const DATA: [&str; 4] = ["enum", "const", "default", "examples"];

/// One marked parameter: its header, and where its value is in the
/// arguments (a chain of `properties` keys).
#[derive(Debug, Clone)]
struct Param {
    header: HeaderName,
    path: Vec<String>,
}

/// What the server's listings marked, by tool.
#[derive(Debug, Default)]
pub(crate) struct ToolParams(Mutex<HashMap<String, Vec<Param>>>);

impl ToolParams {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Param>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Learns the marks of a `tools/list` result, and drops the tools whose
    /// marks are invalid from it.
    pub(crate) fn learn(&self, result: &mut Payload) {
        let marked = result
            .text()
            .is_none_or(|t| memchr::memmem::find(t.as_bytes(), MARK.as_bytes()).is_some());
        if !marked && self.lock().is_empty() {
            return;
        }
        let mut learned = Vec::new();
        let edited = result.edit_items("tools", |tool| {
            let Some(name) = tool.str_member("name").map(|n| n.into_owned()) else {
                return true;
            };
            let schema = tool.member("inputSchema").unwrap_or(Value::Null);
            match marks(&schema) {
                Ok(params) => {
                    learned.push((name, params));
                    true
                }
                Err(why) => {
                    tracing::warn!(tool = %name, "leaving out a tool whose x-mcp-header marks are invalid: {why}");
                    false
                }
            }
        });
        if let Err(e) = edited {
            tracing::debug!(error = %e, "a tools/list result whose tools cannot be read");
        }
        let mut known = self.lock();
        for (name, params) in learned {
            if params.is_empty() {
                known.remove(&name);
            } else {
                known.insert(name, params);
            }
        }
    }

    /// Whether a listing marked parameters of `tool`.
    pub(crate) fn knows(&self, tool: &str) -> bool {
        self.lock().contains_key(tool)
    }

    /// The headers a call of `tool` carries; its arguments are read only
    /// when the tool has marks.
    pub(crate) fn headers(
        &self,
        tool: &str,
        arguments: impl FnOnce() -> Option<Value>,
    ) -> Vec<(HeaderName, HeaderValue)> {
        let known = self.lock();
        let Some(params) = known.get(tool) else {
            return Vec::new();
        };
        let Some(arguments) = arguments() else {
            return Vec::new();
        };
        let arguments = &arguments;
        let mut headers = Vec::new();
        for param in params {
            let value = param.path.iter().try_fold(arguments, |v, key| v.get(key));
            let text = match value {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
                // Absent, or of a type the mark does not allow: no header.
                _ => continue,
            };
            headers.push((param.header.clone(), encoded(&text)));
        }
        headers
    }
}

/// The marks of an `inputSchema`, or why they break the rules.
fn marks(schema: &Value) -> Result<Vec<Param>, BadMark> {
    let mut params = Vec::new();
    let mut path = Vec::new();
    walk(schema, &mut path, true, &mut params)?;
    let mut seen: Vec<String> = Vec::new();
    for param in &params {
        let name = param.header.as_str().to_ascii_lowercase();
        if seen.contains(&name) {
            return Err(BadMark::Twice(name));
        }
        seen.push(name);
    }
    Ok(params)
}

/// Finds every mark in `schema`; `reachable` says whether this schema is
/// reached from the root through `properties` alone.
fn walk(
    schema: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    params: &mut Vec<Param>,
) -> Result<(), BadMark> {
    let Some(object) = schema.as_object() else {
        if let Some(items) = schema.as_array() {
            for item in items {
                walk(item, path, false, params)?;
            }
        }
        return Ok(());
    };
    if let Some(mark) = object.get(MARK) {
        params.push(param(mark, object, path, reachable)?);
    }
    for (key, value) in object {
        match (key.as_str(), value.as_object()) {
            ("properties", Some(properties)) => {
                for (name, property) in properties {
                    path.push(name.clone());
                    walk(property, path, reachable, params)?;
                    path.pop();
                }
            }
            (MARK, _) => {}
            (key, _) if DATA.contains(&key) => {}
            _ => walk(value, path, false, params)?,
        }
    }
    Ok(())
}

fn param(
    mark: &Value,
    schema: &Map<String, Value>,
    path: &[String],
    reachable: bool,
) -> Result<Param, BadMark> {
    let name = mark.as_str().ok_or(BadMark::NotAString)?;
    let bad = |why: fn(String) -> BadMark| why(name.to_owned());
    if !reachable || path.is_empty() {
        return Err(bad(BadMark::Unreachable));
    }
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Err(bad(BadMark::NotAToken));
    }
    let primitive = |t: &Value| matches!(t.as_str(), Some("string" | "integer" | "boolean"));
    let typed = match schema.get("type") {
        Some(Value::Array(types)) => {
            !types.is_empty() && types.iter().all(|t| primitive(t) || t == "null")
        }
        Some(t) => primitive(t),
        None => false,
    };
    if !typed {
        return Err(bad(BadMark::NotPrimitive));
    }
    let header =
        HeaderName::try_from(format!("mcp-param-{name}")).map_err(|_| bad(BadMark::NotAToken))?;
    Ok(Param {
        header,
        path: path.to_vec(),
    })
}

/// Why a tool's marks break the revision's rules. The mark's name is the
/// server's: logged (escaped and cut by the log writer), never sent on.
#[derive(Debug, thiserror::Error)]
enum BadMark {
    #[error("a mark that is not a string")]
    NotAString,
    #[error("{0:?} marks two parameters")]
    Twice(String),
    #[error("{0:?} is not on a property reached through `properties` alone")]
    Unreachable(String),
    #[error("{0:?} is not an HTTP header name token")]
    NotAToken(String),
    #[error("{0:?} marks a parameter that is not a string, integer or boolean")]
    NotPrimitive(String),
}

#[cfg(test)]
mod tests;
