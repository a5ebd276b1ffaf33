//! The approval desk: where a call waits for a person when the client
//! cannot ask them (no elicitation, or a dialog that never shows). The
//! running mcp-chain serves the desk as a page (the binary's `console`);
//! this is its book, and nothing here speaks HTTP: a question is put on
//! the desk, the page lists what waits (oldest first) and hands back the
//! person's answer, and a question whose call stops waiting (answered
//! elsewhere, timed out, cancelled) leaves the desk as its future is
//! dropped.
//!
//! One desk per process, installed by the binary when `[console]` is
//! configured ([`install`]): every session's `approve` puts its questions
//! on it, so a person sees every call that waits in one place.

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;
use tokio::sync::{oneshot, watch};

/// A person's answer on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageAnswer {
    AllowOnce,
    AllowSession,
    AllowAlways,
    Deny,
}

impl PageAnswer {
    /// The answer a page's button names (`allow_once`, `allow_session`,
    /// `deny`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "allow_once" => Some(Self::AllowOnce),
            "allow_session" => Some(Self::AllowSession),
            "allow_always" => Some(Self::AllowAlways),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// One call waiting on the desk, as the page shows it.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub id: u64,
    pub tool: String,
    /// The gateway server whose tool it is (its own chain asked).
    pub server: Option<String>,
    pub arguments: Value,
    /// Who asks: the HTTP front's principal or token name; `None` on stdio.
    pub caller: Option<String>,
    /// The rule that asked (the layer's tool patterns).
    pub policy: String,
    /// "Allow for this session" may be offered.
    pub session_choice: bool,
    /// "Always" may be offered.
    pub always_choice: bool,
    pub since: SystemTime,
}

struct Entry {
    waiting: Waiting,
    answer: oneshot::Sender<PageAnswer>,
}

/// The book of calls waiting for a person.
pub struct Desk {
    entries: Mutex<BTreeMap<u64, Entry>>,
    next: AtomicU64,
    /// Bumped at every change: the page's event stream watches it.
    changed: watch::Sender<u64>,
    /// Called when a question arrives at an empty desk: the first of a
    /// burst opens the page, the rest of the burst joins it.
    on_first: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Desk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk")
            .field("waiting", &self.lock().len())
            .finish_non_exhaustive()
    }
}

static INSTALLED: OnceLock<Arc<Desk>> = OnceLock::new();

/// Installs the process's desk (once; a second call is ignored).
pub fn install(desk: Arc<Desk>) {
    let _ = INSTALLED.set(desk);
}

/// The process's desk, when the page is served.
pub fn installed() -> Option<Arc<Desk>> {
    INSTALLED.get().cloned()
}

impl Desk {
    /// A desk that calls `on_first` when a question arrives while none
    /// waits.
    pub fn new(on_first: impl Fn() + Send + Sync + 'static) -> Self {
        Self {
            entries: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
            changed: watch::channel(0).0,
            on_first: Box::new(on_first),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        crate::lock(&self.entries)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Puts a question on the desk; the person's answer, or `None` when
    /// the desk let it go. Dropping the returned [`Question`] takes the
    /// question off the desk.
    pub fn ask(self: &Arc<Self>, mut waiting: Waiting) -> Question {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        waiting.id = id;
        let (tx, rx) = oneshot::channel();
        let first = {
            let mut entries = self.lock();
            let first = entries.is_empty();
            entries.insert(
                id,
                Entry {
                    waiting,
                    answer: tx,
                },
            );
            first
        };
        self.bump();
        if first {
            (self.on_first)();
        }
        Question {
            desk: self.clone(),
            id,
            answer: rx,
        }
    }

    /// What waits, oldest first.
    pub fn waiting(&self) -> Vec<Waiting> {
        self.lock().values().map(|e| e.waiting.clone()).collect()
    }

    /// The person answered `id`. Whether it was still waiting (an answer
    /// to a call no longer waiting decides nothing). An answer the call's
    /// settings do not offer (`allow_session` where only once is) is
    /// refused the same way.
    pub fn decide(&self, id: u64, answer: PageAnswer) -> bool {
        let entry = {
            let mut entries = self.lock();
            match entries.get(&id) {
                Some(e) if answer == PageAnswer::AllowSession && !e.waiting.session_choice => {
                    return false
                }
                Some(e) if answer == PageAnswer::AllowAlways && !e.waiting.always_choice => {
                    return false
                }
                Some(_) => entries.remove(&id),
                None => None,
            }
        };
        let Some(entry) = entry else {
            return false;
        };
        self.bump();
        entry.answer.send(answer).is_ok()
    }

    /// A receiver that sees each change of what waits.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// A question on the desk: await it for the answer.
pub struct Question {
    desk: Arc<Desk>,
    id: u64,
    answer: oneshot::Receiver<PageAnswer>,
}

impl Question {
    /// The person's answer; `None` if the desk was dropped.
    pub async fn answer(&mut self) -> Option<PageAnswer> {
        (&mut self.answer).await.ok()
    }
}

impl Drop for Question {
    fn drop(&mut self) {
        let removed = self.desk.lock().remove(&self.id).is_some();
        if removed {
            self.desk.bump();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::AtomicUsize;

    fn waiting(tool: &str, session_choice: bool) -> Waiting {
        Waiting {
            id: 0,
            tool: tool.into(),
            server: None,
            arguments: json!({}),
            caller: None,
            policy: "write_*".into(),
            session_choice,
            always_choice: false,
            since: SystemTime::now(),
        }
    }

    #[tokio::test]
    async fn questions_wait_oldest_first_are_answered_once_and_leave_when_dropped() {
        let opened = Arc::new(AtomicUsize::new(0));
        let counted = opened.clone();
        let desk = Arc::new(Desk::new(move || {
            counted.fetch_add(1, Ordering::Relaxed);
        }));
        let mut first = desk.ask(waiting("write_a", false));
        let second = desk.ask(waiting("write_b", true));
        assert_eq!(opened.load(Ordering::Relaxed), 1, "one page a burst");
        let shown: Vec<String> = desk.waiting().into_iter().map(|w| w.tool).collect();
        assert_eq!(shown, ["write_a", "write_b"]);
        let ids: Vec<u64> = desk.waiting().iter().map(|w| w.id).collect();
        assert!(
            !desk.decide(ids[0], PageAnswer::AllowSession),
            "not offered"
        );
        assert!(desk.decide(ids[0], PageAnswer::AllowOnce));
        assert!(!desk.decide(ids[0], PageAnswer::Deny), "answered once");
        assert_eq!(first.answer().await, Some(PageAnswer::AllowOnce));
        drop(second);
        assert!(desk.waiting().is_empty(), "a call no longer waiting leaves");
        assert!(!desk.decide(ids[1], PageAnswer::AllowOnce));
        let _third = desk.ask(waiting("write_c", false));
        assert_eq!(opened.load(Ordering::Relaxed), 2, "a new burst");
    }
}
