//! The connection to `[state]`'s Redis and how every ask of it is made:
//! bounded by `[state] timeout` (past it, or with no connection, the store
//! is unavailable for that ask and the layers refuse or decide alone).

use super::lock;
use mcp_chain_middleware::shared::{StoreFuture, Unavailable};
use redis::aio::ConnectionManager;
use std::sync::Mutex;
use std::time::Duration;

/// The connection, and what every ask of it needs.
pub(super) struct Link {
    pub(super) connection: Mutex<Option<ConnectionManager>>,
    pub(super) prefix: String,
    pub(super) timeout: Duration,
}

impl Link {
    /// Runs `script` on `key` (prefixed) with `args`, within the timeout.
    pub(super) fn run(
        &self,
        script: &'static redis::Script,
        key: &str,
        args: Vec<String>,
    ) -> StoreFuture<Result<Vec<String>, Unavailable>> {
        self.run_on(script, &format!("{}{key}", self.prefix), args)
    }

    /// Sends `command`, within the timeout.
    pub(super) async fn ask<T: redis::FromRedisValue>(
        &self,
        command: &redis::Cmd,
    ) -> Result<T, Unavailable> {
        let connection = self.connection()?;
        bounded(self.timeout, async move {
            let mut connection = connection;
            command.query_async(&mut connection).await
        })
        .await
    }

    /// Sends `pipe`'s commands in one round trip, within the timeout.
    pub(super) async fn ask_all<T: redis::FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<T, Unavailable> {
        let connection = self.connection()?;
        bounded(self.timeout, async move {
            let mut connection = connection;
            pipe.query_async(&mut connection).await
        })
        .await
    }

    fn connection(&self) -> Result<ConnectionManager, Unavailable> {
        lock(&self.connection)
            .clone()
            .ok_or_else(|| Unavailable("not connected".into()))
    }

    /// Runs `script` on `key` (already prefixed) with `args`, within the
    /// timeout.
    pub(super) fn run_on<T: redis::FromRedisValue + Send + 'static>(
        &self,
        script: &'static redis::Script,
        key: &str,
        args: Vec<String>,
    ) -> StoreFuture<Result<T, Unavailable>> {
        let connection = lock(&self.connection).clone();
        let mut invocation = script.prepare_invoke();
        invocation.key(key);
        for arg in args {
            invocation.arg(arg);
        }
        let timeout = self.timeout;
        Box::pin(async move {
            let Some(mut connection) = connection else {
                return Err(Unavailable("not connected".into()));
            };
            bounded(timeout, invocation.invoke_async(&mut connection)).await
        })
    }
}

/// An ask of Redis within `timeout`: past it, the store is unavailable.
async fn bounded<T>(
    timeout: Duration,
    asked: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, Unavailable> {
    match tokio::time::timeout(timeout, asked).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(Unavailable(e.to_string())),
        Err(_) => Err(Unavailable(format!("no answer within {timeout:?}"))),
    }
}
