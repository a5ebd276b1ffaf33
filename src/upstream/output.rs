//! A child's output as one source across restarts.
//!
//! The relay reads the server's messages from one [`Output`] for the whole
//! session; the supervisor hands it each new child's stdout (a
//! [`Generation`]) and keeps a [`Hold`] on it: the hold learns when that
//! output has ended (everything the child wrote has been read), and
//! dropping it cuts the output off at once (a grandchild that keeps the
//! pipe open must not keep a dead server's session reading).

use crate::peer::{Read, Source};
use crate::transport::codec::FrameReader;
use tokio::process::ChildStdout;
use tokio::sync::{mpsc, oneshot};

/// The server's messages, child after child.
pub(crate) struct Output {
    children: mpsc::Receiver<Generation>,
    current: Option<Generation>,
}

/// One child's stdout, as the supervisor hands it over.
pub(super) struct Generation {
    reader: FrameReader<ChildStdout>,
    /// Fires when the supervisor lets go of this child's output.
    cut: oneshot::Receiver<()>,
    /// Dropped when the output has ended: the hold learns it.
    _ended: oneshot::Sender<()>,
}

/// The supervisor's side of one generation.
pub(super) struct Hold {
    _cut: oneshot::Sender<()>,
    ended: oneshot::Receiver<()>,
}

/// Where the supervisor sends each child's stdout.
pub(super) type Children = mpsc::Sender<Generation>;

impl Output {
    pub(super) fn new() -> (Children, Self) {
        let (children, rx) = mpsc::channel(1);
        let output = Self {
            children: rx,
            current: None,
        };
        (children, output)
    }
}

impl Generation {
    pub(super) fn new(reader: FrameReader<ChildStdout>) -> (Self, Hold) {
        let (cut_tx, cut) = oneshot::channel();
        let (ended_tx, ended) = oneshot::channel();
        let generation = Self {
            reader,
            cut,
            _ended: ended_tx,
        };
        let hold = Hold {
            _cut: cut_tx,
            ended,
        };
        (generation, hold)
    }
}

impl Hold {
    /// Waits until the child's output has been read to its end.
    pub(super) async fn ended(&mut self) {
        let _ = (&mut self.ended).await;
    }
}

impl Source for Output {
    async fn next(&mut self) -> std::io::Result<Option<Read>> {
        loop {
            if let Some(current) = &mut self.current {
                let read = tokio::select! {
                    biased;
                    _ = &mut current.cut => None,
                    read = Source::next(&mut current.reader) => Some(read),
                };
                match read {
                    Some(Ok(Some(read))) => return Ok(Some(read)),
                    Some(Err(e)) => {
                        tracing::warn!(peer = "server", error = %e, "reading failed; treating it as end of output");
                    }
                    Some(Ok(None)) | None => {}
                }
                // This child's output is over: its hold learns it.
                self.current = None;
            }
            match self.children.recv().await {
                Some(next) => self.current = Some(next),
                None => return Ok(None),
            }
        }
    }
}
