//! `/metrics` at `[telemetry] metrics_listen`: the metrics in Prometheus
//! text, from OpenTelemetry's Prometheus exporter (names as Prometheus
//! writes them: `mcp.server.operation.duration` in seconds is
//! `mcp_server_operation_duration_seconds`).
//!
//! Its own address, never the front's: a scrape needs no MCP session and
//! no token, so the operator decides who reaches it (loopback, or a network
//! only Prometheus is on). One small HTTP/1.1 server: `GET /metrics`, and
//! 404 for anything else; a scrape that takes too long is cut off. `Host`
//! is checked as the front checks it: on loopback only the loopback names,
//! so a web page cannot read the metrics through DNS rebinding.

use super::TelemetryError;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use opentelemetry_prometheus::PrometheusExporter;
use prometheus::{Encoder, Registry, TextEncoder};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How long a scraper's connection may take to send a request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections served at once; past this a new one is refused (503).
const MAX_CONNECTIONS: usize = 16;

/// The listening socket and the registry it serves.
pub(super) struct Scrape {
    listener: std::net::TcpListener,
    registry: Registry,
    /// The hosts answered (`None`: any).
    hosts: Option<Arc<[String]>>,
}

impl Scrape {
    /// Binds `addr` now, so a taken address stops mcp-chain at start with
    /// a clear message; and the reader the meter provider feeds.
    pub(super) fn bind(addr: SocketAddr) -> Result<(Self, PrometheusExporter), TelemetryError> {
        let listen_error = |why| TelemetryError::Listen { addr, why };
        let listener = std::net::TcpListener::bind(addr).map_err(listen_error)?;
        listener.set_nonblocking(true).map_err(listen_error)?;
        let registry = Registry::new();
        let reader = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let hosts = crate::front::guard::answered_hosts(&[], addr).map(Arc::from);
        Ok((
            Self {
                listener,
                registry,
                hosts,
            },
            reader,
        ))
    }

    /// Serves scrapes until the runtime ends.
    pub(super) async fn serve(self) {
        let listener = match tokio::net::TcpListener::from_std(self.listener) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::warn!(error = %e, "telemetry: /metrics cannot be served");
                return;
            }
        };
        let (registry, hosts) = (self.registry, self.hosts);
        let make = |_peer| {
            let (registry, hosts) = (registry.clone(), hosts.clone());
            hyper::service::service_fn(move |request| {
                let answer = answer(&registry, hosts.as_deref(), request);
                async move { Ok::<_, std::convert::Infallible>(answer) }
            })
        };
        let mut limits = crate::serve::Limits::small(MAX_CONNECTIONS, READ_TIMEOUT * 6);
        limits.head_timeout = READ_TIMEOUT;
        // Served until the runtime ends.
        crate::serve::serve(listener, limits, make, std::future::pending()).await;
    }
}

/// `GET /metrics`: the text; another host: 403 or 400; anything else:
/// 404 or 405.
fn answer<B>(
    registry: &Registry,
    hosts: Option<&[String]>,
    request: Request<B>,
) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, text: &'static str| {
        let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *response.status_mut() = status;
        response
    };
    let (head, _) = request.into_parts();
    match crate::front::guard::check_host(&head, hosts) {
        Ok(()) => {}
        Err(crate::front::guard::Refusal::BadRequest(why)) => {
            return plain(StatusCode::BAD_REQUEST, why)
        }
        Err(_) => return plain(StatusCode::FORBIDDEN, "this Host is not allowed\n"),
    }
    if head.uri.path() != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "not found; metrics are at /metrics\n",
        );
    }
    if head.method != Method::GET && head.method != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "GET /metrics\n");
    }
    let encoder = TextEncoder::new();
    let mut text = Vec::new();
    if let Err(e) = encoder.encode(&registry.gather(), &mut text) {
        tracing::warn!(error = %e, "telemetry: the metrics cannot be written");
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the metrics cannot be written\n",
        );
    }
    let mut response = Response::new(Full::new(Bytes::from(text)));
    if let Ok(kind) = encoder.format_type().parse() {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, kind);
    }
    response
}
