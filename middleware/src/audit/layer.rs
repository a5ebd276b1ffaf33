//! [`AuditLayer`]: the open log and settings, shared by every service the
//! layer builds (both directions, every clone), so all lines go through one
//! lock and one file handle.

use super::config::OnWriteError;
use super::service::Audit;
use super::sink::Sink;
use std::sync::Arc;
use tower::Layer;

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) sink: Sink,
    pub(super) payloads: bool,
    pub(super) on_write_error: OnWriteError,
}

/// Builds [`Audit`] services.
#[derive(Debug, Clone)]
pub struct AuditLayer {
    shared: Arc<Shared>,
}

impl AuditLayer {
    pub(super) fn new(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
        }
    }
}

impl<S> Layer<S> for AuditLayer {
    type Service = Audit<S>;

    fn layer(&self, inner: S) -> Audit<S> {
        Audit::new(inner, self.shared.clone())
    }
}
