//! The spans and durations of a session's operations, made by a service at
//! each end of each chain (OpenTelemetry semantic conventions for MCP,
//! development status, as of semantic-conventions v1.39.0):
//!
//! ```text
//! client ─▶ [SERVER span ─▶ layers ─▶ CLIENT span] ─▶ server
//! client ◀─ [CLIENT span ◀─ layers ◀─ SERVER span] ◀─ server   (sampling, roots, elicitation)
//! ```
//!
//! A SERVER span covers a request (or notification) from a peer until its
//! answer is ready; the layers work inside it, so their decisions are its
//! events. A CLIENT span covers what mcp-chain sends on, until the other
//! peer answers; its context goes out in `params._meta` when propagation
//! is on. Every span is a `tracing` span at [`SPAN_TARGET`], which only
//! the OpenTelemetry layer (and a log level that asks for it) sees.

use super::context;
use super::operation::{Named, Operation, Watch};
use super::{active, SPAN_TARGET};
use crate::chain::ChainService;
use mcp_chain_middleware::{BoxError, Envelope, Message, ResponseFuture};
use opentelemetry::KeyValue;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;
use tower::Service;
use tracing::field::Empty;
use tracing::{Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// What the spans of one session share: how its peers are reached, its id,
/// the protocol revision it settled on.
pub(super) struct Meta {
    /// `network.transport` of the client (`pipe`: stdio; `tcp`: the front).
    client: &'static str,
    /// `network.transport` of the server (`pipe`: a child; `tcp`: a URL).
    server: &'static str,
    /// The front session's id, its first 8 hex digits (never all of it:
    /// the whole id is what a client needs to use the session).
    id: Option<String>,
    pub(super) version: OnceLock<String>,
}

/// One session's telemetry; its duration is recorded when it is dropped.
pub(crate) struct SessionSpan {
    meta: Arc<Meta>,
    started: Instant,
}

/// Which end of a chain.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A peer's request or notification, received.
    Server,
    /// What mcp-chain sends on to the other peer.
    Client,
}

/// Which peer a chain end faces.
#[derive(Clone, Copy)]
pub(crate) enum Facing {
    Client,
    Server,
}

impl SessionSpan {
    /// A session's telemetry, or `None` when telemetry is off (or on with
    /// neither spans nor metrics: nothing to make, so nothing is read).
    pub(crate) fn open(
        client: &'static str,
        server: &'static str,
        id: Option<&str>,
    ) -> Option<Self> {
        let active = active().filter(|a| a.spans || a.instruments.is_some())?;
        if let Some(instruments) = &active.instruments {
            if client == "tcp" {
                instruments.front_sessions.add(1, &[]);
            }
        }
        Some(Self {
            meta: Arc::new(Meta {
                client,
                server,
                id: id.map(str::to_owned),
                version: OnceLock::new(),
            }),
            started: Instant::now(),
        })
    }

    /// `chain` (what a peer's messages go down) inside SERVER spans.
    pub(crate) fn received(&self, from: Facing, chain: ChainService) -> ChainService {
        self.traced(Kind::Server, from, chain)
    }

    /// `connector` (what sends to a peer) inside CLIENT spans.
    pub(crate) fn sent(&self, to: Facing, connector: ChainService) -> ChainService {
        self.traced(Kind::Client, to, connector)
    }

    fn traced(&self, kind: Kind, facing: Facing, inner: ChainService) -> ChainService {
        let transport = match facing {
            Facing::Client => self.meta.client,
            Facing::Server => self.meta.server,
        };
        ChainService::new(Traced {
            inner,
            kind,
            transport,
            meta: self.meta.clone(),
        })
    }
}

impl Drop for SessionSpan {
    fn drop(&mut self) {
        let Some(instruments) = active().and_then(|a| a.instruments.as_ref()) else {
            return;
        };
        let mut labels = vec![KeyValue::new("network.transport", self.meta.client)];
        if let Some(version) = self.meta.version.get() {
            labels.push(KeyValue::new("mcp.protocol.version", version.clone()));
        }
        let took = self.started.elapsed().as_secs_f64();
        instruments.session_duration.record(took, &labels);
        if self.meta.client == "tcp" {
            instruments.front_sessions.add(-1, &[]);
        }
    }
}

/// The service at one end of a chain.
#[derive(Clone)]
struct Traced {
    inner: ChainService,
    kind: Kind,
    transport: &'static str,
    meta: Arc<Meta>,
}

impl Service<Envelope> for Traced {
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut env: Envelope) -> ResponseFuture {
        let (Some(active), Some(method)) = (active(), env.message.method()) else {
            return self.inner.call(env);
        };
        let operation = Operation::of(&env.message, method, &self.meta);
        let span = match active.spans {
            true => self.span(&operation),
            false => Span::none(),
        };
        if active.spans {
            match self.kind {
                Kind::Server => {
                    if let Some(parent) = context::extract(&env.message) {
                        let _ = span.set_parent(parent);
                    }
                }
                Kind::Client if active.propagate => {
                    context::inject(&span.context(), &mut env.message)
                }
                Kind::Client => {}
            }
        }
        let watch = Watch::new(
            self.kind,
            operation,
            self.transport,
            self.meta.clone(),
            active,
        );
        let answer = span.in_scope(|| self.inner.call(env));
        Box::pin(
            async move {
                let answer = answer.await;
                watch.done(&answer);
                answer
            }
            .instrument(span),
        )
    }
}

impl Traced {
    fn span(&self, op: &Operation) -> Span {
        let kind = match self.kind {
            Kind::Server => "server",
            Kind::Client => "client",
        };
        let name = match &op.name {
            Some(name) => format!("{} {name}", op.method),
            None => op.method.clone(),
        };
        let (tool, prompt, uri) = match &op.target {
            Some(Named::Tool(name)) => (Some(name.as_str()), None, None),
            Some(Named::Prompt(name)) => (None, Some(name.as_str()), None),
            Some(Named::Resource(uri)) => (None, None, Some(uri.as_str())),
            None => (None, None, None),
        };
        // In a gateway, the server a tool's or prompt's prefix names (or a
        // URI's, with `resources = "prefix"`).
        let server =
            mcp_chain_middleware::servers::installed().and_then(|names| match tool.or(prompt) {
                Some(name) => names.server_of(name),
                None => names.server_of_uri(uri?),
            });
        let version = op
            .version
            .as_deref()
            .or_else(|| self.meta.version.get().map(String::as_str));
        // Every field known now is given now (an absent one records
        // nothing): a field recorded later costs a lookup of the span.
        tracing::info_span!(
            target: SPAN_TARGET,
            "mcp",
            otel.name = name,
            otel.kind = kind,
            otel.status_code = Empty,
            "mcp.method.name" = op.method,
            "mcp.protocol.version" = version,
            "mcp.session.id" = self.meta.id.as_deref(),
            "mcp.resource.uri" = uri,
            "jsonrpc.request.id" = op.id.as_deref(),
            "jsonrpc.protocol.version" = "2.0",
            "gen_ai.tool.name" = tool,
            "gen_ai.prompt.name" = prompt,
            "mcp_chain.server.name" = server,
            "gen_ai.operation.name" = tool.map(|_| "execute_tool"),
            "network.transport" = self.transport,
            "error.type" = Empty,
            "rpc.response.status_code" = Empty,
        )
    }
}
