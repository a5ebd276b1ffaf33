//! Our own stdin and stdout, as async pipes under the reactor.
//!
//! `tokio::io::stdin()`/`stdout()` hand every read and write to the blocking
//! thread pool, which adds tens of microseconds per message. When stdin or
//! stdout is a pipe or a socket (Claude Desktop, IDEs, shell pipes, tests),
//! mcp-chain puts a duplicate of the descriptor in non-blocking mode and
//! registers it with the reactor instead. Terminals and files, which epoll
//! cannot wait on, fall back to tokio's blocking-pool handles.
//!
//! Pipes are widened to [`PIPE_BYTES`] where the kernel allows (Linux): a
//! 64 KiB pipe moves a 10 MB result in 160 hand-offs between writer and
//! reader, each a sleep and a wake-up, and mcp-chain sits between two such
//! pipes.
//!
//! Elsewhere than Unix (Windows), stdin and stdout are tokio's handles.

#[cfg(unix)]
use std::fs::File;
#[cfg(unix)]
use std::os::fd::{AsFd, OwnedFd};
#[cfg(unix)]
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite};

/// The capacity mcp-chain asks for on each pipe it reads or writes: the
/// default `fs.pipe-max-size`, so an unprivileged user gets it too.
#[cfg(target_os = "linux")]
pub(crate) const PIPE_BYTES: usize = 1024 * 1024;

pub(crate) type Reader = Pin<Box<dyn AsyncRead + Send>>;
pub(crate) type Writer = Pin<Box<dyn AsyncWrite + Send>>;

/// Our stdin (Windows: tokio's).
#[cfg(not(unix))]
pub(crate) fn stdin() -> std::io::Result<Reader> {
    Ok(Box::pin(tokio::io::stdin()))
}

/// Our stdout (Windows: tokio's).
#[cfg(not(unix))]
pub(crate) fn stdout() -> std::io::Result<Writer> {
    Ok(Box::pin(tokio::io::stdout()))
}

/// Our stdin, ready to read under the reactor when it can be.
#[cfg(unix)]
pub(crate) fn stdin() -> std::io::Result<Reader> {
    let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
    Ok(match kind(&fd)? {
        Kind::Fifo => {
            widen(&fd);
            Box::pin(tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?)
        }
        Kind::Socket => Box::pin(socket(fd)?),
        Kind::Other => Box::pin(tokio::io::stdin()),
    })
}

/// Our stdout, ready to write under the reactor when it can be.
#[cfg(unix)]
pub(crate) fn stdout() -> std::io::Result<Writer> {
    let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
    Ok(match kind(&fd)? {
        Kind::Fifo => {
            widen(&fd);
            Box::pin(tokio::net::unix::pipe::Sender::from_owned_fd(fd)?)
        }
        Kind::Socket => Box::pin(socket(fd)?),
        Kind::Other => Box::pin(tokio::io::stdout()),
    })
}

/// Asks for a [`PIPE_BYTES`] pipe. Best effort: past the user's pipe quota
/// (`fs.pipe-user-pages-soft`) the kernel refuses, and the pipe works as it
/// was, only with more hand-offs for big messages.
#[cfg(target_os = "linux")]
pub(crate) fn widen(pipe: impl AsFd) {
    match rustix::pipe::fcntl_getpipe_size(&pipe) {
        Ok(size) if size >= PIPE_BYTES => {}
        _ => {
            if let Err(e) = rustix::pipe::fcntl_setpipe_size(&pipe, PIPE_BYTES) {
                tracing::debug!(error = %e, "cannot widen a pipe; keeping its size");
            }
        }
    }
}

/// Pipes have the size the system gives them (only Linux lets a process
/// ask for more).
#[cfg(not(target_os = "linux"))]
pub(crate) fn widen<P>(_pipe: P) {}

#[cfg(unix)]
enum Kind {
    Fifo,
    Socket,
    Other,
}

#[cfg(unix)]
fn kind(fd: &OwnedFd) -> std::io::Result<Kind> {
    let file = File::from(fd.try_clone()?);
    let file_type = file.metadata()?.file_type();
    Ok(if file_type.is_fifo() {
        Kind::Fifo
    } else if file_type.is_socket() {
        Kind::Socket
    } else {
        Kind::Other
    })
}

#[cfg(unix)]
fn socket(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std)
}
