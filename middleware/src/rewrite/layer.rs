//! [`RewriteLayer`]: the validated names and rules, shared by every service.

use super::names::Names;
use super::redact::Redactor;
use super::service::Rewrite;
use std::sync::Arc;
use tower::Layer;

/// Builds [`Rewrite`] services. Made by [`RewriteConfig::validate`]; cheap
/// to clone, so one value serves both chains.
///
/// [`RewriteConfig::validate`]: super::RewriteConfig::validate
#[derive(Debug, Clone)]
pub struct RewriteLayer {
    rules: Arc<Rules>,
}

/// Everything a [`Rewrite`] service consults, compiled once.
#[derive(Debug)]
pub(super) struct Rules {
    pub(super) tools: Names,
    pub(super) prompts: Names,
    pub(super) redactor: Redactor,
    pub(super) redact_arguments: bool,
}

impl RewriteLayer {
    pub(super) fn new(
        tools: Names,
        prompts: Names,
        redactor: Redactor,
        redact_arguments: bool,
    ) -> Self {
        Self {
            rules: Arc::new(Rules {
                tools,
                prompts,
                redactor,
                redact_arguments,
            }),
        }
    }
}

impl<S> Layer<S> for RewriteLayer {
    type Service = Rewrite<S>;

    fn layer(&self, inner: S) -> Rewrite<S> {
        Rewrite::new(inner, self.rules.clone())
    }
}
