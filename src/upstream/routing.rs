//! The routing headers the 2026-07-28 revision requires on every POST, so
//! a load balancer or gateway can route without reading the body:
//! `Mcp-Method` (the method), `Mcp-Name` (`params.name` of `tools/call` and
//! `prompts/get`, `params.uri` of `resources/read`), and, for a client that
//! has no session, `MCP-Protocol-Version` from the request's own
//! `_meta["io.modelcontextprotocol/protocolVersion"]`.
//!
//! They are read from the message as it leaves the chain (after a rename, a
//! prefix removed, arguments rewritten), here in the connector's transport
//! and not in a layer, so they always say what the body says. A value that
//! is not a plain header value (non-ASCII, control characters, spaces at
//! either end, or one that looks like the encoding's own sentinel) goes as
//! `=?base64?…?=`, as the specification says. Servers of earlier revisions
//! ignore headers they do not know.

use super::params::ToolParams;
use base64::Engine as _;
use hyper::header::{HeaderName, HeaderValue};
use mcp_chain_middleware::message::{meta, method};
use mcp_chain_middleware::Message;

const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// What goes with a message's POST.
#[derive(Debug, Default)]
pub(super) struct Routing {
    pub(super) headers: Vec<(HeaderName, HeaderValue)>,
    /// The protocol version the message names for itself, if any.
    pub(super) version: Option<HeaderValue>,
}

impl Routing {
    /// The headers of `message`; `params` knows the tools' marked
    /// parameters (`Mcp-Param-*`).
    pub(super) fn of(message: &Message, marked: &ToolParams) -> Self {
        let mut routing = Self::default();
        let Some(name) = message.method() else {
            return routing;
        };
        routing.headers.push((MCP_METHOD, encoded(name)));
        let params = message.params();
        let member = match name {
            method::TOOLS_CALL | method::PROMPTS_GET => Some("name"),
            method::RESOURCES_READ => Some("uri"),
            _ => None,
        };
        if let (Some(member), Some(params)) = (member, params) {
            // A body whose name cannot be read gets no header; the server
            // answers it as the body deserves.
            if let Ok(Some(value)) = params.str_member(member) {
                routing.headers.push((MCP_NAME, encoded(&value)));
                if name == method::TOOLS_CALL {
                    let arguments = || params.member("arguments").ok().flatten();
                    routing.headers.extend(marked.headers(&value, arguments));
                }
            }
        }
        let version = params
            .and_then(|p| p.member("_meta").ok().flatten())
            .and_then(|meta| meta.get(meta::PROTOCOL_VERSION)?.as_str().map(encoded));
        routing.version = version;
        routing
    }
}

/// `value` as a header value: as it is when that is safe, else in the
/// specification's Base64 form.
pub(super) fn encoded(value: &str) -> HeaderValue {
    let visible = value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = visible && !padded && !sentinel;
    let text = if plain {
        value.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(value);
        format!("=?base64?{b64}?=")
    };
    // Both forms are visible ASCII (and tabs and inner spaces).
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(message: Message) -> Vec<(String, String)> {
        Routing::of(&message, &ToolParams::default())
            .headers
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().expect("ascii").to_owned()))
            .collect()
    }

    #[test]
    fn a_call_names_its_method_and_tool() {
        let call = Message::request(
            1,
            "tools/call",
            Some(json!({"name": "get_weather", "arguments": {}})),
        );
        assert_eq!(
            headers(call),
            [
                ("mcp-method".into(), "tools/call".into()),
                ("mcp-name".into(), "get_weather".into())
            ]
        );
        let read = Message::request(2, "resources/read", Some(json!({"uri": "file:///a b"})));
        assert_eq!(headers(read)[1].1, "file:///a b");
        let list = Message::request(3, "tools/list", None);
        assert_eq!(headers(list), [("mcp-method".into(), "tools/list".into())]);
        let note = Message::notification("notifications/cancelled", Some(json!({"requestId": 1})));
        assert_eq!(
            headers(note),
            [("mcp-method".into(), "notifications/cancelled".into())]
        );
    }

    #[test]
    fn unsafe_values_go_in_base64() {
        for (value, sent) in [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ] {
            assert_eq!(encoded(value).to_str().expect("ascii"), sent, "{value:?}");
        }
    }

    #[test]
    fn a_sessionless_request_names_its_own_version() {
        let meta = json!({"name": "t", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        let routing = Routing::of(
            &Message::request(1, "tools/call", Some(meta)),
            &ToolParams::default(),
        );
        assert_eq!(
            routing.version,
            Some(HeaderValue::from_static("2026-07-28"))
        );
        let call = Message::request(1, "tools/call", Some(json!({"name": "t"})));
        let routing = Routing::of(&call, &ToolParams::default());
        assert_eq!(routing.version, None);
    }
}
