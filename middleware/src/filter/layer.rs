//! [`FilterLayer`]: the validated policy, shared by every service it builds.

use super::policy::Policy;
use super::service::Filter;
use std::sync::Arc;
use tower::Layer;

/// Builds [`Filter`] services. Made by [`FilterConfig::validate`]; cheap to
/// clone (the compiled policy is shared), so one value serves both chains.
///
/// [`FilterConfig::validate`]: super::FilterConfig::validate
#[derive(Debug, Clone)]
pub struct FilterLayer {
    policy: Arc<Policy>,
}

impl FilterLayer {
    pub(super) fn new(policy: Policy) -> Self {
        Self {
            policy: Arc::new(policy),
        }
    }
}

impl<S> Layer<S> for FilterLayer {
    type Service = Filter<S>;

    fn layer(&self, inner: S) -> Filter<S> {
        Filter::new(inner, self.policy.clone())
    }
}
