//! Listings merged: a `tools/list` (or prompts, resources, templates) is
//! asked of every server up at once, and answered with one page holding
//! each server's page, in the config's order of servers, its names as the
//! client sees them. A server with more to list leaves a cursor of its
//! own; the page's `nextCursor` is a token of mcp-chain's for all of them
//! (a client that never pages still sees every server's first page). A
//! server that does not answer within `startup_timeout` is left out of
//! that page (said on stderr), as is one that answers with an error or
//! ends meanwhile: one server never holds up a listing.
//!
//! The parts stay text: each item's name is set where it stands (the rest
//! of the item is not read), and the merged page is the parts' arrays
//! written one after the other; nothing is parsed into values whole.

use super::page::{add_items, Hints};
use super::{error, Hub, Pending, State};
use crate::gateway::names::{Continuation, Listing};
use mcp_chain_middleware::message::{method, Response};
use mcp_chain_middleware::payload::Payload;
use mcp_chain_middleware::{ErrorCode, Message, RequestId};
use serde_json::{json, Value};
use tokio::time::Instant;

/// A listing being merged.
pub(super) struct Merging {
    client: RequestId,
    listing: Listing,
    /// Servers whose part is still owed.
    waiting: Vec<usize>,
    /// The parts in: (server, its result).
    parts: Vec<(usize, Payload)>,
    deadline: Instant,
}

impl Hub {
    pub(super) async fn list(&mut self, id: RequestId, listing: Listing, params: &Value) {
        let asked: Continuation = match params.get("cursor") {
            None | Some(Value::Null) => (0..self.members.len())
                .filter(|&k| matches!(self.members[k].state, State::Up(_)))
                .map(|k| (k, Value::Null))
                .collect(),
            Some(Value::String(token)) => match self.cursors.find(token) {
                Some(more) => more,
                None => {
                    let message = "the cursor is not one this mcp-chain gave (or it is too old); list again from the start".to_owned();
                    return self.refuse(id, message).await;
                }
            },
            Some(_) => return self.refuse(id, "a cursor is a string".to_owned()).await,
        };
        self.next_merging += 1;
        let merging = self.next_merging;
        let mut waiting = Vec::new();
        for (k, cursor) in asked {
            let mut params = match params {
                Value::Object(p) => Value::Object(p.clone()),
                _ => json!({}),
            };
            match cursor {
                Value::Null => params.as_object_mut().map(|p| p.remove("cursor")),
                cursor => params
                    .as_object_mut()
                    .map(|p| p.insert("cursor".into(), cursor)),
            };
            let message = Message::request(0, method_of(listing), Some(params));
            if self.send_server(k, message, Pending::Part { merging }) {
                waiting.push(k);
            }
        }
        let merging_now = Merging {
            client: id,
            listing,
            waiting,
            parts: Vec::new(),
            deadline: Instant::now() + self.part_within,
        };
        self.mergings.insert(merging, merging_now);
        self.finish_if_done(merging).await;
    }

    async fn refuse(&self, id: RequestId, message: String) {
        self.send_client(error(id, ErrorCode::INVALID_PARAMS, message))
            .await;
    }

    /// Server `k`'s part of `merging` (`None`: an error, or it is gone).
    pub(super) async fn listed(&mut self, merging: u64, k: usize, result: Option<Payload>) {
        let Some(m) = self.mergings.get_mut(&merging) else {
            return;
        };
        m.waiting.retain(|&w| w != k);
        if let Some(result) = result {
            m.parts.push((k, result));
        }
        self.finish_if_done(merging).await;
    }

    /// The listings server `k` still owes a part of.
    pub(super) fn mergings_waiting_on(&self, k: usize) -> Vec<u64> {
        self.mergings
            .iter()
            .filter(|(_, m)| m.waiting.contains(&k))
            .map(|(n, _)| *n)
            .collect()
    }

    /// When the next listing's time is up, or a server waiting for a login
    /// is to be asked again.
    pub(in crate::gateway) fn next_deadline(&self) -> Option<Instant> {
        let retries = self.members.iter().filter_map(|m| match m.state {
            State::LoggingIn(at) => Some(at),
            _ => None,
        });
        self.mergings
            .values()
            .map(|m| m.deadline)
            .chain(retries)
            .min()
    }

    /// Answers each listing whose time is up with the parts in; asks each
    /// server waiting for a login to initialize again.
    pub(in crate::gateway) async fn expire(&mut self, now: Instant) {
        for k in 0..self.members.len() {
            if matches!(self.members[k].state, State::LoggingIn(at) if at <= now) {
                // Not asked again while this one is owed.
                self.members[k].state =
                    State::LoggingIn(now + std::time::Duration::from_secs(3600));
                self.send_initialize(k);
            }
        }
        let late: Vec<u64> = self
            .mergings
            .iter()
            .filter(|(_, m)| m.deadline <= now)
            .map(|(n, _)| *n)
            .collect();
        for merging in late {
            if let Some(m) = self.mergings.get_mut(&merging) {
                for &k in &m.waiting {
                    tracing::warn!(server = %self.members[k].name, "gateway: a server did not list in time; its part is left out of this page");
                }
                m.waiting.clear();
            }
            self.finish_if_done(merging).await;
        }
    }

    async fn finish_if_done(&mut self, merging: u64) {
        if self
            .mergings
            .get(&merging)
            .is_none_or(|m| !m.waiting.is_empty())
        {
            return;
        }
        let Some(mut m) = self.mergings.remove(&merging) else {
            return;
        };
        m.parts.sort_by_key(|(k, _)| *k);
        let array = m.listing.array();
        // The result is written here from the parts' arrays, as text: it is
        // not read again (`Payload::from_written`).
        let size = m.parts.iter().map(|(_, p)| p.json_len()).sum::<usize>();
        // Room for the names the prefixes lengthen, so the page is not
        // grown (and copied) on the way.
        let mut page = Vec::with_capacity(size + size / 8 + 128);
        page.extend_from_slice(format!("{{\"{array}\":[").as_bytes());
        let mut more = Continuation::new();
        let mut first = true;
        let mut hints = Hints::default();
        for (k, mut part) in m.parts {
            let next = self.items(k, m.listing, &mut part);
            more.extend(next.map(|cursor| (k, cursor)));
            if add_items(&part, array, &mut page, &mut first).is_none() {
                tracing::warn!(server = %self.members[k].name, "gateway: a listing that is not an object with an array is left out");
                continue;
            }
            hints.add(&Hints::of(&part));
        }
        page.push(b']');
        if !more.is_empty() {
            let token = self.cursors.issue(more);
            page.extend_from_slice(b",\"nextCursor\":");
            page.extend_from_slice(&serde_json::to_vec(&token).unwrap_or_default());
        }
        if self.modern.is_some() {
            // 2026-07-28: a complete result, cacheable as its least
            // cacheable part.
            hints.write(&mut page);
        }
        page.push(b'}');
        let answer = Message::Response(Response {
            id: m.client,
            result: Payload::from_written(page),
            extra: Default::default(),
        });
        self.send_client(answer).await;
    }

    /// Server `k`'s page as the client sees it: its names prefixed where
    /// they stand (what cannot be is left out, said on stderr), what it
    /// owns noted; and its own cursor to what follows.
    fn items(&mut self, k: usize, listing: Listing, part: &mut Payload) -> Option<Value> {
        let server = self.members[k].name.clone();
        let next = part
            .member("nextCursor")
            .ok()
            .flatten()
            .filter(|c| !c.is_null());
        let (names, owners) = (&self.names, &mut self.owners);
        let prefix = self.members[k].uri_prefix.as_deref();
        let edited = part.edit_items(listing.array(), |item| match listing {
            Listing::Tools | Listing::Prompts => {
                let Some(name) = item.str_member("name") else {
                    return false;
                };
                match names.join(k, &name) {
                    // The server without a prefix: its item stays as sent.
                    Some(joined) if joined == *name => true,
                    Some(joined) => {
                        item.set("name", Value::String(joined));
                        true
                    }
                    None => {
                        tracing::warn!(%server, name = %mcp_chain_middleware::shown::shown(&name, 200), "gateway: a name that cannot be offered with its prefix (too long, or a character a name may not hold) is left out");
                        false
                    }
                }
            }
            Listing::Resources | Listing::Templates => {
                let (key, template) = match listing {
                    Listing::Templates => ("uriTemplate", true),
                    _ => ("uri", false),
                };
                let Some(uri) = item.str_member(key) else {
                    return false;
                };
                match prefix {
                    // Its own by the prefix: nothing to note, no clash.
                    Some(prefix) => {
                        item.set(key, Value::String(format!("{prefix}{uri}")));
                        true
                    }
                    None => owners.note(k, &uri, template),
                }
            }
            Listing::Tasks => {
                if let Some(id) = item.str_member("taskId") {
                    let id = names.task(k, &id);
                    item.set("taskId", Value::String(id));
                }
                true
            }
        });
        if edited.is_err() {
            tracing::warn!(%server, "gateway: a listing whose items cannot be read is left out");
        }
        next
    }
}

fn method_of(listing: Listing) -> &'static str {
    match listing {
        Listing::Tools => method::TOOLS_LIST,
        Listing::Prompts => method::PROMPTS_LIST,
        Listing::Resources => method::RESOURCES_LIST,
        Listing::Templates => method::RESOURCES_TEMPLATES_LIST,
        Listing::Tasks => method::TASKS_LIST,
    }
}
