//! `[telemetry]`: OpenTelemetry traces and metrics, and Prometheus text.
//! Off unless the table is there or the standard `OTEL_EXPORTER_OTLP_*`
//! variables name a collector; `OTEL_SDK_DISABLED=true` turns it off
//! whatever the file says. What the file says wins over the variables.

use super::front::parse_listen;
use super::validate::Problem;
use serde::Deserialize;
use std::net::SocketAddr;

/// `[telemetry]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TelemetryFile {
    otlp_endpoint: Option<String>,
    service_name: Option<String>,
    metrics_listen: Option<String>,
    traces: Option<bool>,
    metrics: Option<bool>,
    propagate: Option<bool>,
}

/// A checked `[telemetry]`, before the `OTEL_*` variables are applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// The table was there: telemetry is on.
    pub configured: bool,
    /// The collector's base URL (`/v1/traces` and `/v1/metrics` are added);
    /// `None`: the `OTEL_EXPORTER_OTLP_*` variables, or no OTLP at all.
    pub otlp_endpoint: Option<url::Url>,
    pub service_name: Option<String>,
    /// Where to serve Prometheus text at `/metrics`.
    pub metrics_listen: Option<SocketAddr>,
    pub traces: bool,
    pub metrics: bool,
    /// W3C trace context through `params._meta`, both ways.
    pub propagate: bool,
}

impl Default for TelemetryConfig {
    /// No table: off, unless the `OTEL_*` variables name a collector; then
    /// everything is on.
    fn default() -> Self {
        Self {
            configured: false,
            otlp_endpoint: None,
            service_name: None,
            metrics_listen: None,
            traces: true,
            metrics: true,
            propagate: true,
        }
    }
}

/// The service name when neither the file nor `OTEL_SERVICE_NAME` gives one.
const DEFAULT_SERVICE_NAME: &str = "mcp-chain";

pub(super) fn telemetry(
    file: Option<TelemetryFile>,
    problems: &mut Vec<Problem>,
) -> TelemetryConfig {
    let Some(file) = file else {
        return TelemetryConfig::default();
    };
    let mut problem = |message: String| problems.push((None, format!("telemetry.{message}")));
    let otlp_endpoint = file
        .otlp_endpoint
        .and_then(|text| match url::Url::parse(&text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                Some(url)
            }
            _ => {
                // Not shown: a URL may carry a password.
                let _ = text;
                problem(
                    "otlp_endpoint: not the http(s) URL of a collector (http://127.0.0.1:4318)"
                        .to_owned(),
                );
                None
            }
        });
    let metrics_listen = file
        .metrics_listen
        .and_then(|text| match parse_listen(&text) {
            Ok(addr) => Some(addr),
            Err(e) => {
                problem(format!("metrics_listen: {e}"));
                None
            }
        });
    if let Some(name) = &file.service_name {
        if name.trim().is_empty() || name.chars().any(char::is_control) {
            problem(format!(
                "service_name: {name:?} must be a name, without control characters"
            ));
        }
    }
    TelemetryConfig {
        configured: true,
        otlp_endpoint,
        service_name: file.service_name,
        metrics_listen,
        traces: file.traces.unwrap_or(true),
        metrics: file.metrics.unwrap_or(true),
        propagate: file.propagate.unwrap_or(true),
    }
}

/// What telemetry does once the `OTEL_*` variables are applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Telemetry {
    pub service_name: String,
    /// Where spans go: `Some(url)` as configured, `Some(None)` where the
    /// OTLP exporter's own variables say, `None`: nowhere (spans are still
    /// made, so logs carry their ids).
    pub traces: Option<Otlp>,
    /// Metrics over OTLP (as for traces).
    pub metrics_otlp: Option<Otlp>,
    pub metrics_listen: Option<SocketAddr>,
    /// Spans are made at all.
    pub spans: bool,
    /// Metrics are recorded at all.
    pub metrics: bool,
    pub propagate: bool,
}

/// Where OTLP goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Otlp {
    /// The collector's base URL, from the file.
    Url(url::Url),
    /// As `OTEL_EXPORTER_OTLP_ENDPOINT` (or the signal's own variable) says.
    FromEnvironment,
}

impl TelemetryConfig {
    /// What to run, the variables `env` gives applied; `None`: telemetry off.
    pub fn resolve(&self, env: impl Fn(&str) -> Option<String>) -> Option<Telemetry> {
        let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
        let is = |name: &str, value: &str| {
            env(name).is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
        };
        if is("OTEL_SDK_DISABLED", "true") {
            return None;
        }
        let from_env = |signal: &str| {
            set("OTEL_EXPORTER_OTLP_ENDPOINT")
                || set(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"))
        };
        if !(self.configured || from_env("TRACES") || from_env("METRICS")) {
            return None;
        }
        let otlp = |signal: &str| match &self.otlp_endpoint {
            Some(url) => Some(Otlp::Url(url.clone())),
            None if from_env(signal) => Some(Otlp::FromEnvironment),
            None => None,
        };
        let exported = |signal: &str, on: bool| {
            let var = format!("OTEL_{signal}_EXPORTER");
            match on && !is(&var, "none") {
                true => otlp(signal),
                false => None,
            }
        };
        let service_name = self
            .service_name
            .clone()
            .or_else(|| env("OTEL_SERVICE_NAME").filter(|n| !n.trim().is_empty()))
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        Some(Telemetry {
            service_name,
            traces: exported("TRACES", self.traces),
            metrics_otlp: exported("METRICS", self.metrics),
            metrics_listen: self.metrics_listen.filter(|_| self.metrics),
            spans: self.traces,
            metrics: self.metrics,
            propagate: self.propagate,
        })
    }
}

/// `url` as `check` and errors show it: without a password, a query or
/// a fragment, which may hold a secret.
pub fn shown_endpoint(url: &url::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_password(None);
    let _ = shown.set_username("");
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn load(text: &str) -> Result<Config, String> {
        Config::from_toml_str(text, "t.toml", |_| None).map_err(|e| e.to_string())
    }

    fn vars<'a>(set: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            set.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn off_unless_configured_or_named_by_the_otel_variables() {
        let none = load("").expect("empty");
        assert_eq!(none.telemetry.resolve(vars(&[])), None);
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")];
        let on = none.telemetry.resolve(vars(&env)).expect("on");
        assert_eq!(on.traces, Some(Otlp::FromEnvironment));
        assert_eq!(on.metrics_otlp, Some(Otlp::FromEnvironment));
        assert_eq!(on.service_name, "mcp-chain");
        let disabled = [env[0], ("OTEL_SDK_DISABLED", "true")];
        assert_eq!(none.telemetry.resolve(vars(&disabled)), None);
    }

    #[test]
    fn the_file_wins_over_the_variables() {
        let config = load(
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\nservice_name = \"files\"\nmetrics_listen = \"127.0.0.1:9464\"\ntraces = false\n",
        )
        .expect("valid");
        let env = [
            ("OTEL_SERVICE_NAME", "other"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ];
        let t = config.telemetry.resolve(vars(&env)).expect("on");
        assert_eq!(t.service_name, "files");
        assert!(!t.spans && t.traces.is_none());
        assert_eq!(t.metrics_otlp, None, "OTEL_METRICS_EXPORTER=none");
        assert_eq!(
            t.metrics_listen,
            Some("127.0.0.1:9464".parse().expect("addr"))
        );
        assert!(t.propagate);
        let bare = load("[telemetry]\n").expect("valid");
        let t = bare
            .telemetry
            .resolve(vars(&[("OTEL_SERVICE_NAME", "named")]))
            .expect("on");
        assert_eq!(
            (t.service_name.as_str(), t.traces, t.spans),
            ("named", None, true)
        );
    }

    #[test]
    fn bad_values_are_placed_and_a_secret_in_a_url_is_not_repeated() {
        let e = load(
            "[telemetry]\notlp_endpoint = \"ftp://user:hunter2@c\"\nmetrics_listen = \"nowhere\"\n",
        )
        .expect_err("invalid");
        assert!(
            e.contains("telemetry.otlp_endpoint: not the http(s) URL"),
            "{e}"
        );
        assert!(e.contains("telemetry.metrics_listen"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = load("[telemetry]\nmetrics_listen = \"127.0.0.1:9000\"\n[front]\nlisten = \"127.0.0.1:9000\"\n")
            .expect_err("same address");
        assert!(e.contains("metrics need an address of their own"), "{e}");
        let e = load("[telemetry]\nexporter = \"jaeger\"\n").expect_err("unknown key");
        assert!(e.contains("exporter"), "{e}");
    }

    #[test]
    fn an_endpoint_is_shown_without_its_secrets() {
        let url = url::Url::parse("https://user:pw@c.example:4318/otlp?key=s#f").expect("url");
        assert_eq!(shown_endpoint(&url), "https://c.example:4318/otlp");
    }
}
