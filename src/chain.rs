//! From the validated `[[middleware]]` list to the two tower stacks.
//!
//! The same layer values build both stacks, so state a layer keeps (a
//! rename map, a rate limiter's buckets, a timeout's deadlines) is shared:
//!
//! - client → server: the first `[[middleware]]` is outermost, so it sees
//!   the client's message first and the answer last;
//! - server → client: the last one is outermost, so every layer keeps its
//!   place between the two peers: a layer next to the server in the file
//!   is next to the server whichever way a message goes.
//!
//! Each stack ends in a connector, which writes to the peer and matches
//! its answers.

use mcp_chain_middleware::audit::AuditLayer;
use mcp_chain_middleware::filter::FilterLayer;
use mcp_chain_middleware::log::LogLayer;
use mcp_chain_middleware::rate_limit::RateLimitLayer;
use mcp_chain_middleware::rewrite::RewriteLayer;
use mcp_chain_middleware::timeout::TimeoutLayer;
use mcp_chain_middleware::{BoxError, Envelope, Message};
use tower::util::BoxCloneService;
use tower::Layer;

/// A chain (or a part of one) with its type erased.
pub(crate) type ChainService = BoxCloneService<Envelope, Option<Message>, BoxError>;

/// One validated `[[middleware]]` entry.
#[derive(Debug, Clone)]
pub(crate) enum AnyLayer {
    Audit(AuditLayer),
    Filter(FilterLayer),
    Rewrite(RewriteLayer),
    RateLimit(RateLimitLayer),
    Timeout(TimeoutLayer),
    Log(LogLayer),
}

impl AnyLayer {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Audit(_) => "audit",
            Self::Filter(_) => "filter",
            Self::Rewrite(_) => "rewrite",
            Self::RateLimit(_) => "rate_limit",
            Self::Timeout(_) => "timeout",
            Self::Log(_) => "log",
        }
    }

    fn wrap(&self, inner: ChainService) -> ChainService {
        match self {
            Self::Audit(l) => BoxCloneService::new(l.layer(inner)),
            Self::Filter(l) => BoxCloneService::new(l.layer(inner)),
            Self::Rewrite(l) => BoxCloneService::new(l.layer(inner)),
            Self::RateLimit(l) => BoxCloneService::new(l.layer(inner)),
            Self::Timeout(l) => BoxCloneService::new(l.layer(inner)),
            Self::Log(l) => BoxCloneService::new(l.layer(inner)),
        }
    }
}

/// The client → server stack around `upstream`: first layer outermost.
pub(crate) fn to_server(layers: &[AnyLayer], upstream: ChainService) -> ChainService {
    layers
        .iter()
        .rev()
        .fold(upstream, |inner, layer| layer.wrap(inner))
}

/// The server → client stack around `downstream`: last layer outermost.
pub(crate) fn to_client(layers: &[AnyLayer], downstream: ChainService) -> ChainService {
    layers
        .iter()
        .fold(downstream, |inner, layer| layer.wrap(inner))
}
