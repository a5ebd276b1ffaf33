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

pub(crate) use crate::layers::AnyLayer;
use mcp_chain_middleware::{BoxError, Envelope, Message, ResponseFuture};
use std::fmt;
use std::task::{Context, Poll};
use tower::Service;

/// A chain (or a part of one) with its type erased.
///
/// Like tower's `BoxCloneService`, except that it does not box futures:
/// every layer and both connectors already answer with a
/// [`ResponseFuture`], which `BoxCloneService` would put in a box of its
/// own, one allocation per layer per request.
pub(crate) struct ChainService(Box<dyn Erased>);

/// A clonable service of the chain, behind a pointer.
trait Erased: Send {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>>;
    fn call(&mut self, env: Envelope) -> ResponseFuture;
    fn clone_box(&self) -> Box<dyn Erased>;
}

impl<S> Erased for S
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError, Future = ResponseFuture>
        + Clone
        + Send
        + 'static,
{
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Service::poll_ready(self, cx)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        Service::call(self, env)
    }

    fn clone_box(&self) -> Box<dyn Erased> {
        Box::new(self.clone())
    }
}

impl ChainService {
    pub(crate) fn new<S>(service: S) -> Self
    where
        S: Service<Envelope, Response = Option<Message>, Error = BoxError, Future = ResponseFuture>
            + Clone
            + Send
            + 'static,
    {
        Self(Box::new(service))
    }
}

impl Service<Envelope> for ChainService {
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        self.0.call(env)
    }
}

impl Clone for ChainService {
    fn clone(&self) -> Self {
        Self(self.0.clone_box())
    }
}

impl fmt::Debug for ChainService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ChainService")
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
        .fold(downstream, |inner, layer| layer.wrap_toward_client(inner))
}
