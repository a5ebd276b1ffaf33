//! Which server of a gateway (`[servers.NAME]`) a name belongs to.
//!
//! A gateway offers each server's tools and prompts (and task ids) as
//! `{prefix}{separator}{name}`. The gateway routes by that prefix, and the
//! layers of the shared chain, which see the names the client sees, read
//! the same prefix to say which server a message is for: the audit's
//! `server` field, a `rate_limit` with `scope = "server"`. One table, read
//! by both, so they can never disagree. A server's own chain knows its
//! server without reading names: its layers are told (`for_server`).

use std::sync::{Arc, OnceLock};

/// The servers' names and prefixes, in config order.
#[derive(Debug)]
pub struct ServerNames {
    separator: String,
    servers: Vec<Named>,
}

#[derive(Debug)]
struct Named {
    name: String,
    /// `{prefix}{separator}`; empty for the server without a prefix.
    head: String,
    /// `NAME+`, when its resource URIs are offered so.
    uri_head: Option<String>,
}

impl ServerNames {
    /// `servers`: each server's name and prefix, in order.
    pub fn new(separator: &str, servers: &[(String, String)]) -> Self {
        let servers = servers
            .iter()
            .map(|(name, prefix)| Named {
                name: name.clone(),
                head: match prefix.is_empty() {
                    true => String::new(),
                    false => format!("{prefix}{separator}"),
                },
                uri_head: None,
            })
            .collect();
        Self {
            separator: separator.to_owned(),
            servers,
        }
    }

    /// Server `k`'s resource URIs are offered as `{uri_head}scheme://…`.
    pub fn with_uri_head(mut self, k: usize, uri_head: String) -> Self {
        self.servers[k].uri_head = Some(uri_head);
        self
    }

    /// The name of the server a URI's prefix names (`resources = "prefix"`).
    pub fn server_of_uri(&self, uri: &str) -> Option<&str> {
        self.servers.iter().find_map(|s| {
            let head = s.uri_head.as_deref()?;
            (uri.len() > head.len() && uri.starts_with(head)).then_some(s.name.as_str())
        })
    }

    pub fn separator(&self) -> &str {
        &self.separator
    }

    /// Server `k`'s name (the table's name in the config).
    pub fn name(&self, k: usize) -> &str {
        &self.servers[k].name
    }

    /// How many servers there are.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The client's name for server `k`'s `name` (no check of its length
    /// or characters: the gateway's listing does that).
    pub fn join(&self, k: usize, name: &str) -> String {
        let head = &self.servers[k].head;
        let mut joined = String::with_capacity(head.len() + name.len());
        joined.push_str(head);
        joined.push_str(name);
        joined
    }

    /// Which server a client's name is of, and the server's own name; the
    /// longest prefix that fits wins (`a` and `a__b` may both be
    /// prefixes). The server without a prefix owns what no prefix fits.
    pub fn split<'a>(&self, name: &'a str) -> Option<(usize, &'a str)> {
        let mut found: Option<(usize, usize)> = None;
        for (k, server) in self.servers.iter().enumerate() {
            let head = &server.head;
            if !head.is_empty()
                && name.len() > head.len()
                && name.starts_with(head.as_str())
                && found.is_none_or(|(_, len)| head.len() > len)
            {
                found = Some((k, head.len()));
            }
        }
        match found {
            Some((k, len)) => Some((k, &name[len..])),
            None => {
                let bare = self.servers.iter().position(|s| s.head.is_empty())?;
                Some((bare, name))
            }
        }
    }

    /// The name of the server a client's name is of.
    pub fn server_of(&self, name: &str) -> Option<&str> {
        self.split(name).map(|(k, _)| self.name(k))
    }
}

static INSTALLED: OnceLock<Arc<ServerNames>> = OnceLock::new();

/// Installs the process's gateway names (once: `[servers.*]` is not
/// changed by a reload).
pub fn install(names: Arc<ServerNames>) {
    let _ = INSTALLED.set(names);
}

/// The gateway names, when the process serves a gateway.
pub fn installed() -> Option<&'static Arc<ServerNames>> {
    INSTALLED.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(servers: &[(&str, &str)]) -> ServerNames {
        let servers: Vec<(String, String)> = servers
            .iter()
            .map(|(n, p)| (n.to_string(), p.to_string()))
            .collect();
        ServerNames::new("__", &servers)
    }

    #[test]
    fn the_longest_prefix_wins_and_the_bare_server_takes_the_rest() {
        let names = names(&[("a", "a"), ("ab", "a__b"), ("time", "time")]);
        assert_eq!(names.join(2, "now"), "time__now");
        assert_eq!(names.split("time__now"), Some((2, "now")));
        assert_eq!(names.split("a__b__x"), Some((1, "x")));
        assert_eq!(names.split("a__x"), Some((0, "x")));
        assert_eq!(names.split("other__x"), None);
        assert_eq!(names.split("time__"), None, "a prefix alone names nothing");
        assert_eq!(names.server_of("a__b__x"), Some("ab"));
        let bare = self::names(&[("files", ""), ("t", "t")]);
        assert_eq!(bare.split("read"), Some((0, "read")));
        assert_eq!(bare.split("t__now"), Some((1, "now")));
        assert_eq!(bare.join(0, "read"), "read");
        let uris = bare.with_uri_head(0, "files+".into());
        assert_eq!(uris.server_of_uri("files+file:///a"), Some("files"));
        assert_eq!(uris.server_of_uri("file:///a"), None);
    }
}
