//! [`Validate`]: learns the tools' schemas from the listings it relays, and
//! checks each call against them before forwarding it.

use super::schemas::{Invalid, Schemas, Tool};
use crate::message::method;
use crate::payload::Payload;
use crate::target::Target;
use crate::{
    BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message, RequestId, ResponseFuture,
};
use serde_json::{json, Value};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service, ServiceExt};

/// The layer name in refusals, `data.layer` and logs.
const LAYER: &str = "validate";

#[derive(Debug)]
struct Shared {
    output: bool,
    /// A check's budget of steps (`max_check_steps`).
    steps: u64,
    schemas: Schemas,
    /// Numbers the listings the layer asks for itself.
    asked: AtomicU64,
}

/// Builds [`Validate`] services; clones share the schemas learned.
#[derive(Debug, Clone)]
pub struct ValidateLayer {
    shared: Arc<Shared>,
}

impl ValidateLayer {
    pub(super) fn new(output: bool, steps: u64) -> Self {
        Self {
            shared: Arc::new(Shared {
                output,
                steps,
                schemas: Schemas::default(),
                asked: AtomicU64::new(0),
            }),
        }
    }

    /// The layer for one client session of the HTTP front: the schemas it
    /// checks are the ones that session's server listed.
    pub fn for_session(&self) -> Self {
        Self::new(self.shared.output, self.shared.steps)
    }
}

impl<S> Layer<S> for ValidateLayer {
    type Service = Validate<S>;

    fn layer(&self, inner: S) -> Validate<S> {
        Validate {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// Checks `tools/call` arguments against the tool's `inputSchema`.
#[derive(Debug, Clone)]
pub struct Validate<S> {
    inner: S,
    shared: Arc<Shared>,
}

/// A refusal of this layer's.
fn refusal(id: RequestId, code: ErrorCode, reason: &str, invalid: Invalid) -> Message {
    let schema_pointer = invalid.schema_pointer.as_deref().unwrap_or("");
    crate::decided!("validate", "refused", reason, schema_pointer);
    let error = ErrorObject::new(code, format!("mcp-chain validate: {}", invalid.message))
        .with_data(json!({"layer": LAYER, "reason": reason, "errors": invalid.errors}));
    Message::error(Some(id), error)
}

fn unreadable(id: RequestId, why: String) -> Message {
    let invalid = Invalid::unusable(format!(
        "the call cannot be read ({why}); it is refused rather than passed unchecked"
    ));
    refusal(id, ErrorCode::INVALID_PARAMS, "unreadable", invalid)
}

/// What a call is checked against, and with.
struct Call {
    id: RequestId,
    name: String,
    arguments: Value,
}

impl Call {
    /// The tool and arguments of a `tools/call`; `Err` is the refusal.
    fn of(id: &RequestId, method: &str, params: Option<&Payload>) -> Result<Self, Box<Message>> {
        let name = match Target::of(method, params) {
            Ok(Some(Target::Tool(name))) => name.into_owned(),
            Ok(_) => return Err(Box::new(unreadable(id.clone(), "it names no tool".into()))),
            Err(e) => return Err(Box::new(unreadable(id.clone(), e.to_string()))),
        };
        let arguments = match params.map(|p| p.member("arguments")) {
            Some(Ok(Some(arguments))) => arguments,
            // No arguments is an empty object, as servers read it.
            None | Some(Ok(None)) => json!({}),
            Some(Err(e)) => return Err(Box::new(unreadable(id.clone(), e.to_string()))),
        };
        Ok(Self {
            id: id.clone(),
            name,
            arguments,
        })
    }

    /// Checks the arguments; `Err` is the refusal.
    fn check(&self, tool: &Tool, steps: u64) -> Result<(), Box<Message>> {
        tool.check_input(&self.name, &self.arguments, steps)
            .map_err(|invalid| {
                let reason = match invalid.over_budget {
                    true => "over_budget",
                    false => "invalid_arguments",
                };
                Box::new(refusal(
                    self.id.clone(),
                    ErrorCode::INVALID_PARAMS,
                    reason,
                    invalid,
                ))
            })
    }
}

impl<S> Service<Envelope> for Validate<S>
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

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        let Message::Request(req) = &env.message else {
            return crate::boxed(self.inner.call(env));
        };
        if env.direction != Direction::ToServer {
            return crate::boxed(self.inner.call(env));
        }
        let shared = self.shared.clone();
        match req.method.as_str() {
            method::TOOLS_LIST => {
                let answer = self.inner.call(env);
                Box::pin(async move {
                    let out = answer.await?;
                    if let Some(Message::Response(listing)) = &out {
                        shared.schemas.learn(&listing.result);
                    }
                    Ok(out)
                })
            }
            method::TOOLS_CALL => {
                let call = match Call::of(&req.id, &req.method, req.params.as_ref()) {
                    Ok(call) => call,
                    Err(refusal) => return Box::pin(std::future::ready(Ok(Some(*refusal)))),
                };
                if let Some(tool) = shared.schemas.get(&call.name) {
                    if let Err(refusal) = call.check(&tool, shared.steps) {
                        return Box::pin(std::future::ready(Ok(Some(*refusal))));
                    }
                    let answer = self.inner.call(env);
                    return Box::pin(async move {
                        Ok(checked_output(&shared, &call, &tool, answer.await?))
                    });
                }
                // No listing has named the tool yet: ask for one, then judge.
                let inner = self.inner.clone();
                Box::pin(async move {
                    ask_listing(inner.clone(), &shared).await?;
                    let Some(tool) = shared.schemas.get(&call.name) else {
                        let invalid = Invalid::unusable(format!("{} is not a tool the server lists; the call is refused rather than passed unchecked", call.name));
                        return Ok(Some(refusal(
                            call.id,
                            ErrorCode::INVALID_PARAMS,
                            "unknown_tool",
                            invalid,
                        )));
                    };
                    if let Err(refusal) = call.check(&tool, shared.steps) {
                        return Ok(Some(*refusal));
                    }
                    let out = inner.oneshot(env).await?;
                    Ok(checked_output(&shared, &call, &tool, out))
                })
            }
            _ => crate::boxed(self.inner.call(env)),
        }
    }
}

/// The answer to a call, its `structuredContent` checked when asked to.
fn checked_output(
    shared: &Shared,
    call: &Call,
    tool: &Tool,
    out: Option<Message>,
) -> Option<Message> {
    if !shared.output {
        return out;
    }
    let Some(Message::Response(response)) = &out else {
        return out;
    };
    if let Ok(Some(Value::Bool(true))) = response.result.member("isError") {
        return out;
    }
    let structured = match response.result.member("structuredContent") {
        Ok(Some(structured)) => structured,
        Ok(None) => return out,
        Err(e) => {
            let invalid =
                Invalid::unusable(format!("the result of {} cannot be read ({e})", call.name));
            return Some(refusal(
                call.id.clone(),
                ErrorCode::INTERNAL_ERROR,
                "unreadable",
                invalid,
            ));
        }
    };
    match tool.check_output(&call.name, &structured, shared.steps) {
        Ok(()) => out,
        Err(invalid) => {
            let reason = match invalid.over_budget {
                true => "over_budget",
                false => "invalid_output",
            };
            Some(refusal(
                call.id.clone(),
                ErrorCode::INTERNAL_ERROR,
                reason,
                invalid,
            ))
        }
    }
}

/// Asks the server (through the layers inside this one) for its tools,
/// every page, and learns their schemas.
async fn ask_listing<S>(inner: S, shared: &Shared) -> Result<(), BoxError>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone,
{
    crate::listing::ask_all(inner, LAYER, method::TOOLS_LIST, &shared.asked, |page| {
        shared.schemas.learn(page)
    })
    .await
}
