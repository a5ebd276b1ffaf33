//! Logs go to stderr, always: stdout is the protocol channel.
//!
//! Log lines carry text that servers and clients chose (tool names, URIs,
//! reasons), and a person reads them: each event is written as one line,
//! its control and invisible characters escaped (a newline in a tool name
//! cannot forge a line, ESC cannot repaint the terminal) and cut at
//! [`MAX_EVENT_CHARS`]. This is done where the line is written, for every
//! event, so no field can be forgotten.

use mcp_chain_middleware::shown;
use std::io::{self, Write};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The longest a log line gets, in characters.
const MAX_EVENT_CHARS: usize = 16 * 1024;

/// Filter used when neither `--log-level` nor `RUST_LOG` says otherwise:
/// quiet enough for Claude Desktop's log file, loud enough for problems,
/// and everything a configured `log` layer writes.
const DEFAULT_LEVEL: &str = "warn,mcp_chain::messages=trace";

/// What a bare level leaves out: the HTTP libraries' own chatter (each
/// connection pooled and reused) drowns mcp-chain's at debug. Name them to
/// see it (`--log-level debug,hyper_util=debug`).
const QUIET_LIBRARIES: &str = "hyper=info,hyper_util=info,reqwest=info,rustls=info";

/// Starts logging; with `telemetry`, its layer (OpenTelemetry's, the count
/// of decisions) is stacked beside the log lines, and each line written
/// inside a span carries its trace and span ids. With `console`, the
/// layers' decisions are kept for the console's activity page too.
pub fn init(level: Option<&str>, telemetry: Option<Telemetry>, console: bool) {
    let filter = match level {
        Some(level) if !level.contains('=') => {
            EnvFilter::try_new(format!("{level},{QUIET_LIBRARIES}"))
        }
        Some(level) => EnvFilter::try_new(level),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new(DEFAULT_LEVEL)),
    }
    .unwrap_or_else(|e| {
        // Logging is not up yet; this is the one message that cannot use it.
        eprintln!("mcp-chain: bad log level ({e}); using {DEFAULT_LEVEL}");
        EnvFilter::new(DEFAULT_LEVEL)
    });
    let format = tracing_subscriber::fmt::format()
        .with_ansi(false)
        .with_target(false);
    let ids = telemetry.is_some();
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(Lines)
        .with_ansi(false)
        .event_format(WithIds { format, ids })
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(telemetry)
        .with(console.then(crate::console::activity::layer))
        .with(lines)
        .try_init();
}

/// The telemetry layer logging stacks.
pub type Telemetry = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// The line format, with trace and span ids first when telemetry is on.
#[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
struct WithIds<F> {
    format: F,
    ids: bool,
}

impl<S, N, F> FormatEvent<S, N> for WithIds<F>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        #[cfg(feature = "telemetry")]
        let writer = {
            let mut writer = writer;
            if self.ids {
                crate::telemetry::logs::write_ids(&mut writer)?;
            }
            writer
        };
        self.format.format_event(ctx, writer, event)
    }
}

/// Makes the writer of one event: stderr, one safe line.
struct Lines;

impl<'a> MakeWriter<'a> for Lines {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line
    }
}

/// Writes an event (the formatter hands it over whole, newline last) as
/// one line, escaped and cut.
struct Line;

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let body = text.strip_suffix('\n').unwrap_or(&text);
        let mut line = match body.chars().any(shown::is_unsafe) || body.len() > MAX_EVENT_CHARS {
            true => escaped_line(body),
            false => body.to_owned(),
        };
        line.push('\n');
        io::stderr().lock().write_all(line.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// `body` escaped like [`shown::shown`] but keeping backslashes (log
/// fields already show escapes of their own) and tabs, and cut.
fn escaped_line(body: &str) -> String {
    let mut out = String::with_capacity(body.len().min(MAX_EVENT_CHARS) + 16);
    for (n, c) in body.chars().enumerate() {
        if n == MAX_EVENT_CHARS {
            out += &format!("… (cut at {MAX_EVENT_CHARS} characters)");
            break;
        }
        match c {
            '\t' => out.push(c),
            c if shown::is_unsafe(c) => out += &shown::defanged(c.encode_utf8(&mut [0; 4])),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_line_whatever_its_fields_hold() {
        let forged = "read\n2026-01-01T00:00:00Z  INFO all clear \u{1b}[2J\u{202E}";
        let line = escaped_line(forged);
        assert!(!line.contains('\n') && !line.contains('\u{1b}') && !line.contains('\u{202E}'));
        assert_eq!(
            line,
            "read\\n2026-01-01T00:00:00Z  INFO all clear \\u{001b}[2J\\u{202e}"
        );
        let long = "x".repeat(MAX_EVENT_CHARS * 2);
        assert!(escaped_line(&long).chars().count() < MAX_EVENT_CHARS + 64);
    }
}
