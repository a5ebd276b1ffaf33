//! The metrics: the MCP conventions' operation and session durations, and
//! mcp-chain's own counts (decisions by layer and outcome, requests in
//! flight, upstream restarts, front sessions open, bytes in and out).
//!
//! Labels are bounded: methods outside MCP's are `_OTHER`; tool and prompt
//! names are cut to [`MAX_LABEL_CHARS`]; and past the SDK's cardinality
//! limit (2000 sets of labels per instrument) new sets fold into one
//! overflow series, so a client that calls a million made-up tools costs
//! one series, not a million. No argument, id, URI or result is a label.

use mcp_chain_middleware::counts;
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider as _, UpDownCounter};
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

/// The conventions' buckets for MCP operation and session durations, in seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The longest tool or prompt name a label keeps, in characters.
pub(super) const MAX_LABEL_CHARS: usize = 128;

#[derive(Clone)]
pub(super) struct Instruments {
    pub(super) server_duration: Histogram<f64>,
    pub(super) client_duration: Histogram<f64>,
    pub(super) session_duration: Histogram<f64>,
    pub(super) in_flight: UpDownCounter<i64>,
    pub(super) front_sessions: UpDownCounter<i64>,
    decisions: Counter<u64>,
    restarts: Counter<u64>,
}

impl Instruments {
    pub(super) fn new(provider: &SdkMeterProvider) -> Self {
        let meter = provider.meter(super::SCOPE);
        let duration = |name: &'static str, about: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(about)
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build()
        };
        bytes(&meter);
        Self {
            server_duration: duration(
                "mcp.server.operation.duration",
                "MCP request or notification duration as observed on the receiver, from the time it was received until the result or ack is sent",
            ),
            client_duration: duration(
                "mcp.client.operation.duration",
                "MCP request or notification duration as observed on the sender, from the time it was sent until the response or ack is received",
            ),
            session_duration: duration(
                "mcp.server.session.duration",
                "The duration of an MCP session as observed by mcp-chain serving it",
            ),
            in_flight: meter
                .i64_up_down_counter("mcp_chain.requests.in_flight")
                .with_unit("{request}")
                .with_description("Requests received and not yet answered")
                .build(),
            front_sessions: meter
                .i64_up_down_counter("mcp_chain.front.sessions")
                .with_unit("{session}")
                .with_description("Sessions of the HTTP front open")
                .build(),
            decisions: meter
                .u64_counter("mcp_chain.decisions")
                .with_unit("{decision}")
                .with_description("Decisions of the layers, by layer and outcome")
                .build(),
            restarts: meter
                .u64_counter("mcp_chain.upstream.restarts")
                .with_unit("{restart}")
                .with_description("Times an upstream server was started again")
                .build(),
        }
    }

    pub(super) fn restarted(&self) {
        self.restarts.add(1, &[]);
    }

    /// The layer that counts the layers' decision events.
    pub(super) fn decisions(&self) -> Decisions {
        Decisions(self.decisions.clone())
    }
}

/// Bytes mcp-chain read from its peers and wrote to them, observed from
/// the counts the message reader and writer keep anyway.
fn bytes(meter: &Meter) {
    meter
        .u64_observable_counter("mcp_chain.traffic")
        .with_unit("By")
        .with_description(
            "Bytes of JSON-RPC messages read from the peers (in) and written to them (out)",
        )
        .with_callback(|observer| {
            observer.observe(counts::bytes_parsed(), &[KeyValue::new("direction", "in")]);
            observer.observe(
                counts::bytes_written(),
                &[KeyValue::new("direction", "out")],
            );
        })
        .build();
}

/// Counts `mcp_chain::decision` events by their `layer` and `outcome`.
pub(super) struct Decisions(Counter<u64>);

impl<S: tracing::Subscriber> Layer<S> for Decisions {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != mcp_chain_middleware::decision::TARGET {
            return;
        }
        let mut named = Named::default();
        event.record(&mut named);
        if let (Some(layer), Some(outcome)) = (named.layer, named.outcome) {
            let labels = [
                KeyValue::new("layer", layer),
                KeyValue::new("outcome", outcome),
            ];
            self.0.add(1, &labels);
        }
    }
}

/// The `layer` and `outcome` of a decision event (both literals in the
/// `decided!` macro, so a bounded set).
#[derive(Default)]
struct Named {
    layer: Option<String>,
    outcome: Option<String>,
}

impl Visit for Named {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "layer" => self.layer = Some(value.to_owned()),
            "outcome" => self.outcome = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}
