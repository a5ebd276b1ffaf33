//! `log`: a pass-through layer that traces every message it sees, in both
//! directions, to stderr (through `tracing`), and changes nothing.
//!
//! It is the simplest layer there is, and a useful one: put it first to see
//! what the client sent and got, last to see what the server sent and got.
//!
//! ```toml
//! [[middleware]]
//! type = "log"
//! level = "info"     # trace, debug, info, warn or error
//! payloads = false   # also log params/results (may contain secrets)
//! ```

use crate::config_error::ConfigError;
use crate::{BoxError, Envelope, Message, ResponseFuture};
use serde::Deserialize;
use std::task::{Context, Poll};
use tower::{Layer, Service};
use tracing::Level;

/// `[[middleware]] type = "log"` as written in the TOML.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    #[serde(default)]
    pub level: Option<String>,
    #[serde(default)]
    pub payloads: bool,
}

impl LogConfig {
    pub fn validate(&self) -> Result<LogLayer, ConfigError> {
        let level = match self.level.as_deref().unwrap_or("info") {
            "trace" => Level::TRACE,
            "debug" => Level::DEBUG,
            "info" => Level::INFO,
            "warn" => Level::WARN,
            "error" => Level::ERROR,
            other => {
                return Err(ConfigError::key(
                    "level",
                    format!("unknown level {other:?}; expected trace, debug, info, warn or error"),
                ))
            }
        };
        Ok(LogLayer {
            level,
            payloads: self.payloads,
        })
    }
}

/// Builds [`Log`] services.
#[derive(Debug, Clone)]
pub struct LogLayer {
    level: Level,
    payloads: bool,
}

impl<S> Layer<S> for LogLayer {
    type Service = Log<S>;

    fn layer(&self, inner: S) -> Log<S> {
        Log {
            inner,
            level: self.level,
            payloads: self.payloads,
        }
    }
}

/// Traces each message and its answer, then passes both on unchanged.
#[derive(Debug, Clone)]
pub struct Log<S> {
    inner: S,
    level: Level,
    payloads: bool,
}

// === impl Log ===

impl<S> Log<S> {
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// The tracing target of every line this layer writes. mcp-chain's default
/// log filter lets it through at any level: a configured `log` layer is
/// asked-for output, not noise.
pub const TARGET: &str = "mcp_chain::messages";

/// `tracing`'s macros take the level as a constant; this dispatches.
macro_rules! event_at {
    ($level:expr, $($rest:tt)+) => {
        match $level {
            Level::TRACE => tracing::trace!(target: TARGET, $($rest)+),
            Level::DEBUG => tracing::debug!(target: TARGET, $($rest)+),
            Level::INFO => tracing::info!(target: TARGET, $($rest)+),
            Level::WARN => tracing::warn!(target: TARGET, $($rest)+),
            Level::ERROR => tracing::error!(target: TARGET, $($rest)+),
        }
    };
}

fn describe(msg: &Message, payloads: bool) -> String {
    if payloads {
        msg.to_value().to_string()
    } else {
        String::new()
    }
}

impl<S> Service<Envelope> for Log<S>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Option<Message>;
    type Error = BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, env: Envelope) -> ResponseFuture {
        let (level, payloads) = (self.level, self.payloads);
        let direction = env.direction;
        let msg = &env.message;
        event_at!(level, %direction, kind = msg.kind(), method = msg.method().unwrap_or(""),
            id = %msg.id().map(ToString::to_string).unwrap_or_default(),
            payload = %describe(msg, payloads), "message");
        let fut = self.inner.call(env);
        Box::pin(async move {
            let answer = fut.await?;
            if let Some(msg) = &answer {
                event_at!(level, %direction, kind = msg.kind(),
                    id = %msg.id().map(ToString::to_string).unwrap_or_default(),
                    payload = %describe(msg, payloads), "answer");
            }
            Ok(answer)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use serde_json::json;
    use tower::ServiceExt;

    #[tokio::test]
    async fn passes_messages_and_answers_unchanged() {
        let layer = LogConfig::default().validate().expect("default is valid");
        let req = Message::request(1, "tools/call", Some(json!({"name":"x"})));
        let seen = req.clone();
        let svc = layer.layer(tower::service_fn(move |env: Envelope| {
            let seen = seen.clone();
            async move {
                assert_eq!(env.message, seen);
                Ok::<_, BoxError>(Some(Message::response(1.into(), json!({"ok":true}))))
            }
        }));
        let answer = svc
            .oneshot(Envelope::new(Direction::ToServer, req))
            .await
            .expect("inner answers");
        assert_eq!(
            answer,
            Some(Message::response(1.into(), json!({"ok":true})))
        );
    }

    #[test]
    fn unknown_level_is_an_error() {
        let cfg = LogConfig {
            level: Some("loud".into()),
            payloads: false,
        };
        assert!(cfg.validate().unwrap_err().message.contains("loud"));
    }
}
