//! The routing headers the 2026-07-28 revision requires on every POST, so
//! a load balancer or gateway can route without reading the body:
//! `Mcp-Method` (the method), `Mcp-Name` (`params.name` of `tools/call` and
//! `prompts/get`, `params.uri` of `resources/read`), the `Mcp-Param-*` of
//! the arguments a tool marks, and, for a client that has no session,
//! `MCP-Protocol-Version` from the request's own
//! `_meta["io.modelcontextprotocol/protocolVersion"]`.
//!
//! One type, both directions. A URL upstream computes them
//! ([`Routing::of`]) from the message as it leaves the chain (after a
//! rename, a prefix removed, arguments rewritten), so they always say what
//! the body says. The HTTP front checks a client's ([`Routing::check`])
//! and refuses a request whose headers say something else: a gateway may
//! have routed on them. Values go in the `=?base64?…?=` form when they are
//! not plain header values; servers of earlier revisions ignore headers
//! they do not know.

use super::encoding::{decoded, encoded};
use super::params::ToolParams;
use super::{MCP_METHOD, MCP_NAME, MCP_PARAM_PREFIX, PROTOCOL_VERSION, SESSIONLESS};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_chain_middleware::message::{meta, method};
use mcp_chain_middleware::payload::Payload;
use mcp_chain_middleware::Message;

/// What goes with a message's POST.
#[derive(Debug, Default)]
pub(crate) struct Routing {
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    /// The protocol version the message names for itself, if any.
    pub(crate) version: Option<HeaderValue>,
}

/// How a request's routing headers disagree with its body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Mismatch {
    #[error("MCP-Protocol-Version is required")]
    NoVersion,
    #[error("MCP-Protocol-Version {header:?} does not match _meta {meta:?}")]
    Version { header: String, meta: String },
    #[error("Mcp-Method is required")]
    NoMethod,
    #[error("Mcp-Method {header:?} does not match the body's method {body:?}")]
    Method { header: String, body: String },
    #[error("Mcp-Name is required")]
    NoName,
    #[error("Mcp-Name {header:?} does not match the body's {member} {body:?}")]
    Name {
        header: String,
        member: &'static str,
        body: Option<String>,
    },
    #[error("{0} is required: the tool marks this argument")]
    NoParam(HeaderName),
    #[error("{0} does not match the body's argument")]
    Param(HeaderName),
    #[error("{0} names no argument of this call")]
    StrayParam(HeaderName),
    #[error("{0} is not visible ASCII")]
    NotAscii(HeaderName),
    #[error("{0} has a malformed =?base64?…?= value")]
    BadBase64(HeaderName),
}

/// The member of `params` a method's `Mcp-Name` mirrors.
fn named_member(method: &str) -> Option<&'static str> {
    match method {
        method::TOOLS_CALL | method::PROMPTS_GET => Some("name"),
        method::RESOURCES_READ => Some("uri"),
        _ => None,
    }
}

fn meta_version(params: Option<&Payload>) -> Option<String> {
    let meta = params?.member("_meta").ok()??;
    Some(meta.get(meta::PROTOCOL_VERSION)?.as_str()?.to_owned())
}

impl Routing {
    /// The headers of `message`; `marked` knows the tools' marked
    /// parameters (`Mcp-Param-*`).
    pub(crate) fn of(message: &Message, marked: &ToolParams) -> Self {
        let mut routing = Self::default();
        let Some(name) = message.method() else {
            return routing;
        };
        routing.headers.push((MCP_METHOD, encoded(name)));
        let params = message.params();
        if let (Some(member), Some(params)) = (named_member(name), params) {
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
        routing.version = meta_version(params).map(|v| encoded(&v));
        routing
    }

    /// Whether a request that arrived without a session is of a revision
    /// without sessions (its header or its `_meta` says so).
    pub(crate) fn is_sessionless(headers: &HeaderMap, message: &Message) -> bool {
        let header = headers.get(PROTOCOL_VERSION).and_then(|v| v.to_str().ok());
        let meta = meta_version(message.params());
        [header, meta.as_deref()]
            .iter()
            .flatten()
            .any(|v| SESSIONLESS.contains(v))
    }

    /// Checks the routing headers a client sent with `message` against
    /// what its body says; `marked` knows the tools' marked parameters (a
    /// tool whose listing was not seen yet cannot be checked for them).
    pub(crate) fn check(
        headers: &HeaderMap,
        message: &Message,
        marked: &ToolParams,
    ) -> Result<(), Mismatch> {
        let header = |name: HeaderName| -> Result<Option<String>, Mismatch> {
            let Some(value) = headers.get(&name) else {
                return Ok(None);
            };
            let text = value
                .to_str()
                .map_err(|_| Mismatch::NotAscii(name.clone()))?;
            decoded(text).map(Some).ok_or(Mismatch::BadBase64(name))
        };
        let Some(method) = message.method() else {
            return Ok(());
        };
        let params = message.params();
        match (header(PROTOCOL_VERSION)?, meta_version(params)) {
            (None, _) => return Err(Mismatch::NoVersion),
            (Some(header), Some(meta)) if header != meta => {
                return Err(Mismatch::Version { header, meta })
            }
            _ => {}
        }
        match header(MCP_METHOD)? {
            Some(h) if h == method => {}
            Some(header) => {
                let body = method.to_owned();
                return Err(Mismatch::Method { header, body });
            }
            None => return Err(Mismatch::NoMethod),
        }
        let Some(member) = named_member(method) else {
            return Ok(());
        };
        let body = params.and_then(|p| p.str_member(member).ok().flatten());
        match (header(MCP_NAME)?, &body) {
            (Some(h), Some(b)) if h == **b => {}
            (Some(header), b) => {
                let body = b.as_deref().map(str::to_owned);
                return Err(Mismatch::Name {
                    header,
                    member,
                    body,
                });
            }
            (None, _) => return Err(Mismatch::NoName),
        }
        match (body, method == method::TOOLS_CALL) {
            (Some(tool), true) => check_params(headers, params, &tool, marked),
            _ => Ok(()),
        }
    }
}

/// Checks a call's `Mcp-Param-*` headers against the marks its server's
/// listing put on the tool's parameters: each marked argument present must
/// be mirrored (numbers compared as numbers), and no header may name an
/// argument the call does not carry.
fn check_params(
    headers: &HeaderMap,
    params: Option<&Payload>,
    tool: &str,
    marked: &ToolParams,
) -> Result<(), Mismatch> {
    let arguments = || params?.member("arguments").ok().flatten();
    let expected = marked.headers(tool, arguments);
    for (name, value) in &expected {
        let want = decoded(value.to_str().unwrap_or_default()).unwrap_or_default();
        let got = headers.get(name).and_then(|v| v.to_str().ok()).map(decoded);
        match got {
            Some(Some(got)) if got == want || same_number(&got, &want) => {}
            Some(_) => return Err(Mismatch::Param(name.clone())),
            None => return Err(Mismatch::NoParam(name.clone())),
        }
    }
    let extra = headers
        .keys()
        .filter(|k| k.as_str().starts_with(MCP_PARAM_PREFIX))
        .find(|k| !expected.iter().any(|(name, _)| name == *k));
    match extra {
        Some(name) if marked.knows(tool) => Err(Mismatch::StrayParam(name.clone())),
        _ => Ok(()),
    }
}

fn same_number(a: &str, b: &str) -> bool {
    matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests;
