//! Telemetry: what mcp-chain does, seen from outside, without reading its
//! audit. OpenTelemetry spans per the semantic conventions for MCP (a
//! SERVER span per request or notification a peer sends, a CLIENT span per
//! one mcp-chain sends on), each layer's decision an event of its span,
//! W3C trace context through `params._meta`, and metrics over OTLP and as
//! Prometheus text.
//!
//! Off unless configured (`[telemetry]`, or the `OTEL_EXPORTER_OTLP_*`
//! variables): then nothing here runs, no thread is started, and a session's
//! chains are built without the two services that make spans (see
//! [`SessionSpan::open`]); the layers' decision events find no one listening.
//!
//! - `export`: OTLP's HTTP client, on a runtime of its own.
//! - `spans`: the service at each end of a chain that makes the spans.
//! - `operation`: what is read of a message once, and the measurement of
//!   its operation.
//! - `context`: trace context in and out of `params._meta`.
//! - `instruments`: the metrics, and the count of decisions.
//! - `prometheus`: `/metrics` at `[telemetry] metrics_listen`.
//! - `logs`: trace and span ids on log lines.

mod context;
mod export;
mod instruments;
pub(crate) mod logs;
mod operation;
mod prometheus;
mod spans;

pub(crate) use spans::{Facing, SessionSpan};

use crate::config::{Otlp, Telemetry as Settings};
use instruments::Instruments;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use std::sync::OnceLock;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::{Layer, Registry};

/// The name of mcp-chain's instrumentation scope, and the target of its spans.
pub(crate) const SCOPE: &str = "mcp-chain";

/// The target of the spans (`spans.rs`) the OpenTelemetry layer turns into
/// OpenTelemetry spans: it sees nothing else but decisions.
pub(crate) const SPAN_TARGET: &str = "mcp_chain::telemetry";

/// What is on, for every session; set once, at start.
static ACTIVE: OnceLock<Active> = OnceLock::new();

struct Active {
    spans: bool,
    propagate: bool,
    instruments: Option<Instruments>,
}

fn active() -> Option<&'static Active> {
    ACTIVE.get()
}

/// A layer for the logging subscriber (OpenTelemetry's, the count of
/// decisions), for [`crate::logging::init`].
pub(crate) type TracingLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Telemetry that is on: its providers, flushed and ended by [`Telemetry::shutdown`].
pub(crate) struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    layer: Option<TracingLayer>,
    metrics: Option<prometheus::Scrape>,
    // Last: the runtime exports run on ends after the providers flushed.
    _exports: Option<export::Exports>,
}

/// Telemetry could not start; mcp-chain does not start without it, since
/// the operator asked for it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError {
    #[error("telemetry: cannot start the OTLP exporter: {0}")]
    Exporter(String),
    #[error("telemetry.metrics_listen: cannot listen on {addr}: {why}")]
    Listen {
        addr: std::net::SocketAddr,
        why: std::io::Error,
    },
}

impl Telemetry {
    /// Starts what `settings` asks for.
    pub(crate) fn start(settings: &Settings) -> Result<Self, TelemetryError> {
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let needs_exports = settings.traces.is_some() || settings.metrics_otlp.is_some();
        let exports = match needs_exports {
            true => Some(
                export::Exports::start().map_err(|e| TelemetryError::Exporter(e.to_string()))?,
            ),
            false => None,
        };
        let client = |exports: &export::Exports| {
            exports
                .client()
                .map_err(|e| TelemetryError::Exporter(e.to_string()))
        };
        let exporter_error =
            |e: opentelemetry_otlp::ExporterBuildError| TelemetryError::Exporter(e.to_string());

        let tracer = match (settings.spans, &exports) {
            (false, _) => None,
            (true, exports) => {
                let mut builder = SdkTracerProvider::builder().with_resource(resource.clone());
                if let (Some(otlp), Some(exports)) = (&settings.traces, exports) {
                    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
                        .with_http()
                        .with_http_client(client(exports)?);
                    if let Otlp::Url(base) = otlp {
                        exporter = exporter.with_endpoint(signal_url(base, "traces"));
                    }
                    builder =
                        builder.with_batch_exporter(exporter.build().map_err(exporter_error)?);
                }
                Some(builder.build())
            }
        };

        let (meter, metrics) = match settings.metrics {
            false => (None, None),
            true => {
                let mut builder = SdkMeterProvider::builder().with_resource(resource);
                if let (Some(otlp), Some(exports)) = (&settings.metrics_otlp, &exports) {
                    let mut exporter = opentelemetry_otlp::MetricExporter::builder()
                        .with_http()
                        .with_http_client(client(exports)?);
                    if let Otlp::Url(base) = otlp {
                        exporter = exporter.with_endpoint(signal_url(base, "metrics"));
                    }
                    builder =
                        builder.with_periodic_exporter(exporter.build().map_err(exporter_error)?);
                }
                let scrape = match settings.metrics_listen {
                    Some(addr) => {
                        let (scrape, reader) = prometheus::Scrape::bind(addr)?;
                        builder = builder.with_reader(reader);
                        Some(scrape)
                    }
                    None => None,
                };
                (Some(builder.build()), scrape)
            }
        };

        let instruments = meter.as_ref().map(Instruments::new);
        let targets = Targets::new()
            .with_target(SPAN_TARGET, tracing::Level::TRACE)
            .with_target(
                mcp_chain_middleware::decision::TARGET,
                tracing::Level::TRACE,
            );
        let otel = tracer.as_ref().map(|provider| {
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer(SCOPE))
                .with_location(false)
                .with_tracked_inactivity(false)
                .with_context_activation(false)
                .with_threads(false)
                .with_level(false)
                .with_target(false)
        });
        let decisions = instruments.as_ref().map(Instruments::decisions);
        let layer: TracingLayer = Box::new(Layer::and_then(otel, decisions).with_filter(targets));
        let _ = ACTIVE.set(Active {
            spans: tracer.is_some(),
            propagate: settings.propagate,
            instruments,
        });
        Ok(Self {
            tracer,
            meter,
            layer: Some(layer),
            metrics,
            _exports: exports,
        })
    }

    /// The layer the logging subscriber stacks (once).
    pub(crate) fn tracing_layer(&mut self) -> Option<TracingLayer> {
        self.layer.take()
    }

    /// Serves `/metrics`, when asked to: a task for the runtime.
    pub(crate) fn serve_metrics(
        &mut self,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        self.metrics.take().map(prometheus::Scrape::serve)
    }

    /// Exports what is left (spans in a batch, the last metrics) and ends.
    pub(crate) fn shutdown(self) {
        if let Some(tracer) = &self.tracer {
            if let Err(e) = tracer.shutdown() {
                tracing::warn!(error = %e, "telemetry: spans not all exported");
            }
        }
        if let Some(meter) = &self.meter {
            if let Err(e) = meter.shutdown() {
                tracing::warn!(error = %e, "telemetry: metrics not all exported");
            }
        }
    }
}

/// `base` with `/v1/{signal}` after its path, as OTLP/HTTP's variable
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is read.
fn signal_url(base: &url::Url, signal: &str) -> String {
    let text = base.as_str();
    let text = text.strip_suffix('/').unwrap_or(text);
    format!("{text}/v1/{signal}")
}

/// An upstream was started again (counted when metrics are on).
pub(crate) fn restarted() {
    if let Some(instruments) = active().and_then(|a| a.instruments.as_ref()) {
        instruments.restarted();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_paths_follow_the_base() {
        let url = |s: &str| url::Url::parse(s).expect("url");
        assert_eq!(
            signal_url(&url("http://127.0.0.1:4318"), "traces"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            signal_url(&url("https://c.example/otlp/"), "metrics"),
            "https://c.example/otlp/v1/metrics"
        );
    }
}
