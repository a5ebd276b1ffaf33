//! The server end of the relay: how mcp-chain reaches the server and keeps
//! it.
//!
//! A command upstream is a child process (`child`) kept by a supervisor
//! (`supervisor`) that restarts it and replays the client's handshake to the
//! new one; its output is one source across restarts (`output`). A URL
//! upstream is reached over Streamable HTTP, legacy HTTP+SSE or WebSocket
//! (`remote`). Whatever the server is, the relay hands it the same things
//! (an [`Upstream`]: the server-bound queue the upstream connector writes
//! into, the connectors whose requests a restart must settle) and gets back
//! the same thing, a [`Server`] peer: its messages parsed once, that queue
//! as its sink, and its lifecycle (each restart, and one [`End`]).

pub(crate) mod child;
mod output;
#[cfg(feature = "remote")]
mod remote;
mod supervisor;

use crate::config::UpstreamConfig;
use crate::connector::Connector;
use crate::peer::{Peer, Read, Source};
use crate::transport::budget::Budget;
use crate::transport::queue::Queue;
use child::{Child, SpawnError};
use output::Output;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;
use supervisor::Supervisor;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// What the relay wires a server to.
pub(crate) struct Upstream {
    pub(crate) max_message_bytes: usize,
    /// The process's budget of big messages in flight.
    pub(crate) budget: Arc<Budget>,
    pub(crate) grace: Duration,
    /// Sends requests to the server; records the handshake.
    pub(crate) conn: Connector,
    /// Answers the server's requests (to the client).
    pub(crate) downstream: Connector,
    /// The server-bound queue (handed from one child to the next).
    pub(crate) queue: Queue,
    /// Turns true when shutdown must not wait any longer (a second signal).
    pub(crate) hurry: watch::Receiver<bool>,
}

/// The server, as the relay reads it.
pub(crate) type Server = Peer<ServerSource, Lifecycle>;

/// What the relay learns of the server's life.
pub(crate) struct Lifecycle {
    /// Each time a new server took over from one that died: the
    /// notifications that tell the client to list again.
    pub(crate) restarted: mpsc::Receiver<Restarted>,
    /// The server stopped or is gone for good.
    pub(crate) end: JoinHandle<End>,
}

/// A restart, as the client must hear of it.
#[derive(Debug)]
pub(crate) struct Restarted {
    /// `notifications/*/list_changed` for what the new server declares.
    pub(crate) refetch: Vec<&'static str>,
}

/// Where the server's messages come from: a child's output (across its
/// restarts), or what a URL upstream parsed from HTTP bodies, SSE events
/// or WebSocket frames.
pub(crate) enum ServerSource {
    Child(Output),
    Parsed(mpsc::Receiver<Read>),
}

impl Source for ServerSource {
    async fn next(&mut self) -> std::io::Result<Option<Read>> {
        match self {
            Self::Child(output) => output.next().await,
            Self::Parsed(parsed) => parsed.next().await,
        }
    }
}

/// How the server's side of a session ended.
#[derive(Debug)]
pub(crate) enum End {
    /// Stopped on the relay's request; the child's exit status.
    Stopped(Option<ExitStatus>),
    /// The server is gone for good: a one-line reason, and whether it
    /// failed (a clean exit 0 after its stdin closed is not a failure).
    Gone { reason: String, failed: bool },
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// `upstream.ca_file` cannot be read, or holds no certificate.
    #[cfg(feature = "remote")]
    #[error("upstream.ca_file {path}: {why}")]
    CaFile { path: String, why: String },
    /// The HTTP or TLS client cannot be set up.
    #[cfg(feature = "remote")]
    #[error("cannot set up {what}: {why}")]
    Client { what: &'static str, why: String },
    #[cfg(not(feature = "remote"))]
    #[error("{url} is a URL, and this mcp-chain was built without remote upstreams (the `remote` feature)")]
    NoRemote { url: String },
}

impl StartError {
    #[cfg(feature = "remote")]
    fn ca_file(path: &std::path::Path, why: impl std::fmt::Display) -> Self {
        let path = path.display().to_string();
        Self::CaFile {
            path,
            why: why.to_string(),
        }
    }
}

impl Upstream {
    /// Starts the server and keeps it until `stop` fires or it is gone for
    /// good. `Err` when it cannot be started at all.
    pub(crate) fn start(
        self,
        config: &UpstreamConfig,
        stop: oneshot::Receiver<()>,
    ) -> Result<Server, StartError> {
        let sink = self.queue.clone();
        let (restarts, restarted) = mpsc::channel(1);
        let (source, end) = match config {
            UpstreamConfig::Command(command) => {
                let child = Child::spawn(command)?;
                let (children, output) = Output::new();
                let supervisor = Supervisor {
                    up: self,
                    command: command.clone(),
                    children,
                    restarts,
                };
                let end = tokio::spawn(supervisor.run(child, stop));
                (ServerSource::Child(output), end)
            }
            #[cfg(feature = "remote")]
            UpstreamConfig::Url(url) => {
                // A URL upstream reconnects, but never to a new server.
                drop(restarts);
                let (parsed, end) = remote::start(self, url, stop)?;
                (ServerSource::Parsed(parsed), end)
            }
            #[cfg(not(feature = "remote"))]
            UpstreamConfig::Url(url) => {
                drop((stop, restarts));
                return Err(StartError::NoRemote {
                    url: url.url.to_string(),
                });
            }
        };
        Ok(Peer {
            source,
            sink,
            lifecycle: Lifecycle { restarted, end },
        })
    }
}
