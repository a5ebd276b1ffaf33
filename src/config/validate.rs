//! From the file as written to a checked [`Config`]: layers built, limits
//! checked, every problem reported with its place.

use super::file::ConfigFile;
use super::Config;
pub(crate) use mcp_chain_middleware::units::parse_duration;
use std::time::Duration;

/// Default cap on one message: large enough for any real tool result
/// (tens of MB pass), small enough that a runaway line cannot eat memory.
pub(crate) const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Default budget of big messages in flight in the whole process: four
/// messages of the default cap at once (the HTTP front's sessions share
/// it), a few hundred MiB at worst on a machine that runs servers anyway.
pub(crate) const DEFAULT_MAX_BYTES_IN_FLIGHT: usize = 4 * DEFAULT_MAX_MESSAGE_BYTES;

/// Smallest cap we accept: an initialize request must fit.
const MIN_MAX_MESSAGE_BYTES: u64 = 4 * 1024;

/// Default time to finish owed answers at shutdown, and then for the
/// server to exit after its stdin closed, before it is terminated.
pub(crate) const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Restarts allowed by default under `restart = "on-failure"`.
pub(crate) const DEFAULT_MAX_RESTARTS: u32 = 5;

/// First wait before a restart; it doubles each time.
pub(crate) const DEFAULT_RESTART_BACKOFF: Duration = Duration::from_millis(500);

/// A problem found while validating: where (a byte offset into the
/// file, when known) and what.
pub(crate) type Problem = (Option<usize>, String);

/// Checks `file`, read from `text` (where each problem is placed).
pub(super) fn validate(file: ConfigFile, text: &str) -> Result<Config, Vec<Problem>> {
    let mut problems = Vec::new();
    if file.upstream.is_some() && file.servers.is_some() {
        problems.push((
            None,
            "upstream, servers: give [upstream] (one server) or [servers.NAME] tables (many behind one), not both".to_owned(),
        ));
    }
    let upstream = file
        .upstream
        .and_then(|u| super::upstream::upstream(u, &mut problems));
    let gateway = super::servers::gateway(file.servers, file.gateway, &mut problems);

    let max_message_bytes = match file.proxy.max_message_bytes {
        None => DEFAULT_MAX_MESSAGE_BYTES,
        Some(n) if n < MIN_MAX_MESSAGE_BYTES => {
            problems.push((
                None,
                format!(
                    "proxy.max_message_bytes: {n} is too small; at least {MIN_MAX_MESSAGE_BYTES}"
                ),
            ));
            DEFAULT_MAX_MESSAGE_BYTES
        }
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let max_bytes_in_flight = match file.proxy.max_bytes_in_flight {
        None => DEFAULT_MAX_BYTES_IN_FLIGHT.max(max_message_bytes),
        Some(n) if (n as usize) < max_message_bytes => {
            problems.push((
                None,
                format!(
                    "proxy.max_bytes_in_flight: {n} is less than proxy.max_message_bytes ({max_message_bytes}): one message could never be taken"
                ),
            ));
            DEFAULT_MAX_BYTES_IN_FLIGHT
        }
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let shutdown_grace = match file.proxy.shutdown_grace.as_deref().map(parse_duration) {
        None => DEFAULT_SHUTDOWN_GRACE,
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            problems.push((None, format!("proxy.shutdown_grace: {e}")));
            DEFAULT_SHUTDOWN_GRACE
        }
    };

    let watch_config = file.proxy.watch_config;
    let front = super::front::front(file.front, &mut problems);
    let telemetry = super::telemetry::telemetry(file.telemetry, &mut problems);
    if telemetry.metrics_listen.is_some() && telemetry.metrics_listen == front.listen {
        problems.push((
            None,
            "telemetry.metrics_listen: the front listens there; metrics need an address of their own".to_owned(),
        ));
    }

    let console = super::console::console(file.console, front.oauth.is_some(), &mut problems);
    let state = super::state::state(file.state, &mut problems);

    let mut chain = Vec::with_capacity(file.middleware.len());
    for (index, entry) in file.middleware.into_iter().enumerate() {
        let offset = entry.span().start;
        let entry = entry.into_inner();
        let name = entry.type_name();
        match entry.validate() {
            Ok(layer) => chain.push(layer),
            Err(e) => {
                let offset = super::place::of(text, index, &e.at).unwrap_or(offset);
                problems.push((Some(offset), format!("middleware[{index}] ({name}): {e}")));
            }
        }
    }

    if let Err(e) = crate::layers::search_first(&chain, &chain) {
        problems.push((None, format!("middleware: {e}")));
    }
    for server in gateway.iter().flat_map(|g| &g.servers) {
        if let Err(e) = crate::layers::search_first(&server.chain, &server.chain)
            .and_then(|()| crate::layers::search_first(&chain, &server.chain))
        {
            problems.push((None, format!("servers.{}.middleware: {e}", server.name)));
        }
    }

    let asks_on_page = chain.iter().any(|entry: &crate::layers::Entry| {
        matches!(&entry.layer, crate::layers::AnyLayer::Approve(layer) if layer.asks_on_page())
    });
    if asks_on_page && console.is_none() {
        problems.push((
            None,
            "approve: ask names \"page\", the approval page, and there is no [console] to serve it (add [console], listen = \"127.0.0.1:0\")".to_owned(),
        ));
    }

    if problems.is_empty() {
        Ok(Config {
            upstream,
            max_message_bytes,
            max_bytes_in_flight,
            shutdown_grace,
            front,
            telemetry,
            gateway,
            console,
            state,
            chain,
            path: None,
            watch_config: watch_config.unwrap_or(false),
            sources: super::Sources::default(),
        })
    } else {
        Err(problems)
    }
}
