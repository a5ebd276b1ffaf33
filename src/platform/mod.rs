//! What differs between Linux, macOS and Windows, one concern a module,
//! each with the platform's real equivalent; the relay, the front and the
//! layers see none of it.
//!
//! - [`tree`]: a server's whole process tree, ended as one (a process
//!   group on Unix, a Job Object on Windows), and the server ending when
//!   mcp-chain is killed outright.
//! - [`parent`]: mcp-chain ending when its client dies without closing
//!   its stdin.
//! - [`signals`]: what asks mcp-chain to stop.
//! - [`dirs`]: the user's state directory, per OS.
//! - [`browser`]: opening a login page in the user's browser.
//! - [`command`]: the program a server's command names (`npx` is
//!   `npx.cmd` on Windows).
//!
//! Our stdin and stdout as async pipes, and pipe widening (Linux only, an
//! optimisation), are in `transport::stdio`; the allocator's tuning (glibc
//! only) in `memory`; private files in the middleware crate's `private`.

pub(crate) mod browser;
pub(crate) mod command;
pub(crate) mod dirs;
pub(crate) mod parent;
pub(crate) mod signals;
pub(crate) mod tree;
