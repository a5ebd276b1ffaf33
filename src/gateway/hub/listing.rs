//! Listings merged: a `tools/list` (or prompts, resources, templates) is
//! asked of every server up at once, and answered with one page holding
//! each server's page, in the config's order of servers, its names as the
//! client sees them. A server with more to list leaves a cursor of its
//! own; the page's `nextCursor` is a token of mcp-chain's for all of them
//! (a client that never pages still sees every server's first page). A
//! server that does not answer within `startup_timeout` is left out of
//! that page (said on stderr), as is one that answers with an error or
//! ends meanwhile: one server never holds up a listing.

use super::{error, Hub, Pending, State};
use crate::gateway::names::{Continuation, Listing};
use mcp_chain_middleware::message::method;
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
    parts: Vec<(usize, Value)>,
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
            if self.send_server(k, message, Pending::Part { k, merging }) {
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
    pub(super) async fn listed(&mut self, merging: u64, k: usize, result: Option<Value>) {
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
        let mut items = Vec::new();
        let mut more = Continuation::new();
        for (k, result) in m.parts {
            let (part, next) = self.items(k, m.listing, result);
            items.extend(part);
            more.extend(next.map(|cursor| (k, cursor)));
        }
        let mut page = json!({ m.listing.array(): items });
        if !more.is_empty() {
            page["nextCursor"] = Value::String(self.cursors.issue(more));
        }
        self.send_client(Message::response(m.client, page)).await;
    }

    /// Server `k`'s page as the client sees it: its names prefixed (what
    /// cannot be is left out, said on stderr), what it owns noted; and its
    /// own cursor to what follows.
    fn items(
        &mut self,
        k: usize,
        listing: Listing,
        mut result: Value,
    ) -> (Vec<Value>, Option<Value>) {
        let server = self.members[k].name.clone();
        let next = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        let Some(Value::Array(mut items)) = result.get_mut(listing.array()).map(Value::take) else {
            return (Vec::new(), next);
        };
        items.retain_mut(|item| match listing {
            Listing::Tools | Listing::Prompts => {
                let Some(name) = item.get("name").and_then(Value::as_str) else {
                    return false;
                };
                match self.names.join(k, name) {
                    Some(joined) => {
                        item["name"] = Value::String(joined);
                        true
                    }
                    None => {
                        tracing::warn!(%server, name = %mcp_chain_middleware::shown::shown(name, 200), "gateway: a name that cannot be offered with its prefix (too long, or a character a name may not hold) is left out");
                        false
                    }
                }
            }
            Listing::Resources => item
                .get("uri")
                .and_then(Value::as_str)
                .is_some_and(|uri| self.owners.note(k, uri, false)),
            Listing::Templates => item
                .get("uriTemplate")
                .and_then(Value::as_str)
                .is_some_and(|uri| self.owners.note(k, uri, true)),
            Listing::Tasks => {
                super::tasks::outward(&self.names, k, item);
                true
            }
        });
        (items, next)
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
