//! `mcp-chain check`: the effective configuration, as a person reads it:
//! the upstream (and for a URL, the transport and the names of the headers,
//! never their values), the relay's limits, the chain in order.

use crate::cli::ArgError;
use crate::config::{Config, Envelope, Transport, UpstreamConfig};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

pub(crate) fn run(
    config: &Config,
    upstream: &Result<UpstreamConfig, ArgError>,
    list: bool,
) -> ExitCode {
    let origin = config.path.as_ref().map_or_else(
        || "(no config file)".to_owned(),
        |p| p.display().to_string(),
    );
    let mut report = format!("{origin}: ok\n");
    match (upstream, &config.gateway) {
        (_, Some(gateway)) => servers(&mut report, gateway),
        (Ok(upstream), None) => describe(&mut report, "upstream", "  ", upstream),
        (Err(ArgError::NoServer), None) => {
            report += "upstream: none (give one after `--` when running)\n";
        }
        (Err(e), None) => {
            eprintln!("mcp-chain: {e}");
            return ExitCode::FAILURE;
        }
    }
    let _ = writeln!(
        report,
        "proxy: max_message_bytes = {}, shutdown_grace = {:?}, watch_config = {}",
        config.max_message_bytes, config.shutdown_grace, config.watch_config
    );
    let state = match crate::platform::dirs::state_dir() {
        Ok(dir) => dir.display().to_string(),
        Err(why) => why.to_string(),
    };
    let _ = writeln!(
        report,
        "state directory (${{MCP_CHAIN_STATE_DIR}}): {state}"
    );
    let front = &config.front;
    if let Some(listen) = front.listen {
        let legacy = if front.legacy_sse {
            ", legacy HTTP+SSE at /sse"
        } else {
            ""
        };
        let _ = writeln!(report, "front: http://{listen}{}{legacy}", front.path);
        let tokens = match front.tokens.len() {
            0 => "none".to_owned(),
            n => format!("{n} (not shown)"),
        };
        let _ = writeln!(
            report,
            "  tokens: {tokens}; max_sessions = {}, max_connections = {}, session_idle = {:?}, init_timeout = {:?}",
            front.max_sessions, front.max_connections, front.session_idle, front.init_timeout
        );
        if let Some(max) = front.max_sessions_per_principal {
            let across = match config.state.is_some() {
                true => "every replica ([state])",
                false => "this replica",
            };
            let _ = writeln!(
                report,
                "  max_sessions_per_principal = {max}, counted on {across}"
            );
        }
    }
    if config.chain.is_empty() {
        report += "chain: empty (a transparent relay)\n";
    } else {
        report += "chain, client → server (the server → client path is the reverse):\n";
        for (i, entry) in config.chain.iter().enumerate() {
            let name = entry.layer.name();
            match entry.applies.is_everyone() {
                true => {
                    let _ = writeln!(report, "  {}. {name}", i + 1);
                }
                // Over stdio there is no caller (see `callers`).
                false => {
                    let _ = writeln!(report, "  {}. {name}: {}", i + 1, entry.applies);
                }
            }
        }
    }
    if let Some(oauth) = &config.front.oauth {
        let _ = writeln!(
            report,
            "front.oauth: tokens from {} for {} (JWTs: {}; introspection: {}); required scopes: {}",
            oauth.issuer,
            oauth.audience,
            oauth.algorithms.join(", "),
            oauth
                .introspection
                .as_ref()
                .map_or("off".to_owned(), |i| i.url.to_string()),
            if oauth.required_scopes.is_empty() {
                "none".to_owned()
            } else {
                oauth.required_scopes.join(" ")
            }
        );
    }
    telemetry(&mut report, config);
    match &config.console {
        Some(console) => {
            let open = match console.open {
                crate::config::OpenAt::FirstPending => {
                    "the browser opened at the first call waiting"
                }
                crate::config::OpenAt::Never => "the URL printed only",
            };
            let _ = writeln!(
                report,
                "console: the approval page on {} ({open})",
                console.listen
            );
        }
        None => report.push_str("console: off\n"),
    }
    match &config.state {
        // Never the URL's user or password, nor the key.
        Some(state) => {
            let fallback = match state.fallback {
                mcp_chain_middleware::shared::Fallback::Refuse => "refuse",
                mcp_chain_middleware::shared::Fallback::Local => "local",
            };
            let _ = writeln!(
                report,
                "state: rate limits shared by the replicas on {} (prefix {:?}, timeout {}, on_unavailable = {fallback:?})",
                state.shown_url(),
                state.prefix,
                mcp_chain_middleware::units::DisplayDuration(state.timeout),
            );
        }
        None => report.push_str("state: each process its own (no [state])\n"),
    }
    let mut listed_ok = true;
    if list {
        let served = match (upstream, &config.gateway) {
            (_, Some(gateway)) => Some((
                crate::relay::Served::Many(crate::gateway::Gateway::new(config, gateway.clone())),
                gateway.startup_timeout + LIST_WAIT,
            )),
            (Ok(upstream), None) => Some((crate::relay::Served::One(upstream.clone()), LIST_WAIT)),
            (Err(_), None) => None,
        };
        match served.map(|(served, wait)| crate::listed::report(config, &served, wait)) {
            Some(Ok(listed)) => report.push_str(&listed),
            Some(Err(e)) => {
                listed_ok = false;
                let _ = writeln!(report, "listed: failed: {e}");
            }
            None => report.push_str("listed: no server to list\n"),
        }
    }
    // `check` prints its report on stdout: it is not a proxy session.
    if std::io::stdout()
        .lock()
        .write_all(report.as_bytes())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    match listed_ok {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

/// How long `--list` waits for the listings (past a gateway's start-up).
const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What telemetry would do, the `OTEL_*` variables applied (endpoints
/// without a password or query; OTLP headers never).
fn telemetry(report: &mut String, config: &Config) {
    use crate::config::{shown_endpoint, Otlp};
    let env = |name: &str| std::env::var(name).ok();
    let Some(t) = config.telemetry.resolve(env) else {
        report.push_str("telemetry: off\n");
        return;
    };
    if cfg!(not(feature = "telemetry")) {
        report.push_str("telemetry: configured, but this build has none (the `telemetry` feature); mcp-chain will not start\n");
        return;
    }
    let otlp = |otlp: &Option<Otlp>, signal: &str| match otlp {
        Some(Otlp::Url(base)) => format!(
            "OTLP/HTTP to {}v1/{signal}",
            shown_endpoint(base).trim_end_matches('/').to_owned() + "/"
        ),
        Some(Otlp::FromEnvironment) => {
            let var = format!("OTEL_EXPORTER_OTLP_{}_ENDPOINT", signal.to_uppercase());
            let named = env(&var).or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"));
            let shown = named
                .and_then(|u| url::Url::parse(u.trim()).ok())
                .map_or_else(|| "(unreadable)".to_owned(), |u| shown_endpoint(&u));
            format!("OTLP/HTTP as OTEL_EXPORTER_OTLP_*ENDPOINT say ({shown})")
        }
        None => "not exported".to_owned(),
    };
    let _ = writeln!(report, "telemetry: service.name = {:?}", t.service_name);
    let traces = match t.spans {
        true => otlp(&t.traces, "traces"),
        false => "off".to_owned(),
    };
    let _ = writeln!(report, "  traces: {traces}");
    let metrics = match (t.metrics, t.metrics_listen) {
        (false, _) => "off".to_owned(),
        (true, listen) => {
            let mut shown = otlp(&t.metrics_otlp, "metrics");
            if let Some(addr) = listen {
                let _ = write!(shown, "; Prometheus text at http://{addr}/metrics");
            }
            shown
        }
    };
    let _ = writeln!(report, "  metrics: {metrics}");
    let propagate = match t.propagate && t.spans {
        true => "on",
        false => "off",
    };
    let _ = writeln!(report, "  trace context through params._meta: {propagate}");
}

/// How mcp-chain would log in to a URL upstream (never the secret).
fn oauth(report: &mut String, u: &crate::config::UrlConfig) {
    use crate::config::{ClientId, Grant, Resource};
    if u.headers.iter().any(|(n, _)| n == "authorization") {
        report.push_str("  oauth: off (the headers give an Authorization)\n");
        return;
    }
    let o = &u.oauth;
    let grant = match o.grant {
        Grant::AuthorizationCode => "authorization_code (the browser, once; then refresh)",
        Grant::ClientCredentials => "client_credentials",
    };
    let _ = writeln!(report, "  oauth: when the server asks; grant {grant}");
    let client = match &o.client_id {
        Some(ClientId::Registered(id)) => format!("{id} (pre-registered)"),
        Some(ClientId::Document(url)) => format!("{url} (Client ID Metadata Document)"),
        None => "registered dynamically".to_owned(),
    };
    let secret = if o.client_secret.is_some() {
        ", with a secret (not shown)"
    } else {
        ""
    };
    let _ = writeln!(report, "    client: {client}{secret}");
    if let Some(scopes) = &o.scopes {
        let _ = writeln!(report, "    scopes: {}", scopes.join(" "));
    }
    match &o.resource {
        Resource::Send => {}
        Resource::Omit => report.push_str("    resource: not sent\n"),
        Resource::Override(url) => {
            let _ = writeln!(report, "    resource: {url}");
        }
    }
    if let Some(port) = o.callback_port {
        let _ = writeln!(report, "    callback: http://127.0.0.1:{port}/callback");
    }
}

/// One server as `check` shows it: `label` and its command or URL, then
/// how it is run, each line indented by `indent`.
fn describe(report: &mut String, label: &str, indent: &str, upstream: &UpstreamConfig) {
    let mut lines = String::new();
    match upstream {
        UpstreamConfig::Command(u) => {
            let _ = writeln!(lines, "{label}: {} {}", u.command, u.args.join(" "));
            if !u.env.is_empty() {
                let keys: Vec<_> = u.env.keys().map(String::as_str).collect();
                let _ = writeln!(lines, "  env: {}", keys.join(", "));
            }
            if let Some(cwd) = &u.cwd {
                let _ = writeln!(lines, "  cwd: {}", cwd.display());
            }
            if u.restart.on_failure {
                let _ = writeln!(
                    lines,
                    "  restart: on-failure (at most {}, backoff from {:?})",
                    u.restart.max_restarts, u.restart.backoff
                );
            }
        }
        UpstreamConfig::Url(u) => {
            let _ = writeln!(lines, "{label}: {}", u.url);
            let transport = match u.transport {
                Transport::Auto => "streamable-http, or legacy HTTP+SSE if the server answers the first POST with 400, 404 or 405",
                Transport::StreamableHttp => "streamable-http",
                Transport::Sse => "legacy HTTP+SSE (2024-11-05)",
                Transport::WebSocket if u.envelope == Envelope::McpPayload => {
                    "websocket, each message in an {\"type\": \"mcp\", \"payload\": …} envelope"
                }
                Transport::WebSocket => "websocket",
            };
            let _ = writeln!(
                lines,
                "  transport: {transport} (transport = \"{}\")",
                u.transport.name()
            );
            if !u.headers.is_empty() {
                let names: Vec<_> = u.headers.iter().map(|(n, _)| n.as_str()).collect();
                let _ = writeln!(lines, "  headers: {}", names.join(", "));
            }
            if let Some(ca) = &u.ca_file {
                let _ = writeln!(lines, "  ca_file: {}", ca.display());
            }
            oauth(&mut lines, u);
        }
    }
    for (n, line) in lines.lines().enumerate() {
        let _ = match n {
            0 => writeln!(report, "{}", line.trim_end()),
            _ => writeln!(report, "{indent}{}", line.trim_start()),
        };
    }
}

/// `[servers.*]`: each server, its prefix, how it is run and its chain.
fn servers(report: &mut String, gateway: &crate::config::GatewayConfig) {
    let _ = writeln!(
        report,
        "servers (one gateway; names are prefix{}name; initialize waits {:?} for them):",
        gateway.separator, gateway.startup_timeout
    );
    for server in &gateway.servers {
        let uris = match &server.uri_prefix {
            Some(prefix) => format!(", URIs as {prefix}scheme://…"),
            None => String::new(),
        };
        let label = format!("  {} (prefix {:?}{uris})", server.name, server.prefix);
        describe(report, &label, "    ", &server.upstream);
        let layers: Vec<&str> = server.chain.iter().map(|e| e.layer.name()).collect();
        let _ = match layers.is_empty() {
            true => writeln!(report, "    chain: empty"),
            false => writeln!(
                report,
                "    chain, inside the shared one: {}",
                layers.join(", ")
            ),
        };
    }
}
