//! Which server owns a resource URI, learnt by the gateway itself: a
//! client may read a URI it knows without listing first. Once the client
//! is initialized, each server that offers resources is asked for its
//! resources and templates (their first pages), and again when it says
//! its list changed. A read of a URI nobody is known to own waits while
//! such answers are owed (at most [`UNROUTED_AT_MOST`]); then it goes to
//! its owner, or is refused: a URI no server listed is tried on none.

use super::{Hub, Pending, State};
use crate::gateway::names::Listing;
use mcp_chain_middleware::message::{method, Request};
use mcp_chain_middleware::Message;
use serde_json::Value;

/// Reads that may wait for what the servers list.
const UNROUTED_AT_MOST: usize = 64;

impl Hub {
    /// Asks server `k` what resources and templates it has.
    pub(super) fn learn(&mut self, k: usize) {
        // A server whose URIs carry its prefix is found by the prefix.
        let offers = match &self.members[k].state {
            State::Up(_) if self.members[k].uri_prefix.is_some() => false,
            State::Up(result) => result.pointer("/capabilities/resources").is_some(),
            _ => false,
        };
        if !offers {
            return;
        }
        for (listing, name) in [
            (Listing::Resources, method::RESOURCES_LIST),
            (Listing::Templates, method::RESOURCES_TEMPLATES_LIST),
        ] {
            let message = Message::request(0, name, Some(self.own_params()));
            self.send_server(k, message, Pending::Learn { listing });
        }
    }

    /// Server `k`'s answer to what it lists (`None`: an error, or gone).
    pub(super) async fn learnt(&mut self, k: usize, listing: Listing, result: Option<Value>) {
        let (array, key, template) = match listing {
            Listing::Templates => ("resourceTemplates", "uriTemplate", true),
            _ => ("resources", "uri", false),
        };
        let items = result
            .as_ref()
            .and_then(|r| r.get(array))
            .and_then(Value::as_array);
        for uri in items
            .into_iter()
            .flatten()
            .filter_map(|i| i.get(key)?.as_str())
        {
            self.owners.note(k, uri, template);
        }
        self.replay_unrouted().await;
    }

    /// Whether what the servers list is still being learnt.
    pub(super) fn learning(&self) -> bool {
        self.books
            .in_flight()
            .any(|(_, sent)| matches!(sent.what, Pending::Learn { .. }))
    }

    /// Keeps a read of a URI nobody is known to own, while learning;
    /// `false` when it cannot wait.
    pub(super) fn wait_for_owner(&mut self, request: &Request) -> bool {
        if !self.learning() || self.unrouted.len() >= UNROUTED_AT_MOST {
            return false;
        }
        self.unrouted.push(request.clone());
        true
    }

    /// Routes the reads that waited, once nothing is being learnt.
    pub(super) async fn replay_unrouted(&mut self) {
        if self.learning() {
            return;
        }
        for request in std::mem::take(&mut self.unrouted) {
            Box::pin(self.route(request)).await;
        }
    }
}
