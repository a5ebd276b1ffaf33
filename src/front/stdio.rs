//! Our own stdin and stdout, as async pipes under the reactor.
//!
//! `tokio::io::stdin()`/`stdout()` hand every read and write to the blocking
//! thread pool, which adds tens of microseconds per message. When stdin or
//! stdout is a pipe or a socket (Claude Desktop, IDEs, shell pipes, tests),
//! mcp-chain puts a duplicate of the descriptor in non-blocking mode and
//! registers it with the reactor instead. Terminals and files, which epoll
//! cannot wait on, fall back to tokio's blocking-pool handles.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) type Reader = Pin<Box<dyn AsyncRead + Send>>;
pub(crate) type Writer = Pin<Box<dyn AsyncWrite + Send>>;

/// Our stdin, ready to read under the reactor when it can be.
pub(crate) fn stdin() -> std::io::Result<Reader> {
    let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
    Ok(match kind(&fd)? {
        Kind::Fifo => Box::pin(tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?),
        Kind::Socket => Box::pin(socket(fd)?),
        Kind::Other => Box::pin(tokio::io::stdin()),
    })
}

/// Our stdout, ready to write under the reactor when it can be.
pub(crate) fn stdout() -> std::io::Result<Writer> {
    let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
    Ok(match kind(&fd)? {
        Kind::Fifo => Box::pin(tokio::net::unix::pipe::Sender::from_owned_fd(fd)?),
        Kind::Socket => Box::pin(socket(fd)?),
        Kind::Other => Box::pin(tokio::io::stdout()),
    })
}

enum Kind {
    Fifo,
    Socket,
    Other,
}

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

fn socket(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std)
}
