//! What the client sees of each server's listings: tools and prompts
//! named `{prefix}{separator}{name}`, cursors mcp-chain owns, and who owns
//! each resource URI.

use crate::config::{name_chars, MAX_NAME_LEN};
use mcp_chain_middleware::message::method;
use mcp_chain_middleware::servers::ServerNames;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// The listings merged across servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Listing {
    Tools,
    Prompts,
    Resources,
    Templates,
    /// `tasks/list`: each server's tasks, their ids its own.
    Tasks,
}

impl Listing {
    pub(super) fn of(method: &str) -> Option<Self> {
        Some(match method {
            method::TOOLS_LIST => Self::Tools,
            method::PROMPTS_LIST => Self::Prompts,
            method::RESOURCES_LIST => Self::Resources,
            method::RESOURCES_TEMPLATES_LIST => Self::Templates,
            method::TASKS_LIST => Self::Tasks,
            _ => return None,
        })
    }

    /// The array a result of this listing carries.
    pub(super) fn array(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Prompts => "prompts",
            Self::Resources => "resources",
            Self::Templates => "resourceTemplates",
            Self::Tasks => "tasks",
        }
    }
}

/// How a server's names become the client's, and back: the gateway's
/// [`ServerNames`], which the shared chain's layers read too.
pub(super) struct Names {
    names: Arc<ServerNames>,
}

impl Names {
    pub(super) fn new(names: Arc<ServerNames>) -> Self {
        Self { names }
    }

    /// The client's name for server `k`'s `name`; `None` when it would not
    /// be a valid name (too long, a character a name may not hold).
    pub(super) fn join(&self, k: usize, name: &str) -> Option<String> {
        let joined = self.names.join(k, name);
        let valid = !name.is_empty() && joined.len() <= MAX_NAME_LEN && name_chars(&joined);
        valid.then_some(joined)
    }

    /// The client's id for server `k`'s task `id`: its prefix before it, so
    /// one server's task id can never address another's.
    pub(super) fn task(&self, k: usize, id: &str) -> String {
        self.names.join(k, id)
    }

    /// Which server a client's name is of, and the server's name (see
    /// [`ServerNames::split`]).
    pub(super) fn split<'a>(&self, name: &'a str) -> Option<(usize, &'a str)> {
        self.names.split(name)
    }
}

/// Cursors handed to the client: opaque tokens for what follows a merged
/// page (each server with more to list, and its own cursor), kept while
/// [`KEPT`] newer ones are not; a token not issued here, or forgotten, is
/// refused rather than guessed.
pub(super) struct Cursors {
    secret: String,
    next: u64,
    issued: VecDeque<(String, Continuation)>,
}

/// What follows a merged page: (server, its cursor) for each server with
/// more.
pub(super) type Continuation = Vec<(usize, serde_json::Value)>;

/// Resource URIs and templates whose owner is kept, per client session.
const OWNED_AT_MOST: usize = 100_000;

/// Cursors remembered per client session.
const KEPT: usize = 1024;

impl Cursors {
    pub(super) fn new(secret: String) -> Self {
        Self {
            secret,
            next: 0,
            issued: VecDeque::new(),
        }
    }

    pub(super) fn issue(&mut self, more: Continuation) -> String {
        self.next += 1;
        let token = format!("mcp-chain.{}.{}", self.next, self.secret);
        if self.issued.len() == KEPT {
            self.issued.pop_front();
        }
        self.issued.push_back((token.clone(), more));
        token
    }

    pub(super) fn find(&self, token: &str) -> Option<Continuation> {
        self.issued
            .iter()
            .find(|(t, _)| t == token)
            .map(|(_, more)| more.clone())
    }
}

/// Which server owns each resource URI and template the listings named.
/// A URI two servers list is owned by neither (reading it is an error).
/// What the servers list decides how much is kept: at most
/// [`OWNED_AT_MOST`] URIs and templates; past that, a new one is neither
/// listed nor routed (said once on stderr).
#[derive(Default)]
pub(super) struct Owners {
    uris: HashMap<String, usize>,
    templates: HashMap<String, usize>,
    clashes: HashSet<String>,
    /// Said once that the bound was reached.
    full: bool,
}

impl Owners {
    /// Notes that server `k` lists `uri` (a template, with `template`);
    /// whether it may be listed (no other server lists it).
    pub(super) fn note(&mut self, k: usize, uri: &str, template: bool) -> bool {
        if self.clashes.contains(uri) {
            return false;
        }
        let known = self.uris.contains_key(uri) || self.templates.contains_key(uri);
        if !known && self.uris.len() + self.templates.len() + self.clashes.len() >= OWNED_AT_MOST {
            if !std::mem::replace(&mut self.full, true) {
                tracing::warn!(kept = OWNED_AT_MOST, "gateway: more resources than mcp-chain keeps owners for; those past the bound are left out");
            }
            return false;
        }
        let map = match template {
            true => &mut self.templates,
            false => &mut self.uris,
        };
        match map.get(uri) {
            Some(&owner) if owner != k => {
                map.remove(uri);
                self.clashes.insert(uri.to_owned());
                tracing::warn!(uri = %mcp_chain_middleware::shown::shown(uri, 200), "gateway: two servers list the same resource; it is listed by neither and reading it is refused");
                false
            }
            _ => {
                map.insert(uri.to_owned(), k);
                true
            }
        }
    }

    /// The server that owns `uri`: one that listed it, else one whose
    /// template's fixed start it begins with (the longest).
    pub(super) fn of(&self, uri: &str) -> Option<usize> {
        if self.clashes.contains(uri) {
            return None;
        }
        if let Some(&k) = self.uris.get(uri) {
            return Some(k);
        }
        if let Some(&k) = self.templates.get(uri) {
            return Some(k);
        }
        self.templates
            .iter()
            .filter_map(|(template, &k)| {
                let fixed = template.split('{').next().unwrap_or(template);
                (!fixed.is_empty() && uri.starts_with(fixed)).then_some((fixed.len(), k))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, k)| k)
    }

    /// Forgets what server `k` listed (it is gone).
    pub(super) fn forget(&mut self, k: usize) {
        self.uris.retain(|_, owner| *owner != k);
        self.templates.retain(|_, owner| *owner != k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_joined_name_past_the_limits_is_not_offered() {
        let names = Names::new(Arc::new(ServerNames::new(
            "__",
            &[("time".into(), "time".into())],
        )));
        assert_eq!(names.join(0, "now").as_deref(), Some("time__now"));
        assert_eq!(names.split("time__now"), Some((0, "now")));
        assert_eq!(names.join(0, &"x".repeat(124)), None, "past 128");
        assert_eq!(names.join(0, "has space"), None);
        assert_eq!(names.join(0, ""), None);
    }

    #[test]
    fn a_uri_two_servers_list_is_owned_by_neither() {
        let mut owners = Owners::default();
        assert!(owners.note(0, "file:///a", false));
        assert!(owners.note(0, "file:///a", false), "listed again");
        assert!(!owners.note(1, "file:///a", false));
        assert_eq!(owners.of("file:///a"), None);
        assert!(owners.note(1, "db://{table}", true));
        assert_eq!(owners.of("db://users"), Some(1));
        owners.forget(1);
        assert_eq!(owners.of("db://users"), None);
    }

    #[test]
    fn the_owners_kept_are_bounded() {
        let mut owners = Owners::default();
        for n in 0..OWNED_AT_MOST {
            assert!(owners.note(0, &format!("file:///{n}"), false));
        }
        assert!(!owners.note(0, "file:///one-more", false));
        assert!(owners.note(0, "file:///7", false), "one already kept");
        assert_eq!(owners.of("file:///one-more"), None);
    }

    #[test]
    fn only_issued_cursors_are_found() {
        let mut cursors = Cursors::new("s3".into());
        let token = cursors.issue(vec![(2, serde_json::json!("p2"))]);
        assert_eq!(
            cursors.find(&token),
            Some(vec![(2, serde_json::json!("p2"))])
        );
        assert_eq!(cursors.find("mcp-chain.1.other"), None);
    }
}
