//! The server's lifecycle: its pipes, its exit, its restarts.
//!
//! The supervisor owns the child process. It attaches a writer (the
//! server-bound queue, handed from one child to the next), hands the
//! child's stdout to the relay (the next generation of the server's
//! [`Output`](super::output::Output)), and waits for one of three things: a
//! stop from the relay (shutdown), the child's exit, or the end of its
//! output.
//!
//! When the server dies and `restart = "on-failure"` allows it: every request
//! in flight is answered with -32000 at once, new ones get 503 while the
//! server is away, whatever was still queued for the dead server is dropped
//! (it must not run twice), and after a backoff a new child is started. The
//! client's cached `initialize` and `notifications/initialized` are replayed
//! to it with mcp-chain's own ids (the answers never reach the client), and
//! the relay is told which `list_changed` notifications the new server
//! declares, so the client refetches what may have changed. The client keeps its
//! session throughout.

use super::child::Child;
use super::output::{Children, Generation};
use super::{End, Restarted, Upstream};
use crate::config::CommandConfig;
use crate::connector::Handshake;
use crate::transport::codec::{Frame, FrameReader};
use crate::transport::writer;
use mcp_chain_middleware::message::{method, Incoming};
use mcp_chain_middleware::Message;
use serde_json::Value;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdout;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

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
pub(super) struct Supervisor {
    pub(super) up: Upstream,
    pub(super) command: CommandConfig,
    /// Where each child's stdout goes: to the relay, which reads it.
    pub(super) children: Children,
    /// Where each restart is told.
    pub(super) restarts: mpsc::Sender<Restarted>,
}

impl Supervisor {
    pub(super) async fn run(mut self, mut child: Child, mut stop: oneshot::Receiver<()>) -> End {
        let mut reader = FrameReader::new(child.take_stdout(), self.up.max_message_bytes)
            .with_budget(self.up.budget.clone());
        let mut restarts = 0;
        loop {
            let started = Instant::now();
            let stdin = child.take_stdin();
            let writer = tokio::spawn(writer::run(self.up.queue.clone(), stdin, "server", false));
            let (generation, mut output) = Generation::new(reader);
            // The relay is gone only when the session is: nothing to read for.
            let _ = self.children.send(generation).await;

            let (exited, stopped) = tokio::select! {
                _ = &mut stop => (None, true),
                () = output.ended() => (None, false),
                status = child.wait() => {
                    // What it wrote before exiting is still in the pipe; a
                    // grandchild holding the pipe must not keep us waiting.
                    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, output.ended()).await;
                    (status.ok(), false)
                }
            };
            if stopped {
                // Close the child's stdin after what is queued for it.
                self.up.queue.close();
                let _ = tokio::time::timeout(self.up.grace, writer).await;
                let status = child.shutdown(self.up.grace, &mut self.up.hurry).await;
                drop(output);
                return End::Stopped(status);
            }
            // Whatever is still unread of a dead child's output is cut off.
            drop(output);
            let status = match exited {
                Some(status) => Some(status),
                None => tokio::time::timeout(self.up.grace, child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok),
            };
            child.shutdown(Duration::ZERO, &mut self.up.hurry).await;
            // Its writer stops at the broken pipe; make sure, then take over.
            writer.abort();
            let _ = writer.await;
            let reason = match status {
                Some(status) => format!("the server exited ({status})"),
                None => "the server closed its output".to_owned(),
            };
            let failed = status.is_none_or(|s| !s.success());
            if !(self.command.restart.on_failure && failed) {
                return self.give_up(reason, failed);
            }
            if started.elapsed() >= STABLE_AFTER {
                restarts = 0;
            }
            tracing::warn!("{reason}; restarting it");
            self.up.conn.suspend(&reason);
            self.up.downstream.abandon_all();
            // Queued for the dead server: its senders were already answered.
            self.up.queue.clear();

            let restarted = tokio::select! {
                r = self.restart(&mut restarts) => r,
                _ = &mut stop => return End::Stopped(None),
            };
            match restarted {
                Ok((new_child, new_reader, result)) => {
                    child = new_child;
                    reader = new_reader;
                    self.up.conn.resume();
                    let refetch = refetch(result.as_ref());
                    let _ = self.restarts.send(Restarted { refetch }).await;
                }
                Err(gave_up) => return self.give_up(gave_up.to_string(), true),
            }
        }
    }

    fn give_up(&self, reason: String, failed: bool) -> End {
        self.up.conn.close(&reason);
        End::Gone { reason, failed }
    }

    /// Starts a new child and replays the handshake, with backoff, until it
    /// works or the restarts run out.
    async fn restart(
        &mut self,
        restarts: &mut u32,
    ) -> Result<(Child, FrameReader<ChildStdout>, Option<Value>), GaveUp> {
        let policy = self.command.restart.clone();
        loop {
            if *restarts >= policy.max_restarts {
                return Err(GaveUp(policy.max_restarts));
            }
            let backoff = policy
                .backoff
                .saturating_mul(1 << (*restarts).min(16))
                .min(MAX_BACKOFF);
            *restarts += 1;
            tokio::time::sleep(backoff).await;
            let mut child = match Child::spawn(&self.command) {
                Ok(child) => child,
                Err(e) => {
                    tracing::warn!(error = %e, attempt = *restarts, "restart failed");
                    continue;
                }
            };
            let mut reader = FrameReader::new(child.take_stdout(), self.up.max_message_bytes)
                .with_budget(self.up.budget.clone());
            match self.replay(&mut child, &mut reader).await {
                Ok(result) => {
                    tracing::warn!(attempt = *restarts, "the server is back");
                    return Ok((child, reader, result));
                }
                Err(e) => {
                    tracing::warn!(error = %e, attempt = *restarts, "the restarted server did not take the handshake");
                    child.shutdown(Duration::ZERO, &mut self.up.hurry).await;
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
    ) -> Result<Option<Value>, ReplayError> {
        let Some(Handshake {
            initialize: Some(params),
            initialized,
            ..
        }) = self.up.conn.handshake()
        else {
            return Ok(None);
        };
        let stdin = child.stdin_mut().ok_or(ReplayError::NoStdin)?;
        let mut line = Vec::new();
        Handshake::replayed_initialize(params).write_line(&mut line);
        stdin.write_all(&line).await?;
        stdin.flush().await?;
        let result = tokio::time::timeout(REPLAY_TIMEOUT, async {
            loop {
                let parsed = match reader.next().await {
                    Ok(Some(Frame::Line(bytes))) => Incoming::parse(bytes),
                    Ok(Some(Frame::Shared(buf, at))) => Incoming::parse(&buf[at]),
                    Ok(Some(Frame::TooLong { .. } | Frame::OverBudget { .. })) => continue,
                    Ok(None) | Err(_) => return Err(ReplayError::Closed),
                };
                if let Ok(Incoming::Single(Ok(msg))) = parsed {
                    match msg {
                        other if !Handshake::answers_replay(&other) => tracing::debug!(
                            kind = other.kind(),
                            "skipping a message during the replayed handshake"
                        ),
                        Message::Error(e) => return Err(ReplayError::Refused(e.error.message)),
                        Message::Response(r) => return Ok(r.result),
                        // Only a response or an error answers.
                        Message::Request(_) | Message::Notification(_) => {}
                    }
                }
            }
        })
        .await
        .map_err(|_| ReplayError::NoAnswer)??;
        if initialized {
            line.clear();
            Message::notification(method::NOTIFICATION_INITIALIZED, None).write_line(&mut line);
            let stdin = child.stdin_mut().ok_or(ReplayError::NoStdin)?;
            stdin.write_all(&line).await?;
            stdin.flush().await?;
        }
        // Read for its capabilities; one that cannot be read declares none.
        Ok(result.into_value().ok())
    }
}

/// The restarts ran out.
#[derive(Debug, thiserror::Error)]
#[error("the server failed and was restarted {0} times; giving up")]
struct GaveUp(u32);

/// Why a restarted server did not take the replayed handshake.
#[derive(Debug, thiserror::Error)]
enum ReplayError {
    #[error("the server has no stdin")]
    NoStdin,
    #[error("cannot write to it: {0}")]
    Write(#[from] std::io::Error),
    #[error("it closed its output")]
    Closed,
    /// The server's own words (escaped where they are logged).
    #[error("it refused initialize: {0}")]
    Refused(String),
    #[error("no answer to initialize within {REPLAY_TIMEOUT:?}")]
    NoAnswer,
}

/// What the client should refetch from a new server that answered the
/// replayed `initialize` with `result`: tools always, prompts and resources
/// when it declares them (`None`: it was never initialized).
fn refetch(result: Option<&Value>) -> Vec<&'static str> {
    let mut notes = Vec::new();
    for (cap, note) in [
        ("tools", method::NOTIFICATION_TOOLS_LIST_CHANGED),
        ("prompts", method::NOTIFICATION_PROMPTS_LIST_CHANGED),
        ("resources", method::NOTIFICATION_RESOURCES_LIST_CHANGED),
    ] {
        let declared = result.is_some_and(|result| Handshake::declares(result, cap));
        if declared || (cap == "tools" && result.is_none()) {
            notes.push(note);
        }
    }
    notes
}
