//! Log lines written inside a span carry its trace and span ids, so a line
//! on stderr leads to its trace (`trace_id=… span_id=…`, first).

use opentelemetry::trace::TraceContextExt;
use std::fmt;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::fmt::format::Writer;

/// Writes `trace_id=… span_id=… ` when the event happened inside a span.
pub(crate) fn write_ids(writer: &mut Writer<'_>) -> fmt::Result {
    let context = tracing::Span::current().context();
    let span = context.span();
    let ids = span.span_context();
    if !ids.is_valid() {
        return Ok(());
    }
    write!(
        writer,
        "trace_id={} span_id={} ",
        ids.trace_id(),
        ids.span_id()
    )
}
