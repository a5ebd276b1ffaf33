//! [`Limit`]: measures the answer to each client request against its limit,
//! and refuses it, cuts it, or trims a listing.

use super::cut::cut_text;
use crate::message::{method, ErrorResponse, Response};
use crate::note;
use crate::pattern::Pattern;
use crate::target::Target;
use crate::{
    BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message, RequestId, ResponseFuture,
};
use serde_json::json;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// The layer name in refusals, `data.layer` and logs.
pub(super) const LAYER: &str = "limit";

/// What to do with a result over its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
    Refuse,
    Truncate,
}

/// Which limit applies to which request.
#[derive(Debug)]
pub(super) struct Rules {
    pub(super) default: Option<usize>,
    pub(super) tools: Vec<(Pattern, Option<usize>)>,
    pub(super) methods: Vec<(Pattern, Option<usize>)>,
    pub(super) action: Action,
    pub(super) max_list_items: Option<usize>,
}

/// Builds [`Limit`] services; clones share the rules.
#[derive(Debug, Clone)]
pub struct LimitLayer {
    rules: Arc<Rules>,
}

impl LimitLayer {
    pub(super) fn new(rules: Rules) -> Self {
        Self {
            rules: Arc::new(rules),
        }
    }
}

impl<S> Layer<S> for LimitLayer {
    type Service = Limit<S>;

    fn layer(&self, inner: S) -> Limit<S> {
        Limit {
            inner,
            rules: self.rules.clone(),
        }
    }
}

/// Keeps the answers to the client's requests within their limits.
#[derive(Debug, Clone)]
pub struct Limit<S> {
    inner: S,
    rules: Arc<Rules>,
}

/// What one request's answer is held to.
#[derive(Debug)]
struct Bound {
    method: String,
    bytes: Option<usize>,
    /// The list member of a listing to trim, and to how many items.
    list: Option<(&'static str, usize)>,
}

impl Rules {
    /// What the answer to `method` (about `target`) is held to; `None`
    /// when nothing.
    fn bound(&self, method: &str, tool: Option<&str>) -> Option<Bound> {
        let by_tool = tool.and_then(|name| self.tools.iter().find(|(p, _)| p.is_match(name)));
        let bytes = match by_tool {
            Some((_, bytes)) => *bytes,
            None => match self.methods.iter().find(|(p, _)| p.is_match(method)) {
                Some((_, bytes)) => *bytes,
                None if CONTENT.contains(&method) => self.default,
                // The handshake, listings and the like are not content: a
                // default meant for tool output must not refuse them.
                None => None,
            },
        };
        let list = self
            .max_list_items
            .and_then(|n| list_member(method).map(|key| (key, n)));
        (bytes.is_some() || list.is_some()).then(|| Bound {
            method: method.to_owned(),
            bytes,
            list,
        })
    }

    /// The answer, held to `bound`. What was done to it is noted for the
    /// audit: the items a listing had and kept, the bytes a result had and
    /// the bytes delivered.
    fn apply(&self, bound: &Bound, mut response: Response) -> Message {
        if let Some((key, max)) = bound.list {
            let mut seen = 0;
            let trimmed = response.result.edit_items(key, |_| {
                seen += 1;
                seen <= max
            });
            if let Err(e) = trimmed {
                let message = format!(
                    "mcp-chain limit: the {} result cannot be read ({e})",
                    bound.method
                );
                let error =
                    ErrorObject::refusal(ErrorCode::INTERNAL_ERROR, LAYER, "unreadable", &message);
                return Message::error(Some(response.id), error);
            }
            if seen > max {
                crate::decided!(
                    "limit",
                    "trimmed",
                    original_items = crate::decision::int(seen),
                    delivered_items = crate::decision::int(max)
                );
                let items = json!({"original_items": seen, "delivered_items": max});
                note::add(LAYER, json!({"action": "trimmed", "items": items}));
            }
        }
        let Some(limit) = bound.bytes else {
            return Message::Response(response);
        };
        let size = response.result.json_len();
        if size <= limit {
            return Message::Response(response);
        }
        let why = match self.action {
            Action::Refuse => None,
            Action::Truncate => match cut_text(&bound.method, &mut response.result, size, limit) {
                Ok(()) => {
                    let delivered = response.result.json_len();
                    note_size("truncated", size, delivered, limit);
                    return Message::Response(response);
                }
                Err(why) => Some(why),
            },
        };
        note_size("refused", size, 0, limit);
        too_large(response.id, &bound.method, size, limit, why)
    }
}

impl Rules {
    /// An error answer, held to the same limit as a result: one over it
    /// keeps its code and as much of its message as fits; its `data` (and
    /// any other member) gives way to what the limit did.
    fn apply_error(&self, bound: &Bound, mut answer: ErrorResponse) -> Message {
        let Some(limit) = bound.bytes else {
            return Message::Error(answer);
        };
        let error = &mut *answer.error;
        let members = |v: &serde_json::Value| serde_json::to_vec(v).map_or(0, |b| b.len());
        let size = error.message.len()
            + error.data.as_ref().map_or(0, members)
            + error.extra.values().map(members).sum::<usize>();
        if size <= limit {
            return Message::Error(answer);
        }
        let notice =
            format!("… [mcp-chain: the error was {size} bytes, over the limit of {limit} bytes]");
        let keep = limit.saturating_sub(notice.len());
        let at = (0..=keep.min(error.message.len()))
            .rev()
            .find(|&i| error.message.is_char_boundary(i))
            .unwrap_or(0);
        error.message.truncate(at);
        error.message += &notice;
        error.data =
            Some(json!({"layer": LAYER, "reason": "too_large", "size": size, "limit": limit}));
        error.extra.clear();
        note_size("truncated", size, error.message.len(), limit);
        Message::Error(answer)
    }
}

/// The audit's note of a result held to its size: what the server sent,
/// what the client got (0: refused), the limit.
fn note_size(action: &'static str, original: usize, delivered: usize, limit: usize) {
    use crate::decision::int;
    let (original_bytes, limit_bytes) = (int(original), int(limit));
    match action {
        "refused" => crate::decided!("limit", "refused", original_bytes, limit = limit_bytes),
        _ => crate::decided!(
            "limit",
            "truncated",
            original_bytes,
            delivered_bytes = int(delivered),
            limit = limit_bytes
        ),
    }
    note::add(
        LAYER,
        json!({"action": action, "original_bytes": original, "delivered_bytes": delivered, "limit": limit}),
    );
}

/// The methods whose results carry content for the model, which
/// `max_result_bytes` is about: a tool's output, a resource, a prompt, a
/// task's result.
const CONTENT: [&str; 5] = [
    method::TOOLS_CALL,
    method::RESOURCES_READ,
    method::PROMPTS_GET,
    method::TASKS_GET,
    "tasks/result",
];

/// The list member of a listing method.
fn list_member(method: &str) -> Option<&'static str> {
    Some(match method {
        method::TOOLS_LIST => "tools",
        method::PROMPTS_LIST => "prompts",
        method::RESOURCES_LIST => "resources",
        method::RESOURCES_TEMPLATES_LIST => "resourceTemplates",
        _ => return None,
    })
}

/// The refusal of a result over its limit: 403, with the size and the
/// limit in words and in `data`.
fn too_large(id: RequestId, method: &str, size: usize, limit: usize, why: Option<&str>) -> Message {
    let mut message = format!(
        "mcp-chain limit: the {method} result is {size} bytes, over the limit of {limit} bytes"
    );
    if let Some(why) = why {
        message += &format!(" ({why})");
    }
    let error = ErrorObject::new(ErrorCode::REFUSED, message)
        .with_data(json!({"layer": LAYER, "reason": "too_large", "size": size, "limit": limit}));
    Message::error(Some(id), error)
}

impl<S> Service<Envelope> for Limit<S>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        let bound = match (&env.direction, &env.message) {
            (Direction::ToServer, Message::Request(req)) => {
                // A tool whose name cannot be read is held to the method's
                // limit (or the default), never to none.
                let target = Target::of(&req.method, req.params.as_ref());
                let tool = match &target {
                    Ok(Some(Target::Tool(name))) => Some(name.as_ref()),
                    _ => None,
                };
                self.rules.bound(&req.method, tool)
            }
            _ => None,
        };
        let answer = self.inner.call(env);
        let Some(bound) = bound else {
            return crate::boxed(answer);
        };
        let rules = self.rules.clone();
        Box::pin(async move {
            Ok(match answer.await? {
                Some(Message::Response(response)) => Some(rules.apply(&bound, response)),
                Some(Message::Error(error)) => Some(rules.apply_error(&bound, error)),
                other => other,
            })
        })
    }
}
