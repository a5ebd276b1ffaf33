//! The one table of the layers a `[[middleware]]` entry can name.
//!
//! Each line gives the layer's `type` in the TOML, its config (the serde
//! mirror, with a `validate` that compiles it) and the validated layer. From
//! it come the config file's `MiddlewareFile`, the validated `AnyLayer`, and
//! how each wraps the rest of a chain: adding a layer is adding a line here.

use crate::callers::{Applies, Callers, Who};
use crate::chain::ChainService;
use mcp_chain_middleware::config_error::ConfigError;
use mcp_chain_middleware::session::{ServerInfo, SessionInfo};
use mcp_chain_middleware::{
    approve, audit, filter, limit, log, pin, rate_limit, rewrite, scan, search, timeout, validate,
};
use serde::Deserialize;
use tower::Layer;

/// A layer's instance for one session of the HTTP front.
trait PerSession {
    fn for_session(&self, session: &SessionInfo) -> Self;
}

/// Layers whose state is what the config says, nothing learned per
/// session: every session shares them.
macro_rules! shared_across_sessions {
    ($($layer:ty),*) => {$(
        impl PerSession for $layer {
            fn for_session(&self, _: &SessionInfo) -> Self {
                self.clone()
            }
        }
    )*};
}

/// Layers that learn about their session (requests held, progress
/// watched, schemas listed).
macro_rules! fresh_per_session {
    ($($layer:ty),*) => {$(
        impl PerSession for $layer {
            fn for_session(&self, _: &SessionInfo) -> Self {
                <$layer>::for_session(self)
            }
        }
    )*};
}

/// The audit shares its file and says, in every line, which session.
impl PerSession for audit::AuditLayer {
    fn for_session(&self, session: &SessionInfo) -> Self {
        audit::AuditLayer::for_session(self, session)
    }
}

shared_across_sessions!(
    filter::FilterLayer,
    rewrite::RewriteLayer,
    scan::ScanLayer,
    limit::LimitLayer,
    log::LogLayer
);
/// A rate limit's buckets may be its caller's (`scope = "principal"`).
impl PerSession for rate_limit::RateLimitLayer {
    fn for_session(&self, session: &SessionInfo) -> Self {
        let caller = match (&session.principal, &session.token) {
            (Some(p), _) => Some(format!("{}\u{0}{}", p.issuer, p.subject)),
            (None, Some(token)) => Some(format!("token\u{0}{token}")),
            (None, None) => None,
        };
        rate_limit::RateLimitLayer::for_session(self, caller.as_deref())
    }
}

fresh_per_session!(
    timeout::TimeoutLayer,
    validate::ValidateLayer,
    pin::PinLayer,
    search::SearchLayer
);

/// What a person allows stays in the session; the approval page names its
/// caller.
impl PerSession for approve::ApproveLayer {
    fn for_session(&self, session: &SessionInfo) -> Self {
        let caller = match (&session.principal, &session.token) {
            (Some(p), _) => Some(match &p.client_id {
                Some(client) if *client != p.subject => format!("{} (client {client})", p.subject),
                _ => p.subject.clone(),
            }),
            (None, Some(token)) => Some(format!("token {token}")),
            (None, None) => None,
        };
        approve::ApproveLayer::for_session(self, caller)
    }
}

/// A layer's instance in the own chain of a gateway's server: the audit
/// names the server in each line, approve in its question (and binds its
/// grants to it); the others are as they are (what they keep is already
/// the server's: its chain is its own).
trait PerServer: Clone {
    fn for_server(&self, _: &ServerInfo) -> Self {
        self.clone()
    }
}

impl PerServer for audit::AuditLayer {
    fn for_server(&self, server: &ServerInfo) -> Self {
        audit::AuditLayer::for_server(self, &server.name)
    }
}

impl PerServer for approve::ApproveLayer {
    fn for_server(&self, server: &ServerInfo) -> Self {
        approve::ApproveLayer::for_server(self, server)
    }
}

impl PerServer for filter::FilterLayer {}
impl PerServer for rewrite::RewriteLayer {}
impl PerServer for scan::ScanLayer {
    fn for_server(&self, _: &ServerInfo) -> Self {
        scan::ScanLayer::for_server(self)
    }
}
impl PerServer for search::SearchLayer {
    fn for_server(&self, _: &ServerInfo) -> Self {
        self.for_session()
    }
}
impl PerServer for rate_limit::RateLimitLayer {
    fn for_server(&self, server: &ServerInfo) -> Self {
        rate_limit::RateLimitLayer::for_server(self, &server.name)
    }
}
impl PerServer for timeout::TimeoutLayer {}
impl PerServer for limit::LimitLayer {}
impl PerServer for validate::ValidateLayer {}
impl PerServer for pin::PinLayer {}
impl PerServer for log::LogLayer {}

/// How a layer's server → client half is built: most layers the same way
/// as their client → server half; a layer that speaks to the client first
/// (`pin`, `approve`) keeps the way there (see the middleware's `peer`).
trait TowardClient {
    fn toward_client(&self, inner: ChainService) -> ChainService;
}

macro_rules! same_both_ways {
    ($($layer:ty),*) => {$(
        impl TowardClient for $layer {
            fn toward_client(&self, inner: ChainService) -> ChainService {
                ChainService::new(self.layer(inner))
            }
        }
    )*};
}

macro_rules! keeps_the_way_to_the_client {
    ($($layer:ty),*) => {$(
        impl TowardClient for $layer {
            fn toward_client(&self, inner: ChainService) -> ChainService {
                ChainService::new(<$layer>::toward_client(self, inner))
            }
        }
    )*};
}

same_both_ways!(
    audit::AuditLayer,
    filter::FilterLayer,
    rewrite::RewriteLayer,
    scan::ScanLayer,
    search::SearchLayer,
    rate_limit::RateLimitLayer,
    timeout::TimeoutLayer,
    limit::LimitLayer,
    validate::ValidateLayer,
    log::LogLayer
);
keeps_the_way_to_the_client!(pin::PinLayer, approve::ApproveLayer);

macro_rules! layers {
    ($($variant:ident => $name:literal, $config:ty, $layer:ty;)*) => {
        /// A `[[middleware]]` table's layer as written; `type` picks it.
        #[derive(Debug, Deserialize)]
        #[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
        pub(crate) enum LayerFile {
            $($variant($config),)*
        }

        /// One validated `[[middleware]]` entry.
        #[derive(Debug, Clone)]
        pub(crate) enum AnyLayer {
            $($variant($layer),)*
        }

        impl LayerFile {
            pub(crate) fn type_name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $name,)*
                }
            }

            /// Checks the layer's settings and compiles what they name
            /// (patterns, durations, rates) once.
            fn validate(&self) -> Result<AnyLayer, ConfigError> {
                Ok(match self {
                    $(Self::$variant(config) => AnyLayer::$variant(config.validate()?),)*
                })
            }
        }

        impl AnyLayer {
            pub(crate) fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $name,)*
                }
            }

            /// The layer for one client session of the HTTP front (see
            /// each layer's `for_session`; a layer without state of its
            /// own is shared).
            pub(crate) fn for_session(&self, session: &SessionInfo) -> Self {
                match self {
                    $(Self::$variant(layer) => Self::$variant(PerSession::for_session(layer, session)),)*
                }
            }

            /// The layer in the own chain of a gateway's server.
            pub(crate) fn for_server(&self, server: &ServerInfo) -> Self {
                match self {
                    $(Self::$variant(layer) => Self::$variant(PerServer::for_server(layer, server)),)*
                }
            }

            /// This layer around `inner`, in the client → server stack.
            pub(crate) fn wrap(&self, inner: ChainService) -> ChainService {
                match self {
                    $(Self::$variant(layer) => ChainService::new(layer.layer(inner)),)*
                }
            }

            /// This layer around `inner`, in the server → client stack.
            pub(crate) fn wrap_toward_client(&self, inner: ChainService) -> ChainService {
                match self {
                    $(Self::$variant(layer) => TowardClient::toward_client(layer, inner),)*
                }
            }
        }
    };
}

/// One `[[middleware]]` table as written: the layer, and whom it applies
/// to (`when`, `unless`: see `callers`).
#[derive(Debug, Deserialize)]
pub(crate) struct MiddlewareFile {
    #[serde(flatten)]
    layer: LayerFile,
    when: Option<Callers>,
    unless: Option<Callers>,
}

/// One validated `[[middleware]]` entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) layer: AnyLayer,
    pub(crate) applies: Applies,
}

impl MiddlewareFile {
    pub(crate) fn type_name(&self) -> &'static str {
        self.layer.type_name()
    }

    /// Checks the entry and compiles what it names once.
    pub(crate) fn validate(&self) -> Result<Entry, ConfigError> {
        let applies = Applies {
            when: self.when.clone(),
            unless: self.unless.clone(),
        };
        applies.check()?;
        Ok(Entry {
            layer: self.layer.validate()?,
            applies,
        })
    }
}

/// The layers every session's chain is built from, as the config names
/// them now. A reload makes the next one: an entry whose table is what it
/// was, at the same place, is the running one (the same `Arc`, so its
/// state is kept, here and in every session); any other is new.
#[derive(Debug, Default)]
pub(crate) struct Policy {
    pub(crate) entries: Vec<std::sync::Arc<Entry>>,
}

impl Policy {
    pub(crate) fn of(entries: &[Entry]) -> Self {
        Self {
            entries: entries.iter().cloned().map(std::sync::Arc::new).collect(),
        }
    }
}

/// The layers that judge a tool by its name. Before a `search` layer they
/// would judge `search_tools` and `call_tool` rather than the tool called
/// (and a filter's hidden tool would be found and called), so a chain
/// that puts one there is refused.
fn judges_tools(layer: &AnyLayer) -> bool {
    matches!(
        layer,
        AnyLayer::Filter(_)
            | AnyLayer::Pin(_)
            | AnyLayer::Scan(_)
            | AnyLayer::Validate(_)
            | AnyLayer::Approve(_)
    )
}

/// A guard placed where it would judge `search`'s own tools.
#[derive(Debug, thiserror::Error)]
#[error("`{guard}` comes before `search`, so it would judge search_tools and call_tool, not the tool called; put search before it, in the shared chain when it is there (the layers after search judge call_tool as the tool it names)")]
pub(crate) struct GuardBeforeSearch {
    guard: &'static str,
}

/// `Err` naming the first layer of `outer` (a chain outside the one with
/// a `search` layer, or the same chain before it) that judges tools, when
/// `searching` holds a `search` layer.
pub(crate) fn search_first(outer: &[Entry], searching: &[Entry]) -> Result<(), GuardBeforeSearch> {
    let Some(at) = searching
        .iter()
        .position(|e| matches!(e.layer, AnyLayer::Search(_)))
    else {
        return Ok(());
    };
    let before = match std::ptr::eq(outer, searching) {
        true => &outer[..at],
        false => outer,
    };
    match before.iter().find(|e| judges_tools(&e.layer)) {
        Some(guard) => Err(GuardBeforeSearch {
            guard: guard.layer.name(),
        }),
        None => Ok(()),
    }
}

/// The layers of `entries` that apply to a session whose caller is `who`.
pub(crate) fn applying(entries: &[Entry], who: Option<Who<'_>>) -> Vec<AnyLayer> {
    entries
        .iter()
        .filter(|e| e.applies.to(who))
        .map(|e| e.layer.clone())
        .collect()
}

layers! {
    Audit => "audit", audit::AuditConfig, audit::AuditLayer;
    Filter => "filter", filter::FilterConfig, filter::FilterLayer;
    Rewrite => "rewrite", rewrite::RewriteConfig, rewrite::RewriteLayer;
    Scan => "scan", scan::ScanConfig, scan::ScanLayer;
    Search => "search", search::SearchConfig, search::SearchLayer;
    RateLimit => "rate_limit", rate_limit::RateLimitConfig, rate_limit::RateLimitLayer;
    Timeout => "timeout", timeout::TimeoutConfig, timeout::TimeoutLayer;
    Limit => "limit", limit::LimitConfig, limit::LimitLayer;
    Validate => "validate", validate::ValidateConfig, validate::ValidateLayer;
    Pin => "pin", pin::PinConfig, pin::PinLayer;
    Approve => "approve", approve::ApproveConfig, approve::ApproveLayer;
    Log => "log", log::LogConfig, log::LogLayer;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(tables: &[&str]) -> Vec<Entry> {
        tables
            .iter()
            .map(|t| {
                toml::from_str::<MiddlewareFile>(t)
                    .expect("parses")
                    .validate()
                    .expect("valid")
            })
            .collect()
    }

    #[test]
    fn a_guard_before_search_is_refused_one_after_it_is_not() {
        let search = "type = \"search\"";
        let filter = "type = \"filter\"\ntools = { deny = [\"x\"] }";
        let audit = "type = \"rate_limit\"\nrules = [{ rate = \"1/s\" }]";
        let before = entries(&[audit, filter, search]);
        let refused = search_first(&before, &before).unwrap_err().to_string();
        assert!(
            refused.starts_with("`filter` comes before `search`"),
            "{refused}"
        );
        let after = entries(&[audit, search, filter]);
        assert!(search_first(&after, &after).is_ok());
        // A gateway: the shared chain is outside every server's own.
        let shared = entries(&[filter]);
        let own = entries(&[search]);
        assert!(search_first(&shared, &own).is_err());
        assert!(
            search_first(&own, &shared).is_ok(),
            "search shared, guards in a server's chain"
        );
    }

    /// The name each line gives is the `type` serde reads (a layer that
    /// needs a setting is refused for that, not for its type).
    #[test]
    fn each_type_name_is_the_one_serde_reads() {
        for name in [
            "audit",
            "filter",
            "rewrite",
            "scan",
            "search",
            "rate_limit",
            "timeout",
            "limit",
            "validate",
            "pin",
            "approve",
            "log",
        ] {
            match toml::from_str::<MiddlewareFile>(&format!("type = \"{name}\"")) {
                Ok(entry) => assert_eq!(entry.type_name(), name),
                Err(e) => assert!(!e.to_string().contains("unknown variant"), "{name}: {e}"),
            }
        }
        let unknown = toml::from_str::<MiddlewareFile>("type = \"nope\"");
        assert!(unknown.is_err_and(|e| e.to_string().contains("unknown variant")));
    }
}
