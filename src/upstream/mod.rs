//! The server end of the relay: how mcp-chain reaches the server and keeps
//! it.
//!
//! A command upstream is a child process (`child`) kept by a supervisor
//! (`supervisor`) that restarts it and replays the client's handshake to the
//! new one; a URL upstream is reached over Streamable HTTP (`remote`). Whatever the server is, the relay hands it the same things (an
//! [`Upstream`]): the server-bound queue the upstream connector writes
//! into, and the to-client chain the server's messages go down; and it gets
//! back one [`End`] when the server stops or is gone for good.

pub(crate) mod child;
#[cfg(feature = "remote")]
mod remote;

use crate::transport::budget::Budget;
use std::sync::Arc;
mod supervisor;

use crate::chain::ChainService;
use crate::config::UpstreamConfig;
use crate::connector::Connector;
use crate::transport::queue::Queue;
use child::{Child, SpawnError};
use std::process::ExitStatus;
use std::time::Duration;
use supervisor::Supervisor;
use tokio::sync::{oneshot, watch};
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
    /// The to-client chain the server's messages go down.
    pub(crate) to_client: ChainService,
    /// The server-bound queue (handed from one child to the next).
    pub(crate) queue: Queue,
    /// Turns true when shutdown must not wait any longer (a second signal).
    pub(crate) hurry: watch::Receiver<bool>,
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
    /// Starts the server and relays its side until `stop` fires or it is
    /// gone for good. `Err` when it cannot be started at all.
    pub(crate) fn start(
        self,
        config: &UpstreamConfig,
        stop: oneshot::Receiver<()>,
    ) -> Result<JoinHandle<End>, StartError> {
        match config {
            UpstreamConfig::Command(command) => {
                let child = Child::spawn(command)?;
                Ok(tokio::spawn(
                    Supervisor(self, command.clone()).run(child, stop),
                ))
            }
            #[cfg(feature = "remote")]
            UpstreamConfig::Url(url) => remote::start(self, url, stop),
            #[cfg(not(feature = "remote"))]
            UpstreamConfig::Url(url) => {
                drop(stop);
                Err(StartError::NoRemote {
                    url: url.url.to_string(),
                })
            }
        }
    }
}
