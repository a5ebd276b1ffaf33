//! The console's off switch: a person turns a tool off, and at once, in
//! every session of this process, the tool leaves `tools/list` (each
//! client told `notifications/tools/list_changed`) and its calls are
//! refused with `reason = "switched_off"`. The switches are kept in a
//! private file of the state directory, per server, so they hold across
//! a reload and a restart, and another mcp-chain of the same server takes
//! them up within [`WATCH_EVERY`]. With `[state]` they are kept there
//! instead, one set for every replica, and a switch is in force on all of
//! them within a second (the store announces each change).
//!
//! The binary installs the process's [`Switchboard`] when `[console]` is
//! configured, and puts a [`SwitchLayer`] outermost in every chain.

use crate::message::method;
use crate::peer::ClientSlot;
use crate::target::Target;
use crate::{BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message, ResponseFuture};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::watch;
use tower::{Layer, Service};

mod kept;

/// How often the switches are read again from disk (another process's).
pub const WATCH_EVERY: Duration = Duration::from_secs(2);

/// One switched-off tool, as the file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct Off {
    server: String,
    tool: String,
}

/// The tools switched off for this process's server.
#[derive(Debug)]
pub struct Switchboard {
    path: PathBuf,
    server: String,
    off: Mutex<BTreeSet<String>>,
    /// The tools the server listed, for the console to offer switches.
    seen: Mutex<BTreeSet<String>>,
    changed: watch::Sender<u64>,
}

static INSTALLED: OnceLock<Arc<Switchboard>> = OnceLock::new();

/// Installs the process's switchboard (once).
pub fn install(board: Arc<Switchboard>) {
    let _ = INSTALLED.set(board);
}

/// The process's switchboard, when the console is served.
pub fn installed() -> Option<Arc<Switchboard>> {
    INSTALLED.get().cloned()
}

/// Why the switches cannot be read: a guard that cannot read what is off
/// does not start (it would turn every tool back on).
#[derive(Debug, thiserror::Error)]
#[error("{path}: the console's switches cannot be read ({why}); fix or remove the file")]
pub struct Unreadable {
    path: String,
    why: String,
}

impl Switchboard {
    /// The switches kept at `path` for `server`.
    pub fn load(path: PathBuf, server: String) -> Result<Self, Unreadable> {
        let board = Self {
            path,
            server,
            off: Mutex::default(),
            seen: Mutex::default(),
            changed: watch::channel(0).0,
        };
        let off = board.read()?;
        *crate::lock(&board.off) = off;
        Ok(board)
    }

    pub fn is_off(&self, tool: &str) -> bool {
        crate::lock(&self.off).contains(tool)
    }

    /// The tools switched off, and those the server listed, by name.
    pub fn tools(&self) -> (Vec<String>, Vec<String>) {
        let off = crate::lock(&self.off).iter().cloned().collect();
        let seen = crate::lock(&self.seen).iter().cloned().collect();
        (off, seen)
    }

    /// Turns `tool` off (or on): kept first (in the replicas' shared state
    /// with `[state]`, else on disk), then in force.
    pub async fn set(&self, tool: &str, off: bool) -> std::io::Result<()> {
        match crate::shared::installed() {
            Some(store) => self.set_shared(store.as_ref(), tool, off).await?,
            None => self.set_in_file(tool, off)?,
        }
        let changed = {
            let mut current = crate::lock(&self.off);
            match off {
                true => current.insert(tool.to_owned()),
                false => current.remove(tool),
            }
        };
        if changed {
            tracing::warn!(tool = %crate::shown::shown(tool, 200), off, "console: a tool was switched");
            self.changed.send_modify(|n| *n = n.wrapping_add(1));
        }
        Ok(())
    }
}

/// One session's switch: the way to its client, to say the list changed.
#[derive(Debug, Default)]
struct SessionSwitch {
    client: ClientSlot,
}

/// The layer the binary puts outermost in a chain.
#[derive(Debug, Clone)]
pub struct SwitchLayer {
    board: Arc<Switchboard>,
    session: Arc<SessionSwitch>,
}

impl SwitchLayer {
    /// The layer of one session.
    pub fn new(board: Arc<Switchboard>) -> Self {
        Self {
            board,
            session: Arc::default(),
        }
    }

    /// The server → client half: keeps the way to the client, and tells
    /// it `list_changed` at each switch while the session lasts.
    pub fn toward_client<S>(&self, inner: S) -> S
    where
        S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        self.session.client.set(inner.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(tell(
                self.board.changed.subscribe(),
                Arc::downgrade(&self.session),
            ));
        }
        inner
    }
}

/// Tells a session's client its tool list changed, at each switch, until
/// the session is gone.
async fn tell(mut changes: watch::Receiver<u64>, session: Weak<SessionSwitch>) {
    loop {
        match tokio::time::timeout(WATCH_EVERY, changes.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(_) => {
                if session.strong_count() == 0 {
                    return;
                }
                continue;
            }
        }
        let Some(session) = session.upgrade() else {
            return;
        };
        let note = Message::notification(method::NOTIFICATION_TOOLS_LIST_CHANGED, None);
        if session.client.send(note).await.is_err() {
            return;
        }
    }
}

impl<S> Layer<S> for SwitchLayer {
    type Service = Switch<S>;

    fn layer(&self, inner: S) -> Switch<S> {
        Switch {
            inner,
            layer: self.clone(),
        }
    }
}

/// Refuses calls to switched-off tools and takes them out of listings.
#[derive(Debug, Clone)]
pub struct Switch<S> {
    inner: S,
    layer: SwitchLayer,
}

impl<S> Service<Envelope> for Switch<S>
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
        let (Direction::ToServer, Message::Request(req)) = (env.direction, &env.message) else {
            return crate::boxed(self.inner.call(env));
        };
        let board = self.layer.board.clone();
        if req.method == method::TOOLS_CALL {
            if let Ok(Some(Target::Tool(name))) = Target::of(&req.method, req.params.as_ref()) {
                if board.is_off(&name) {
                    crate::decided!("switch", "refused");
                    let message = format!(
                        "the tool {:?} is switched off in mcp-chain's console; it is refused",
                        crate::shown::shown(&name, 200)
                    );
                    let error = ErrorObject::refusal(
                        ErrorCode::REFUSED,
                        "switch",
                        "switched_off",
                        &message,
                    );
                    let answer = Message::error(Some(req.id.clone()), error);
                    return Box::pin(std::future::ready(Ok(Some(answer))));
                }
            }
            return crate::boxed(self.inner.call(env));
        }
        // `server/discover` (2026-07-28) may list the tools as well.
        if req.method != method::TOOLS_LIST && req.method != method::SERVER_DISCOVER {
            return crate::boxed(self.inner.call(env));
        }
        let answer = self.inner.call(env);
        Box::pin(async move {
            let mut answer = answer.await?;
            if let Some(Message::Response(resp)) = &mut answer {
                hide_switched_off(&board, &mut resp.result);
            }
            Ok(answer)
        })
    }
}

/// Notes the tools a listing names, and takes out those switched off.
fn hide_switched_off(board: &Switchboard, result: &mut crate::payload::Payload) {
    let Ok(Some(Value::Array(mut tools))) = result.member("tools") else {
        return;
    };
    let name = |tool: &Value| tool.get("name").and_then(Value::as_str).map(str::to_owned);
    crate::lock(&board.seen).extend(tools.iter().filter_map(name));
    let before = tools.len();
    tools.retain(|tool| name(tool).is_none_or(|n| !board.is_off(&n)));
    if tools.len() != before {
        let _ = result.set_member("tools", Value::Array(tools));
    }
}

#[cfg(test)]
mod tests;
