//! The server's lifecycle: its pipes, its exit, its restarts.
//!
//! The supervisor owns the child process. It attaches a writer (the
//! server-bound queue, handed from one child to the next) and a reader (a
//! [`Side`] whose messages go down the to-client chain), and waits for one of
//! three things: a stop from the relay (shutdown), the child's exit, or the
//! end of its output.
//!
//! When the server dies and `restart = "on-failure"` allows it: every request
//! in flight is answered with -32000 at once, new ones get 503 while the
//! server is away, whatever was still queued for the dead server is dropped
//! (it must not run twice), and after a backoff a new child is started. The
//! client's cached `initialize` and `notifications/initialized` are replayed
//! to it with mcp-chain's own ids (the answers never reach the client), and
//! the client is sent the `list_changed` notifications the new server
//! declares, so it refetches what may have changed. The client keeps its
//! session throughout.

use super::child::Child;
use super::{End, Upstream};
use crate::config::CommandConfig;
use crate::connector::Handshake;
use crate::relay::{Owed, Side, Unwritten};
use crate::transport::codec::{Frame, FrameReader};
use crate::transport::writer;
use mcp_chain_middleware::message::{method, Incoming};
use mcp_chain_middleware::{Direction, Envelope, Message};
use serde_json::Value;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdout;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;
use tower::{Service, ServiceExt};

/// After the server exits, how long its output may still be read: what it
/// wrote before exiting is already in the pipe, so this is only a bound.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// How long a restarted server gets to answer the replayed `initialize`.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(30);

/// A server that stays up this long earns its restart count back.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// The backoff doubles up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Runs a child under the restart policy until it stops or is gone.
pub(super) struct Supervisor(pub(super) Upstream, pub(super) CommandConfig);

impl Supervisor {
    pub(super) async fn run(mut self, mut child: Child, mut stop: oneshot::Receiver<()>) -> End {
        let mut reader = FrameReader::new(child.take_stdout(), self.0.max_message_bytes)
            .with_budget(self.0.budget.clone());
        let mut restarts = 0;
        loop {
            let started = Instant::now();
            let stdin = child.take_stdin();
            let writer = tokio::spawn(writer::run(self.0.queue.clone(), stdin, "server", false));
            let mut side = self.side(reader);
            let mut read = tokio::spawn(async move { side.run().await });

            let (exited, stopped) = tokio::select! {
                _ = &mut stop => (None, true),
                _ = &mut read => (None, false),
                status = child.wait() => {
                    // What it wrote before exiting is still in the pipe; a
                    // grandchild holding the pipe must not keep us waiting.
                    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, &mut read).await;
                    (status.ok(), false)
                }
            };
            if stopped {
                // Close the child's stdin after what is queued for it.
                self.0.queue.close();
                let _ = tokio::time::timeout(self.0.grace, writer).await;
                let status = child.shutdown(self.0.grace, &mut self.0.hurry).await;
                read.abort();
                return End::Stopped(status);
            }
            read.abort();
            let status = match exited {
                Some(status) => Some(status),
                None => tokio::time::timeout(self.0.grace, child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok),
            };
            child.shutdown(Duration::ZERO, &mut self.0.hurry).await;
            // Its writer stops at the broken pipe; make sure, then take over.
            writer.abort();
            let _ = writer.await;
            let reason = match status {
                Some(status) => format!("the server exited ({status})"),
                None => "the server closed its output".to_owned(),
            };
            let failed = status.is_none_or(|s| !s.success());
            if !(self.1.restart.on_failure && failed) {
                return self.give_up(reason, failed);
            }
            if started.elapsed() >= STABLE_AFTER {
                restarts = 0;
            }
            tracing::warn!("{reason}; restarting it");
            self.0.conn.suspend(&reason);
            self.0.downstream.abandon_all();
            // Queued for the dead server: its senders were already answered.
            self.0.queue.clear();

            let restarted = tokio::select! {
                r = self.restart(&mut restarts) => r,
                _ = &mut stop => return End::Stopped(None),
            };
            match restarted {
                Ok((new_child, new_reader, result)) => {
                    child = new_child;
                    reader = new_reader;
                    self.0.conn.resume();
                    self.announce(result.as_ref()).await;
                }
                Err(reason) => return self.give_up(reason, true),
            }
        }
    }

    fn side(&self, reader: FrameReader<ChildStdout>) -> Side<FrameReader<ChildStdout>> {
        Side {
            source: reader,
            chain: self.0.to_client.clone(),
            own: self.0.conn.clone(),
            reply: self.0.queue.clone(),
            direction: Direction::ToClient,
            owed: Owed::new(TaskTracker::new()),
            unwritten: Unwritten::default(),
        }
    }

    fn give_up(&self, reason: String, failed: bool) -> End {
        self.0.conn.close(&reason);
        End::Gone { reason, failed }
    }

    /// Starts a new child and replays the handshake, with backoff, until it
    /// works or the restarts run out.
    async fn restart(
        &mut self,
        restarts: &mut u32,
    ) -> Result<(Child, FrameReader<ChildStdout>, Option<Value>), String> {
        let policy = self.1.restart.clone();
        loop {
            if *restarts >= policy.max_restarts {
                return Err(format!(
                    "the server failed and was restarted {} times; giving up",
                    policy.max_restarts
                ));
            }
            let backoff = policy
                .backoff
                .saturating_mul(1 << (*restarts).min(16))
                .min(MAX_BACKOFF);
            *restarts += 1;
            tokio::time::sleep(backoff).await;
            let mut child = match Child::spawn(&self.1) {
                Ok(child) => child,
                Err(e) => {
                    tracing::warn!(error = %e, attempt = *restarts, "restart failed");
                    continue;
                }
            };
            let mut reader = FrameReader::new(child.take_stdout(), self.0.max_message_bytes)
                .with_budget(self.0.budget.clone());
            match self.replay(&mut child, &mut reader).await {
                Ok(result) => {
                    tracing::warn!(attempt = *restarts, "the server is back");
                    return Ok((child, reader, result));
                }
                Err(e) => {
                    tracing::warn!(error = %e, attempt = *restarts, "the restarted server did not take the handshake");
                    child.shutdown(Duration::ZERO, &mut self.0.hurry).await;
                }
            }
        }
    }

    /// Replays the client's handshake to a new child, reading its stdout
    /// directly until the answer. Returns the answer's `result`, or `None`
    /// when the client never initialized (stateless traffic).
    async fn replay(
        &mut self,
        child: &mut Child,
        reader: &mut FrameReader<ChildStdout>,
    ) -> Result<Option<Value>, String> {
        let Some(Handshake {
            initialize: Some(params),
            initialized,
            ..
        }) = self.0.conn.handshake()
        else {
            return Ok(None);
        };
        let stdin = child.stdin_mut().ok_or("the server has no stdin")?;
        let mut line = Vec::new();
        Handshake::replayed_initialize(params).write_line(&mut line);
        stdin.write_all(&line).await.map_err(|e| e.to_string())?;
        stdin.flush().await.map_err(|e| e.to_string())?;
        let result = tokio::time::timeout(REPLAY_TIMEOUT, async {
            loop {
                let parsed = match reader.next().await {
                    Ok(Some(Frame::Line(bytes))) => Incoming::parse(bytes),
                    Ok(Some(Frame::Shared(buf, at))) => Incoming::parse(&buf[at]),
                    Ok(Some(Frame::TooLong { .. } | Frame::OverBudget { .. })) => continue,
                    Ok(None) | Err(_) => return Err("it closed its output".to_owned()),
                };
                if let Ok(Incoming::Single(Ok(msg))) = parsed {
                    match msg {
                        other if !Handshake::answers_replay(&other) => tracing::debug!(
                            kind = other.kind(),
                            "skipping a message during the replayed handshake"
                        ),
                        Message::Error(e) => {
                            return Err(format!("it refused initialize: {}", e.error.message))
                        }
                        Message::Response(r) => return Ok(r.result),
                        // Only a response or an error answers.
                        Message::Request(_) | Message::Notification(_) => {}
                    }
                }
            }
        })
        .await
        .map_err(|_| format!("no answer to initialize within {REPLAY_TIMEOUT:?}"))??;
        if initialized {
            line.clear();
            Message::notification(method::NOTIFICATION_INITIALIZED, None).write_line(&mut line);
            let stdin = child.stdin_mut().ok_or("the server has no stdin")?;
            stdin.write_all(&line).await.map_err(|e| e.to_string())?;
            stdin.flush().await.map_err(|e| e.to_string())?;
        }
        // Read for its capabilities; one that cannot be read declares none.
        Ok(result.into_value().ok())
    }

    /// Tells the client to refetch what the new server may list differently.
    async fn announce(&mut self, result: Option<&Value>) {
        let mut kinds = vec![("tools", method::NOTIFICATION_TOOLS_LIST_CHANGED)];
        if let Some(result) = result {
            kinds.retain(|(cap, _)| Handshake::declares(result, cap));
            for (cap, note) in [
                ("prompts", method::NOTIFICATION_PROMPTS_LIST_CHANGED),
                ("resources", method::NOTIFICATION_RESOURCES_LIST_CHANGED),
            ] {
                if Handshake::declares(result, cap) {
                    kinds.push((cap, note));
                }
            }
        }
        for (_, note) in kinds {
            let env = Envelope::new(Direction::ToClient, Message::notification(note, None));
            if let Ok(chain) = self.0.to_client.ready().await {
                let _ = chain.call(env).await;
            }
        }
    }
}
