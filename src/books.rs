//! The books a multiplexer keeps. Two parts of mcp-chain put many
//! conversations on one connection, or one on many: the shared pool (many
//! client sessions on a few servers, `pool/`) and the gateway (one client
//! on many servers, `gateway/hub/`); the front's 2026-07-28 requests
//! without a session meet on pooled sessions the same way (`front/`).
//! Where conversations meet, an id or a progress token written by one
//! sender may be written by another too, and a server must never be able
//! to answer, report on or cancel what was not sent to it. So everything
//! sent on gets a name of the multiplexer's, and the books say whose it is:
//!
//! - a request sent to a server: our id (a number) for its sender's, and
//!   our progress token (the same number) for its sender's; the answer is
//!   taken only from the server it was sent to, progress only from it;
//! - a cancellation only by the sender that owns the request it names;
//! - a server's request to a client (sampling, elicitation, roots): our id
//!   for the server's, its answer (and the client's progress on it) back
//!   to that server only, and a server withdrawing it only its own;
//! - a server that goes away: what it owed, handed back to be answered.
//!
//! `W` is what a request sent on is for (whose, and why); `A` is who a
//! server's request was passed to. The books judge nothing else: the
//! callers route, answer and log.

use crate::connector::RELATED_REQUEST_ID;
use mcp_chain_middleware::message::Request;
use mcp_chain_middleware::payload::Payload;
use mcp_chain_middleware::{Message, RequestId};
use serde_json::Value;
use std::collections::HashMap;

/// A request sent on to a server.
pub(crate) struct Sent<W> {
    pub(crate) server: usize,
    /// The id its sender gave it; `None` for the multiplexer's own.
    pub(crate) theirs: Option<RequestId>,
    /// Its sender's progress token, when it gave one.
    pub(crate) token: Option<Value>,
    pub(crate) what: W,
}

/// A server's request, passed to a client.
pub(crate) struct Asked<A> {
    pub(crate) server: usize,
    /// The id the server gave it.
    pub(crate) theirs: RequestId,
    pub(crate) token: Option<Value>,
    pub(crate) to: A,
}

pub(crate) struct Books<W, A> {
    next: u64,
    sent: HashMap<u64, Sent<W>>,
    asked: HashMap<u64, Asked<A>>,
}

impl<W, A> Default for Books<W, A> {
    fn default() -> Self {
        Self {
            next: 0,
            sent: HashMap::new(),
            asked: HashMap::new(),
        }
    }
}

impl<W, A> Books<W, A> {
    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// `request` (a sender's) renamed for `server`: our id and progress
    /// token in place of its sender's. Returns our id.
    pub(crate) fn send(&mut self, server: usize, what: W, request: &mut Message) -> RequestId {
        let ours = self.fresh();
        let (theirs, token) = rename(request, number(ours));
        let sent = Sent {
            server,
            theirs: Some(theirs),
            token,
            what,
        };
        self.sent.insert(ours, sent);
        number(ours)
    }

    /// The multiplexer's own `request` to `server`, under an id of ours.
    pub(crate) fn send_own(&mut self, server: usize, what: W, request: &mut Message) -> RequestId {
        let ours = self.fresh();
        request.set_id(number(ours));
        let sent = Sent {
            server,
            theirs: None,
            token: None,
            what,
        };
        self.sent.insert(ours, sent);
        number(ours)
    }

    /// Forgets a request sent on (it could not be sent, or its sender
    /// gave up on it): what it was.
    pub(crate) fn forget(&mut self, ours: &RequestId) -> Option<Sent<W>> {
        self.sent.remove(&ours_of(ours)?)
    }

    /// An answer from `server`: its sender's id put back, and what it
    /// answers. `None` (and nothing forgotten) when it answers nothing
    /// sent to that server.
    pub(crate) fn answered(&mut self, server: usize, answer: &mut Message) -> Option<Sent<W>> {
        let ours = ours_of(answer.id()?)?;
        if self.sent.get(&ours)?.server != server {
            return None;
        }
        let sent = self.sent.remove(&ours)?;
        if let Some(theirs) = &sent.theirs {
            answer.set_id(theirs.clone());
        }
        Some(sent)
    }

    /// Progress from `server` on a request sent to it: its sender's token
    /// put back, and whose it is.
    pub(crate) fn progress(&self, server: usize, note: &mut Message) -> Option<&Sent<W>> {
        let ours = ours_of(&token_of(note)?)?;
        let sent = self.sent.get(&ours).filter(|s| s.server == server)?;
        set_token(note, sent.token.clone()?)?;
        Some(sent)
    }

    /// The request sent to `server` whose progress token is `token` (ours):
    /// a server's question that carries it belongs with that request.
    pub(crate) fn by_token(&self, server: usize, token: &Value) -> Option<&Sent<W>> {
        let ours = ours_of(&RequestId::from_value(token)?)?;
        (self.sent.get(&ours)).filter(|s| s.server == server && s.token.is_some())
    }

    /// A sender's `notifications/cancelled`: renamed to our id of the one
    /// request in flight that `owns` says is the sender's and that it
    /// calls by the id named; the server to tell. `None` when there is no
    /// such request (or two): a sender cannot cancel another's.
    pub(crate) fn cancelled(&self, owns: impl Fn(&W) -> bool, note: &mut Message) -> Option<usize> {
        let named = note.params()?.member("requestId").ok()??;
        let named = RequestId::from_value(&named)?;
        let mut found = self
            .sent
            .iter()
            .filter(|(_, s)| s.theirs.as_ref() == Some(&named) && owns(&s.what));
        let (ours, sent) = found.next()?;
        if found.next().is_some() {
            return None;
        }
        let params = note.params_mut()?;
        params
            .set_member("requestId", number(*ours).to_value())
            .ok()?;
        Some(sent.server)
    }

    /// What a message of `server`'s (a question, a log line) names in
    /// `_meta` as the request it belongs to: that request, its sender's id
    /// put back. `None`: it names none; `Some(None)`: none in flight that
    /// was sent to `server` (answered, or another server's).
    pub(crate) fn related(
        &self,
        server: usize,
        params: Option<&mut Payload>,
    ) -> Option<Option<&Sent<W>>> {
        let params = params?;
        let mut meta = params.member("_meta").ok()??;
        let named = RequestId::from_value(meta.get(RELATED_REQUEST_ID)?)?;
        let sent = ours_of(&named).and_then(|n| self.sent.get(&n));
        let Some(sent) = sent.filter(|s| s.server == server) else {
            return Some(None);
        };
        if let (Some(theirs), Some(map)) = (&sent.theirs, meta.as_object_mut()) {
            map.insert(RELATED_REQUEST_ID.into(), theirs.to_value());
            let _ = params.set_member("_meta", meta);
        }
        Some(Some(sent))
    }

    /// The requests in flight.
    pub(crate) fn in_flight(&self) -> impl Iterator<Item = (RequestId, &Sent<W>)> {
        self.sent.iter().map(|(n, s)| (number(*n), s))
    }

    /// The requests in flight that `pick` picks, forgotten: ours and what
    /// each was (a server gone, a session left).
    pub(crate) fn take_sent(
        &mut self,
        pick: impl Fn(&Sent<W>) -> bool,
    ) -> Vec<(RequestId, Sent<W>)> {
        let taken = self.sent.extract_if(|_, sent| pick(sent));
        taken.map(|(n, sent)| (number(n), sent)).collect()
    }

    /// `server`'s request, renamed for the client it is passed `to`: our
    /// id (and progress token) for the server's. Returns our id.
    pub(crate) fn ask(&mut self, server: usize, to: A, request: &mut Request) -> RequestId {
        let ours = self.fresh();
        let theirs = std::mem::replace(&mut request.id, number(ours));
        let token = (request.params.as_mut()).and_then(|p| swap_token(p, ours.into()));
        let asked = Asked {
            server,
            theirs,
            token,
            to,
        };
        self.asked.insert(ours, asked);
        number(ours)
    }

    /// How many of `server`'s requests wait for a client.
    pub(crate) fn asking(&self, server: usize) -> usize {
        self.asked.values().filter(|a| a.server == server).count()
    }

    /// A client's answer to a server's request, from a client `may`
    /// accept: the server's id put back, and the server to tell.
    pub(crate) fn replied(
        &mut self,
        may: impl Fn(&A) -> bool,
        answer: &mut Message,
    ) -> Option<usize> {
        let ours = ours_of(answer.id()?)?;
        if !may(&self.asked.get(&ours)?.to) {
            return None;
        }
        let asked = self.asked.remove(&ours)?;
        answer.set_id(asked.theirs);
        Some(asked.server)
    }

    /// A client's progress on a server's request: the server's token put
    /// back, and the server to tell.
    pub(crate) fn replied_progress(
        &self,
        may: impl Fn(&A) -> bool,
        note: &mut Message,
    ) -> Option<usize> {
        let ours = ours_of(&token_of(note)?)?;
        let asked = self.asked.get(&ours).filter(|a| may(&a.to))?;
        set_token(note, asked.token.clone()?)?;
        Some(asked.server)
    }

    /// `server` withdraws a request of its own (`notifications/cancelled`):
    /// renamed to our id, and the client it went to.
    pub(crate) fn withdrawn(&mut self, server: usize, note: &mut Message) -> Option<A> {
        let named = note.params()?.member("requestId").ok()??;
        let named = RequestId::from_value(&named)?;
        let ours = *self
            .asked
            .iter()
            .find(|(_, a)| a.server == server && a.theirs == named)?
            .0;
        let params = note.params_mut()?;
        params
            .set_member("requestId", number(ours).to_value())
            .ok()?;
        self.asked.remove(&ours).map(|a| a.to)
    }

    /// The servers' requests that `pick` picks, forgotten (a server gone,
    /// a client left): each to be refused.
    pub(crate) fn take_asked(&mut self, pick: impl Fn(&Asked<A>) -> bool) -> Vec<Asked<A>> {
        let taken = self.asked.extract_if(|_, asked| pick(asked));
        taken.map(|(_, asked)| asked).collect()
    }
}

/// `message` (a request) under `ours`, its progress token too (as the
/// same value): its sender's id and token, to give back.
pub(crate) fn rename(message: &mut Message, ours: RequestId) -> (RequestId, Option<Value>) {
    let Message::Request(request) = message else {
        unreachable!("only requests are renamed");
    };
    let token = ours.to_value();
    let theirs = std::mem::replace(&mut request.id, ours);
    let token = request.params.as_mut().and_then(|p| swap_token(p, token));
    (theirs, token)
}

/// The progress token in `params`' `_meta` replaced by `ours`: the one
/// it was.
fn swap_token(params: &mut Payload, ours: Value) -> Option<Value> {
    let mut meta = params.member("_meta").ok()??;
    let original = meta.get("progressToken")?.clone();
    meta.as_object_mut()?.insert("progressToken".into(), ours);
    params.set_member("_meta", meta).ok()?;
    Some(original)
}

fn number(n: u64) -> RequestId {
    RequestId::Number(n.into())
}

/// Our number in an id or token; `None` for anything we never gave.
fn ours_of(id: &RequestId) -> Option<u64> {
    match id {
        RequestId::Number(n) => n.as_u64(),
        RequestId::String(_) => None,
    }
}

fn token_of(note: &Message) -> Option<RequestId> {
    let token = note.params()?.member("progressToken").ok()??;
    RequestId::from_value(&token)
}

fn set_token(note: &mut Message, token: Value) -> Option<()> {
    note.params_mut()?.set_member("progressToken", token).ok()
}

#[cfg(test)]
#[path = "books_tests.rs"]
mod tests;
