//! [`AuditLayer`]: the open log and settings, shared by every service the
//! layer builds (both directions, every clone), so all lines go through one
//! lock and one file handle.

use super::config::OnWriteError;
use super::record::string_field;
use super::service::Audit;
use super::sink::Sink;
use crate::session::SessionInfo;
use std::sync::Arc;
use tower::Layer;

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) sink: Sink,
    pub(super) payloads: bool,
    pub(super) on_write_error: OnWriteError,
}

/// Builds [`Audit`] services.
#[derive(Debug, Clone)]
pub struct AuditLayer {
    shared: Arc<Shared>,
    /// Served over HTTP: the session's fields, written into every line;
    /// in a gateway server's own chain, its `server` too.
    session: Option<Arc<[u8]>>,
    /// In a gateway's shared chain: each line's `server` read from the
    /// name it targets (false in a server's own chain, which knows it).
    names_server: bool,
}

impl AuditLayer {
    /// The file this layer appends to; `None` when it writes to stderr.
    pub fn file(&self) -> Option<&std::path::Path> {
        self.shared.sink.file()
    }

    pub(super) fn new(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
            session: None,
            names_server: true,
        }
    }

    /// The layer for one client session of the HTTP front: the same file;
    /// every line also says `session`, `client` and (with tokens) `token`,
    /// or, for a caller an OAuth token let in, `subject`, `client_id`,
    /// `issuer` and `scopes`.
    pub fn for_session(&self, session: &SessionInfo) -> Self {
        let mut fields = Vec::new();
        string_field(&mut fields, "session", Some(&session.id));
        string_field(&mut fields, "client", Some(&session.client));
        string_field(&mut fields, "token", session.token.as_deref());
        if let Some(principal) = &session.principal {
            string_field(&mut fields, "subject", Some(&principal.subject));
            string_field(&mut fields, "client_id", principal.client_id.as_deref());
            string_field(&mut fields, "issuer", Some(&principal.issuer));
            string_field(&mut fields, "scopes", Some(&principal.scopes.join(" ")));
        }
        Self {
            shared: self.shared.clone(),
            session: Some(fields.into()),
            names_server: self.names_server,
        }
    }

    /// The layer in the own chain of a gateway's server `server`: every
    /// line says `"server": server` (after the session's fields).
    pub fn for_server(&self, server: &str) -> Self {
        let mut fields = self.session.as_deref().unwrap_or_default().to_vec();
        string_field(&mut fields, "server", Some(server));
        Self {
            shared: self.shared.clone(),
            session: Some(fields.into()),
            names_server: false,
        }
    }
}

impl AuditLayer {
    /// Writes a line about mcp-chain itself, not a message:
    /// `{"time":…,"kind":"event","event":event,…fields}` (a config reload,
    /// and why one was refused), to the file every session shares.
    pub fn event(&self, event: &str, fields: &[(&str, &str)]) -> std::io::Result<()> {
        self.shared.sink.write_now(|out| {
            super::record::event_line(out, event, fields);
        })
    }
}

impl<S> Layer<S> for AuditLayer {
    type Service = Audit<S>;

    fn layer(&self, inner: S) -> Audit<S> {
        Audit::new(
            inner,
            self.shared.clone(),
            self.session.clone(),
            self.names_server,
        )
    }
}
