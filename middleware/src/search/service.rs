//! [`Search`]: answers `tools/list` with the short list, `search_tools`
//! from the index, and turns `call_tool` into the plain call it names.

use super::index::{self, Index};
use super::tools::{self, CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOLS};
use crate::message::method;
use crate::pattern::Pattern;
use crate::{BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message, ResponseFuture};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// The layer name in refusals and request ids.
const LAYER: &str = "search";

/// Builds [`Search`] services; a session's clones share its index.
#[derive(Debug, Clone)]
pub struct SearchLayer {
    always: Arc<Vec<Pattern>>,
    max_results: usize,
    describe: bool,
    session: Arc<SessionIndex>,
}

/// What one session knows of the server's tools.
#[derive(Debug, Default)]
struct SessionIndex {
    index: Mutex<Option<Arc<Index>>>,
    /// The server said its tools changed since the index was built.
    stale: AtomicBool,
    asked: AtomicU64,
}

impl SearchLayer {
    pub(super) fn new(always: Vec<Pattern>, max_results: usize, describe: bool) -> Self {
        Self {
            always: Arc::new(always),
            max_results,
            describe,
            session: Arc::default(),
        }
    }

    /// The layer for a new session: an index of its own (the layers after
    /// this one may show each caller other tools).
    pub fn for_session(&self) -> Self {
        Self {
            session: Arc::default(),
            ..self.clone()
        }
    }

    fn listed_always(&self, tool: &Map<String, Value>) -> bool {
        let name = index::name(tool);
        self.always.iter().any(|p| p.is_match(name))
    }

    /// What the client's `tools/list` holds: the `always` tools as the
    /// server lists them, then the layer's own.
    fn short_list(&self, index: &Index) -> Vec<Value> {
        let mut list: Vec<Value> = index
            .tools()
            .iter()
            .filter(|t| self.listed_always(t))
            .map(|t| Value::Object(t.clone()))
            .collect();
        list.extend(tools::own(self.describe, self.max_results));
        list
    }
}

impl<S> Layer<S> for SearchLayer {
    type Service = Search<S>;

    fn layer(&self, inner: S) -> Search<S> {
        Search {
            inner,
            layer: self.clone(),
        }
    }
}

/// Shows the client a short list and finds the rest on request.
#[derive(Debug, Clone)]
pub struct Search<S> {
    inner: S,
    layer: SearchLayer,
}

impl<S> Service<Envelope> for Search<S>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut env: Envelope) -> ResponseFuture {
        let layer = self.layer.clone();
        match (env.direction, &mut env.message) {
            (Direction::ToClient, Message::Notification(n))
                if n.method == method::NOTIFICATION_TOOLS_LIST_CHANGED =>
            {
                layer.session.stale.store(true, Ordering::Relaxed);
                // The short list changes only when `always` names tools.
                if layer.always.is_empty() {
                    return Box::pin(std::future::ready(Ok(None)));
                }
                crate::boxed(self.inner.call(env))
            }
            (Direction::ToServer, Message::Request(req)) if req.method == method::TOOLS_LIST => {
                let id = req.id.clone();
                if has_cursor(req.params.as_ref()) {
                    let error = ErrorObject::new(
                        ErrorCode::INVALID_PARAMS,
                        "mcp-chain search: the tool list has one page; this cursor is not one it gave",
                    );
                    return Box::pin(std::future::ready(Ok(Some(Message::error(
                        Some(id),
                        error,
                    )))));
                }
                let inner = self.inner.clone();
                Box::pin(async move {
                    let index = layer.index(inner).await?;
                    let list = layer.short_list(&index);
                    Ok(Some(Message::response(id, json!({"tools": list}))))
                })
            }
            (Direction::ToServer, Message::Request(req))
                if req.method == method::SERVER_DISCOVER =>
            {
                // 2026-07-28: the tools come with the server's description;
                // the short list there too, the index from what came.
                let answer = self.inner.call(env);
                Box::pin(async move {
                    let mut out = answer.await?;
                    if let Some(Message::Response(response)) = &mut out {
                        if let Ok(Some(Value::Array(items))) = response.result.member("tools") {
                            let index = Arc::new(Index::new(objects(items)));
                            *crate::lock(&layer.session.index) = Some(index.clone());
                            let list = Value::Array(layer.short_list(&index));
                            response.result.set_member("tools", list)?;
                        }
                    }
                    Ok(out)
                })
            }
            (Direction::ToServer, Message::Request(req)) if req.method == method::TOOLS_CALL => {
                let params = req.params.as_ref().and_then(|p| p.to_value().ok());
                let name = params
                    .as_ref()
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str);
                let own = match name {
                    Some(SEARCH_TOOLS) => Own::Search,
                    Some(CALL_TOOL) => Own::Call,
                    Some(DESCRIBE_TOOL) if !layer.describe => Own::Describe,
                    _ => return crate::boxed(self.inner.call(env)),
                };
                let params = params.unwrap_or_default();
                let arguments = params
                    .get("arguments")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                let id = req.id.clone();
                if own == Own::Call {
                    return match called(&params, &arguments) {
                        Ok(direct) => {
                            req.params = Some(direct.into());
                            crate::boxed(self.inner.call(env))
                        }
                        Err(why) => answered(id, tools::tool_error(&why)),
                    };
                }
                let inner = self.inner.clone();
                Box::pin(async move {
                    let index = layer.index(inner).await?;
                    let result = match own {
                        Own::Search => layer.searched(&index, &arguments),
                        _ => described(&index, &arguments),
                    };
                    Ok(Some(Message::response(id, result)))
                })
            }
            _ => crate::boxed(self.inner.call(env)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Own {
    Search,
    Call,
    Describe,
}

impl SearchLayer {
    /// The session's index, listed anew (through the layers after this
    /// one, every page) when there is none yet or the server's tools
    /// changed since.
    async fn index<S>(&self, inner: S) -> Result<Arc<Index>, BoxError>
    where
        S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone,
    {
        let session = &self.session;
        // Taken before listing: a change said while listing stays said.
        let stale = session.stale.swap(false, Ordering::Relaxed);
        if let (false, Some(index)) = (stale, crate::lock(&session.index).clone()) {
            return Ok(index);
        }
        let mut listed: Vec<Map<String, Value>> = Vec::new();
        let mut whole = false;
        crate::listing::ask_all(
            inner,
            LAYER,
            method::TOOLS_LIST,
            &session.asked,
            |page| match page.member("tools") {
                Ok(Some(Value::Array(items))) => {
                    listed.extend(objects(items));
                    // Read to its last page, unless a later one fails.
                    whole = !matches!(page.member("nextCursor"), Ok(Some(c)) if !c.is_null());
                    true
                }
                _ => {
                    whole = false;
                    false
                }
            },
        )
        .await?;
        let index = Arc::new(Index::new(listed));
        // A listing not read whole (no answer, a page unreadable) is used
        // for this answer only: the next one lists again.
        match whole {
            true => *crate::lock(&session.index) = Some(index.clone()),
            false => session.stale.store(true, Ordering::Relaxed),
        }
        Ok(index)
    }

    fn searched(&self, index: &Index, arguments: &Value) -> Value {
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return tools::tool_error(
                "search_tools needs a query: what the tool should do, in words",
            );
        };
        let server = arguments
            .get("server")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        tools::found(index, query, server, self.max_results, self.describe)
    }
}

/// `describe_tool`'s answer: the tool's definition as listed.
fn described(index: &Index, arguments: &Value) -> Value {
    let name = arguments
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match index.get(name) {
        Some(tool) => json!({
            "content": [{"type": "text", "text": serde_json::to_string_pretty(tool).expect("JSON values serialize")}],
            "structuredContent": tool
        }),
        None => tools::tool_error(&format!(
            "no tool is named {}; search_tools gives the names",
            crate::shown::shown(name, 100)
        )),
    }
}

/// The plain `tools/call` params a `call_tool` call names: its `name`
/// and `arguments`, with the call's own `_meta` (a progress token).
fn called(params: &Value, arguments: &Value) -> Result<Value, String> {
    let Some(name) = arguments.get("name").and_then(Value::as_str) else {
        return Err("call_tool needs the name of a tool search_tools found".into());
    };
    if matches!(name, SEARCH_TOOLS | CALL_TOOL | DESCRIBE_TOOL) {
        return Err(format!(
            "call_tool calls the server's tools; call {name} itself"
        ));
    }
    let args = match arguments.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(Value::Object(a)) => Value::Object(a.clone()),
        Some(_) => {
            return Err("call_tool's arguments are an object: the tool's arguments by name".into())
        }
    };
    let mut direct = json!({"name": name, "arguments": args});
    if let Some(meta) = params.get("_meta") {
        direct["_meta"] = meta.clone();
    }
    Ok(direct)
}

/// The items of a listing that are objects (a tool that is not one has
/// no name to find it by).
fn objects(items: Vec<Value>) -> Vec<Map<String, Value>> {
    items
        .into_iter()
        .filter_map(|t| match t {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .collect()
}

fn has_cursor(params: Option<&crate::payload::Payload>) -> bool {
    params
        .and_then(|p| p.member("cursor").ok().flatten())
        .is_some_and(|c| !c.is_null())
}

fn answered(id: crate::RequestId, result: Value) -> ResponseFuture {
    Box::pin(std::future::ready(Ok(Some(Message::response(id, result)))))
}
