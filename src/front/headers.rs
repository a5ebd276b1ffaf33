//! The routing headers of a 2026-07-28 request, which must say what its
//! body says (a load balancer or a gateway may have routed on them):
//! `MCP-Protocol-Version` (and `_meta`'s), `Mcp-Method`, `Mcp-Name` for a
//! call, a prompt or a read, and the `Mcp-Param-*` of the arguments its
//! tool marks; values in the `=?base64?…?=` form decoded.

use super::stateless::MODERN;
use crate::upstream::ToolParams;
use base64::Engine as _;
use hyper::HeaderMap;
use mcp_chain_middleware::message::{meta, method};
use mcp_chain_middleware::Message;

/// Whether a request without a session is of a revision without sessions.
pub(super) fn is_modern(headers: &HeaderMap, message: &Message) -> bool {
    let header = headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok());
    let meta = meta_version(message);
    [header, meta.as_deref()]
        .iter()
        .flatten()
        .any(|v| MODERN.contains(v))
}

fn meta_version(message: &Message) -> Option<String> {
    let meta = message.params()?.member("_meta").ok()??;
    Some(meta.get(meta::PROTOCOL_VERSION)?.as_str()?.to_owned())
}

/// What is wrong with a request's routing headers, if anything.
pub(super) fn mismatch(
    headers: &HeaderMap,
    message: &Message,
    marked: &ToolParams,
) -> Option<String> {
    let header = |name: &str| -> Result<Option<String>, String> {
        let Some(value) = headers.get(name) else {
            return Ok(None);
        };
        let text = value
            .to_str()
            .map_err(|_| format!("{name} is not visible ASCII"))?;
        decoded(text)
            .map(Some)
            .ok_or_else(|| format!("{name} has a malformed =?base64?…?= value"))
    };
    let method = message.method()?;
    let version = header("mcp-protocol-version");
    match (version, meta_version(message)) {
        (Ok(None), _) => return Some("MCP-Protocol-Version is required".into()),
        (Ok(Some(h)), Some(m)) if h != m => {
            return Some(format!(
                "MCP-Protocol-Version {h:?} does not match _meta {m:?}"
            ));
        }
        (Err(e), _) => return Some(e),
        _ => {}
    }
    match header("mcp-method") {
        Ok(Some(h)) if h == method => {}
        Ok(Some(h)) => {
            return Some(format!(
                "Mcp-Method {h:?} does not match the body's method {method:?}"
            ))
        }
        Ok(None) => return Some("Mcp-Method is required".into()),
        Err(e) => return Some(e),
    }
    let member = match method {
        method::TOOLS_CALL | method::PROMPTS_GET => "name",
        method::RESOURCES_READ => "uri",
        _ => return None,
    };
    let body = message
        .params()
        .and_then(|p| p.str_member(member).ok().flatten());
    match (header("mcp-name"), &body) {
        (Ok(Some(h)), Some(b)) if h == **b => {}
        (Ok(Some(h)), b) => {
            return Some(format!(
                "Mcp-Name {h:?} does not match the body's {member} {b:?}"
            ))
        }
        (Ok(None), _) => return Some("Mcp-Name is required".into()),
        (Err(e), _) => return Some(e),
    }
    let (Some(tool), true) = (body, method == method::TOOLS_CALL) else {
        return None;
    };
    params_mismatch(headers, message, &tool, marked)
}

/// What is wrong with a call's `Mcp-Param-*` headers, against the marks
/// its server's listing put on the tool's parameters: each marked argument
/// present must be mirrored (numbers compared as numbers), and no header
/// may name an argument the call does not carry. A tool whose listing was
/// not seen yet cannot be checked.
fn params_mismatch(
    headers: &HeaderMap,
    message: &Message,
    tool: &str,
    marked: &ToolParams,
) -> Option<String> {
    let arguments = || message.params()?.member("arguments").ok().flatten();
    let expected = marked.headers(tool, arguments);
    for (name, value) in &expected {
        let want = decoded(value.to_str().unwrap_or_default()).unwrap_or_default();
        let got = headers.get(name).and_then(|v| v.to_str().ok()).map(decoded);
        match got {
            Some(Some(got)) if got == want || same_number(&got, &want) => {}
            Some(_) => return Some(format!("{name} does not match the body's argument")),
            None => return Some(format!("{name} is required: the tool marks this argument")),
        }
    }
    let extra = headers
        .keys()
        .filter(|k| k.as_str().starts_with("mcp-param-"))
        .find(|k| !expected.iter().any(|(name, _)| name == *k));
    match extra {
        Some(name) if marked.knows(tool) => Some(format!("{name} names no argument of this call")),
        _ => None,
    }
}

fn same_number(a: &str, b: &str) -> bool {
    matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

/// A header value as the client meant it: `=?base64?…?=` decoded.
fn decoded(value: &str) -> Option<String> {
    let Some(b64) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn request(method: &str, params: Value) -> Message {
        Message::request(1u64, method, Some(params))
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        map
    }

    #[test]
    fn routing_headers_must_say_what_the_body_says() {
        let call = request(
            "tools/call",
            json!({"name": "add", "_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}),
        );
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "add"),
        ];
        assert_eq!(
            mismatch(&headers(&good), &call, &ToolParams::default()),
            None
        );
        let encoded = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?YWRk?="),
        ];
        assert_eq!(
            mismatch(&headers(&encoded), &call, &ToolParams::default()),
            None
        );
        for bad in [
            &good[..2],
            &[good[0], good[1], ("mcp-name", "rm")][..],
            &[good[0], ("mcp-method", "tools/list"), good[2]][..],
            &good[1..],
            &[("mcp-protocol-version", "2025-11-25"), good[1], good[2]][..],
            &[good[0], good[1], ("mcp-name", "=?base64?!!?=")][..],
        ] {
            assert!(
                mismatch(&headers(bad), &call, &ToolParams::default()).is_some(),
                "{bad:?}"
            );
        }
        let list = request("tools/list", json!({}));
        assert_eq!(
            mismatch(
                &headers(&[good[0], ("mcp-method", "tools/list")]),
                &list,
                &ToolParams::default()
            ),
            None
        );
    }

    #[test]
    fn marked_arguments_must_be_mirrored_in_their_headers() {
        let marked = ToolParams::default();
        let mut listing = mcp_chain_middleware::message::Payload::from(json!({"tools": [{
            "name": "deploy",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "replicas": {"type": "integer", "x-mcp-header": "Replicas"},
                "note": {"type": "string"}
            }}
        }]}));
        marked.learn(&mut listing);
        let meta = json!({meta::PROTOCOL_VERSION: "2026-07-28"});
        let call = |arguments: Value| {
            request(
                "tools/call",
                json!({"name": "deploy", "arguments": arguments, "_meta": meta}),
            )
        };
        let base = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "deploy"),
        ];
        let with = |extra: &[(&'static str, &'static str)]| headers(&[&base[..], extra].concat());
        let both = json!({"region": "eu", "replicas": 3, "note": "x"});
        let ok = with(&[("mcp-param-region", "eu"), ("mcp-param-replicas", "3.0")]);
        assert_eq!(mismatch(&ok, &call(both.clone()), &marked), None);
        for bad in [
            with(&[("mcp-param-region", "eu")]),
            with(&[("mcp-param-region", "us"), ("mcp-param-replicas", "3")]),
            with(&[]),
        ] {
            assert!(
                mismatch(&bad, &call(both.clone()), &marked).is_some(),
                "{bad:?}"
            );
        }
        // An argument the call does not carry has no header, and a header
        // for it is refused.
        let only_region = json!({"region": "eu"});
        assert_eq!(
            mismatch(
                &with(&[("mcp-param-region", "eu")]),
                &call(only_region.clone()),
                &marked
            ),
            None
        );
        let stray = with(&[("mcp-param-region", "eu"), ("mcp-param-replicas", "3")]);
        assert!(mismatch(&stray, &call(only_region), &marked).is_some());
    }
}
