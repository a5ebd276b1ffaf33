//! The figures, their medians over rounds, and how they are shown: a
//! Markdown table (ratio to direct and what was added), the budget from
//! issue 6 with pass/miss per line, and JSON.

use crate::stats::median;
use crate::Result;
use serde_json::json;
use std::io::Write;

/// A process the load generator talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Direct,
    Relay,
    Empty,
    /// Three copies of the fixture behind one mcp-chain (`[servers.*]`).
    Gateway,
    /// One copy behind a gateway: what each further server adds is
    /// `gateway` over this.
    Gateway1,
    Full,
    /// The full chain with telemetry on: every span exported (to a sink),
    /// metrics recorded and served.
    FullTelemetry,
    /// The full chain with validate, limit, approve and pin
    /// (`configs/guards.toml`).
    Guards,
    /// The fixture served over Streamable HTTP, mcp-chain in front of it.
    HttpEmpty,
    HttpFull,
    /// The same, supergateway's Streamable HTTP→stdio bridge in front.
    HttpPeer,
    /// The fixture served to HTTP clients by `mcp-chain --listen`.
    FrontEmpty,
    FrontFull,
    /// `front-empty` as an OAuth resource server: every request carries a
    /// JWT the front checks.
    FrontOAuth,
    /// The same, by supergateway's stdio→Streamable HTTP server.
    FrontPeer,
    /// The floor for a shared upstream: a minimal bridge serving every
    /// client from one child (`bench-shared-bridge`).
    FrontSharedFloor,
    /// `front-empty` in shared mode: every session served by a pool of two
    /// children.
    FrontShared,
    /// One `rate_limit` rule that never refuses, on the process's buckets.
    Limited,
    /// The same on `[state]`: the buckets in a loopback Redis.
    LimitedState,
    /// One `scan` layer: every listing and result read by its rules.
    Scan,
}

impl Mode {
    pub(crate) const ALL: [Mode; 20] = [
        Mode::Direct,
        Mode::Relay,
        Mode::Empty,
        Mode::Gateway1,
        Mode::Gateway,
        Mode::Full,
        Mode::FullTelemetry,
        Mode::Guards,
        Mode::HttpEmpty,
        Mode::HttpFull,
        Mode::HttpPeer,
        Mode::FrontEmpty,
        Mode::FrontFull,
        Mode::FrontOAuth,
        Mode::FrontPeer,
        Mode::FrontSharedFloor,
        Mode::FrontShared,
        Mode::Limited,
        Mode::LimitedState,
        Mode::Scan,
    ];

    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Relay => "relay",
            Self::Empty => "empty",
            Self::Gateway => "gateway",
            Self::Gateway1 => "gateway-1",
            Self::Full => "full",
            Self::FullTelemetry => "full-telemetry",
            Self::Guards => "guards",
            Self::HttpEmpty => "http-empty",
            Self::HttpFull => "http-full",
            Self::HttpPeer => "http-supergateway",
            Self::FrontEmpty => "front-empty",
            Self::FrontFull => "front-full",
            Self::FrontOAuth => "front-oauth",
            Self::FrontPeer => "front-supergateway",
            Self::FrontSharedFloor => "front-shared-floor",
            Self::FrontShared => "front-shared",
            Self::Limited => "limited",
            Self::LimitedState => "limited-state",
            Self::Scan => "scan",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Relay => "byte relay (floor)",
            Self::Empty => "mcp-chain, empty chain",
            Self::Gateway => "mcp-chain, gateway of 3 servers",
            Self::Gateway1 => "mcp-chain, gateway of 1 server",
            Self::Full => "mcp-chain, full chain",
            Self::FullTelemetry => "mcp-chain, full chain, telemetry on",
            Self::Guards => "mcp-chain, full chain + guard layers",
            Self::HttpEmpty => "HTTP: mcp-chain, empty",
            Self::HttpFull => "HTTP: mcp-chain, full",
            Self::HttpPeer => "HTTP: supergateway",
            Self::FrontEmpty => "front: mcp-chain --listen, empty",
            Self::FrontFull => "front: mcp-chain --listen, full",
            Self::FrontOAuth => "front: mcp-chain --listen, OAuth",
            Self::FrontPeer => "front: supergateway",
            Self::FrontSharedFloor => "front: one shared child (floor)",
            Self::FrontShared => "front: mcp-chain --listen, shared",
            Self::Limited => "mcp-chain, rate_limit",
            Self::LimitedState => "mcp-chain, rate_limit on [state] (Redis)",
            Self::Scan => "mcp-chain, scan",
        }
    }

    /// Whether the fixture is reached over HTTP in this mode.
    pub(crate) fn is_http(self) -> bool {
        matches!(self, Self::HttpEmpty | Self::HttpFull | Self::HttpPeer)
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.key() == text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Us,
    Ms,
    PerSec,
    MiB,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Self::Us => "µs",
            Self::Ms => "ms",
            Self::PerSec => "msg/s",
            Self::MiB => "MiB",
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Self::Us => format!("{v:.1} µs"),
            Self::Ms => format!("{v:.2} ms"),
            Self::PerSec => format!("{:.1}k/s", v / 1e3),
            Self::MiB => format!("{v:.1} MiB"),
        }
    }
}

/// One line of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Figure {
    RoundTripP50,
    RoundTripP90,
    RoundTripP99,
    /// Pipelined, with this many requests in flight.
    Throughput(u64),
    Result1MiB,
    Result10MiB,
    /// 10 MiB of prose (`scan`'s cost on text like a real result's).
    ResultProse10MiB,
    ToolsList,
    Notifications,
    StartUp,
    IdleRss,
    /// `VmHWM` right after the 1 MiB results.
    PeakRss1MiB,
    PeakRss,
    /// Loaded by HTTP clients directly (`front-*` modes only).
    HttpRoundTripP50,
    HttpThroughput(u64),
}

impl Figure {
    fn key(self) -> String {
        match self {
            Self::RoundTripP50 => "round_trip_p50_us".into(),
            Self::RoundTripP90 => "round_trip_p90_us".into(),
            Self::RoundTripP99 => "round_trip_p99_us".into(),
            Self::Throughput(n) => format!("throughput_{n}_in_flight_per_s"),
            Self::Result1MiB => "result_1mib_ms".into(),
            Self::Result10MiB => "result_10mib_ms".into(),
            Self::ResultProse10MiB => "result_prose_10mib_ms".into(),
            Self::ToolsList => "tools_list_1000_us".into(),
            Self::Notifications => "notifications_10000_ms".into(),
            Self::StartUp => "start_up_ms".into(),
            Self::IdleRss => "idle_rss_mib".into(),
            Self::PeakRss1MiB => "peak_rss_after_1mib_mib".into(),
            Self::PeakRss => "peak_rss_mib".into(),
            Self::HttpRoundTripP50 => "http_clients_round_trip_p50_us".into(),
            Self::HttpThroughput(n) => format!("http_clients_throughput_{n}_concurrent_per_s"),
        }
    }

    fn label(self) -> String {
        match self {
            Self::RoundTripP50 => "tools/call round trip p50".into(),
            Self::RoundTripP90 => "tools/call round trip p90".into(),
            Self::RoundTripP99 => "tools/call round trip p99".into(),
            Self::Throughput(n) => format!("throughput, {n} in flight"),
            Self::Result1MiB => "1 MiB tool result".into(),
            Self::Result10MiB => "10 MiB tool result".into(),
            Self::ResultProse10MiB => "10 MiB tool result, prose".into(),
            Self::ToolsList => "tools/list, 1,000 tools".into(),
            Self::Notifications => "10,000 notifications relayed".into(),
            Self::StartUp => "start-up to initialize answer".into(),
            Self::IdleRss => "idle RSS (VmRSS)".into(),
            Self::PeakRss1MiB => "peak RSS after the 1 MiB results".into(),
            Self::PeakRss => "peak RSS (VmHWM)".into(),
            Self::HttpRoundTripP50 => "HTTP clients: tools/call round trip p50".into(),
            Self::HttpThroughput(n) => format!("HTTP clients: throughput, {n} concurrent"),
        }
    }

    fn unit(self) -> Unit {
        match self {
            Self::RoundTripP50
            | Self::RoundTripP90
            | Self::RoundTripP99
            | Self::ToolsList
            | Self::HttpRoundTripP50 => Unit::Us,
            Self::Throughput(_) | Self::HttpThroughput(_) => Unit::PerSec,
            Self::Result1MiB
            | Self::Result10MiB
            | Self::ResultProse10MiB
            | Self::Notifications
            | Self::StartUp => Unit::Ms,
            Self::IdleRss | Self::PeakRss1MiB | Self::PeakRss => Unit::MiB,
        }
    }
}

/// Every figure's value per mode per round.
#[derive(Debug)]
pub(crate) struct Report {
    modes: Vec<Mode>,
    rounds: usize,
    quick: bool,
    unavailable: Vec<(Mode, String)>,
    /// In the order first added; `values[i]` is per mode index, per round.
    figures: Vec<(Figure, Vec<Vec<f64>>)>,
    /// A loopback Redis's own round trips, µs, per round: a PING, and
    /// the bucket script a limited call runs.
    pub(crate) redis_rtt: Vec<(f64, f64)>,
}

impl Report {
    pub(crate) fn new(
        modes: &[Mode],
        rounds: usize,
        quick: bool,
        unavailable: Vec<(Mode, String)>,
    ) -> Self {
        Self {
            modes: modes.to_vec(),
            rounds,
            quick,
            unavailable,
            figures: Vec::new(),
            redis_rtt: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, figure: Figure, mode: Mode, value: f64) {
        let Some(m) = self.modes.iter().position(|&x| x == mode) else {
            return;
        };
        let i = match self.figures.iter().position(|(f, _)| *f == figure) {
            Some(i) => i,
            None => {
                self.figures
                    .push((figure, vec![Vec::new(); self.modes.len()]));
                self.figures.len() - 1
            }
        };
        self.figures[i].1[m].push(value);
    }

    /// The median over rounds of a figure for a mode.
    fn value(&self, figure: Figure, mode: Mode) -> Option<f64> {
        let m = self.modes.iter().position(|&x| x == mode)?;
        let (_, values) = self.figures.iter().find(|(f, _)| *f == figure)?;
        let v = median(&values[m]);
        (!v.is_nan()).then_some(v)
    }

    /// Ratio to direct and what was added ("+8.9 µs"; per message for
    /// throughput). `None` for memory, which is the proxy's own.
    fn versus_direct(&self, figure: Figure, value: f64) -> Option<(f64, String)> {
        let direct = self.value(figure, Mode::Direct)?;
        let unit = figure.unit();
        let ratio = value / direct;
        let added = match unit {
            Unit::MiB => return None,
            Unit::PerSec => format!("{:+.2} µs/msg", 1e6 / value - 1e6 / direct),
            Unit::Us => format!("{:+.1} µs", value - direct),
            Unit::Ms => format!("{:+.2} ms", value - direct),
        };
        Some((ratio, added))
    }

    pub(crate) fn write_table(&self, out: &mut impl Write) -> Result<()> {
        writeln!(out, "{}", machine_line())?;
        writeln!(
            out,
            "{} rounds{}, medians over rounds; cells: value ×ratio-to-direct, added\n",
            self.rounds,
            if self.quick { " (--quick)" } else { "" }
        )?;
        write!(out, "| figure |")?;
        for m in &self.modes {
            write!(out, " {} |", m.label())?;
        }
        write!(out, "\n|---|")?;
        for _ in &self.modes {
            write!(out, "---:|")?;
        }
        writeln!(out)?;
        for (figure, _) in &self.figures {
            write!(out, "| {} |", figure.label())?;
            for &mode in &self.modes {
                let cell = match self.value(*figure, mode) {
                    None => "–".to_owned(),
                    Some(v) if mode == Mode::Direct => figure.unit().show(v),
                    Some(v) => match self.versus_direct(*figure, v) {
                        Some((ratio, added)) => {
                            format!("{} ×{ratio:.2} {added}", figure.unit().show(v))
                        }
                        None => figure.unit().show(v),
                    },
                };
                write!(out, " {cell} |")?;
            }
            writeln!(out)?;
        }
        for (mode, reason) in &self.unavailable {
            writeln!(out, "\n{}: not available ({reason})", mode.label())?;
        }
        writeln!(
            out,
            "\nRSS in the direct column is the fixture server's own; in the others, the relay process's."
        )?;
        writeln!(out, "\nBudget (issue 6):\n")?;
        writeln!(out, "| budget line | measured | result |\n|---|---:|---|")?;
        for line in self.budget() {
            writeln!(
                out,
                "| {} | {} | {} |",
                line.what,
                line.measured,
                match line.pass {
                    Some(true) => "pass",
                    Some(false) => "**miss**",
                    None => "not available",
                }
            )?;
        }
        Ok(())
    }

    pub(crate) fn write_json(&self, out: &mut impl Write) -> Result<()> {
        let figures: Vec<_> = self
            .figures
            .iter()
            .map(|(figure, values)| {
                let per_mode: serde_json::Map<String, serde_json::Value> = self
                    .modes
                    .iter()
                    .enumerate()
                    .map(|(i, &mode)| {
                        let med = median(&values[i]);
                        let vs = self.versus_direct(*figure, med);
                        (
                            mode.key().to_owned(),
                            json!({
                                "median": med,
                                "rounds": values[i],
                                "ratio_to_direct": vs.as_ref().map(|v| v.0),
                                "added": vs.map(|v| v.1),
                            }),
                        )
                    })
                    .collect();
                json!({
                    "key": figure.key(),
                    "label": figure.label(),
                    "unit": figure.unit().name(),
                    "modes": per_mode,
                })
            })
            .collect();
        let budget: Vec<_> = self
            .budget()
            .into_iter()
            .map(|l| json!({ "line": l.what, "measured": l.measured, "pass": l.pass }))
            .collect();
        let unavailable: serde_json::Map<String, serde_json::Value> = self
            .unavailable
            .iter()
            .map(|(m, r)| (m.key().to_owned(), json!(r)))
            .collect();
        let doc = json!({
            "machine": machine_line(),
            "rounds": self.rounds,
            "quick": self.quick,
            "modes": self.modes.iter().map(|m| m.key()).collect::<Vec<_>>(),
            "unavailable": unavailable,
            "figures": figures,
            "budget": budget,
        });
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
        Ok(())
    }

    /// Issue 6's budget, line by line.
    fn budget(&self) -> Vec<BudgetLine> {
        let added = |f: Figure, m: Mode| Some(self.value(f, m)? - self.value(f, Mode::Direct)?);
        let ratio = |f: Figure, m: Mode| Some(self.value(f, m)? / self.value(f, Mode::Direct)?);
        let line =
            |what: &str, v: Option<f64>, show: &dyn Fn(f64) -> String, ok: &dyn Fn(f64) -> bool| {
                BudgetLine {
                    what: what.to_owned(),
                    measured: v.map_or_else(|| "–".to_owned(), show),
                    pass: v.map(ok),
                }
            };
        let us = |v: f64| format!("{v:+.1} µs");
        let ms = |v: f64| format!("{v:+.2} ms");
        let x = |v: f64| format!("×{v:.2}");
        let mib = |v: f64| format!("{v:.1} MiB");
        let t256 = Figure::Throughput(256);
        let ping_rtt = median(&self.redis_rtt.iter().map(|r| r.0).collect::<Vec<_>>());
        let script_rtt = median(&self.redis_rtt.iter().map(|r| r.1).collect::<Vec<_>>());
        vec![
            line(
                "empty chain: round trip p50 ≤ +12 µs",
                added(Figure::RoundTripP50, Mode::Empty),
                &us,
                &|v| v <= 12.0,
            ),
            line(
                "empty chain: throughput, 256 in flight ≥ 0.9× direct",
                ratio(t256, Mode::Empty),
                &x,
                &|v| v >= 0.9,
            ),
            line(
                "full chain: round trip p50 ≤ +20 µs",
                added(Figure::RoundTripP50, Mode::Full),
                &us,
                &|v| v <= 20.0,
            ),
            line(
                "full chain: throughput, 256 in flight ≥ 0.5× direct",
                ratio(t256, Mode::Full),
                &x,
                &|v| v >= 0.5,
            ),
            line(
                "empty chain: 10 MiB result ≤ 1.5× direct",
                ratio(Figure::Result10MiB, Mode::Empty),
                &x,
                &|v| v <= 1.5,
            ),
            line(
                "full chain: 10 MiB result ≤ 1.5× direct",
                ratio(Figure::Result10MiB, Mode::Full),
                &x,
                &|v| v <= 1.5,
            ),
            line(
                "full chain: 1,000-tool list through filter+rewrite ≤ +0.5 ms",
                added(Figure::ToolsList, Mode::Full).map(|v| v / 1e3),
                &ms,
                &|v| v <= 0.5,
            ),
            line(
                "empty chain: start-up ≤ +5 ms",
                added(Figure::StartUp, Mode::Empty),
                &ms,
                &|v| v <= 5.0,
            ),
            line(
                "full chain: start-up ≤ +5 ms",
                added(Figure::StartUp, Mode::Full),
                &ms,
                &|v| v <= 5.0,
            ),
            line(
                "empty chain: a 10 MiB result costs ≤ 3× its size (peak − idle RSS)",
                self.copies(Mode::Empty),
                &x,
                &|v| v <= 3.0,
            ),
            line(
                "full chain: a 10 MiB result costs ≤ 3× its size (peak − idle RSS)",
                self.copies(Mode::Full),
                &x,
                &|v| v <= 3.0,
            ),
            line(
                "empty chain: idle RSS ≤ 6 MiB",
                self.value(Figure::IdleRss, Mode::Empty),
                &mib,
                &|v| v <= 6.0,
            ),
            line(
                "full chain: idle RSS ≤ 6 MiB",
                self.value(Figure::IdleRss, Mode::Full),
                &mib,
                &|v| v <= 6.0,
            ),
            line(
                "gateway of 3: round trip p50 ≤ +12 µs over the same server alone",
                self.value(Figure::RoundTripP50, Mode::Gateway)
                    .zip(self.value(Figure::RoundTripP50, Mode::Empty))
                    .map(|(g, e)| g - e),
                &us,
                &|v| v <= 12.0,
            ),
            line(
                "gateway: RSS per extra idle server ≤ 512 KiB (3 servers over 1, children apart)",
                self.value(Figure::IdleRss, Mode::Gateway)
                    .zip(self.value(Figure::IdleRss, Mode::Gateway1))
                    .map(|(g, e)| (g - e) / 2.0 * 1024.0),
                &|v| format!("{v:.0} KiB"),
                &|v| v <= 512.0,
            ),
            line(
                "rate_limit on [state]: round trip p50 ≤ one Redis round trip (its bucket script) + 50 µs over local buckets",
                self.value(Figure::RoundTripP50, Mode::LimitedState)
                    .zip(self.value(Figure::RoundTripP50, Mode::Limited))
                    .filter(|_| !self.redis_rtt.is_empty())
                    .map(|(s, l)| s - l - script_rtt),
                &|v| format!("{v:+.1} µs past the script's {script_rtt:.1} µs (PING {ping_rtt:.1} µs)"),
                &|v| v <= 50.0,
            ),
            line(
                "rate_limit on [state]: throughput, 16 in flight ≥ 0.5× local buckets",
                self.value(Figure::Throughput(16), Mode::LimitedState)
                    .zip(self.value(Figure::Throughput(16), Mode::Limited))
                    .map(|(s, l)| s / l),
                &x,
                &|v| v >= 0.5,
            ),
            line(
                "scan: a 1,000-tool listing read ≤ +1 ms over the empty chain",
                self.value(Figure::ToolsList, Mode::Scan)
                    .zip(self.value(Figure::ToolsList, Mode::Empty))
                    .map(|(s, e)| (s - e) / 1e3),
                &ms,
                &|v| v <= 1.0,
            ),
            line(
                "scan: a result read ≤ 2 µs per KiB over the empty chain (the 10 MiB result)",
                self.value(Figure::Result10MiB, Mode::Scan)
                    .zip(self.value(Figure::Result10MiB, Mode::Empty))
                    .map(|(s, e)| (s - e) * 1e3 / 10_240.0),
                &|v| format!("{v:+.2} µs/KiB"),
                &|v| v <= 2.0,
            ),
            line(
                "scan: a result read ≤ 2 µs per KiB over the empty chain (10 MiB of prose with accents)",
                self.value(Figure::ResultProse10MiB, Mode::Scan)
                    .zip(self.value(Figure::ResultProse10MiB, Mode::Empty))
                    .map(|(s, e)| (s - e) * 1e3 / 10_240.0),
                &|v| format!("{v:+.2} µs/KiB"),
                &|v| v <= 2.0,
            ),
            line(
                "gateway of 3: merging three 1,000-tool listings ≤ +2 ms",
                added(Figure::ToolsList, Mode::Gateway).map(|v| v / 1e3),
                &ms,
                &|v| v <= 2.0,
            ),
        ]
    }
}

impl Report {
    /// What the biggest result cost `mode` in memory, in copies of it: the
    /// peak RSS above the idle RSS, over 10 MiB.
    fn copies(&self, mode: Mode) -> Option<f64> {
        let peak = self.value(Figure::PeakRss, mode)?;
        let idle = self.value(Figure::IdleRss, mode)?;
        Some((peak - idle) / 10.0)
    }
}

#[derive(Debug)]
struct BudgetLine {
    what: String,
    measured: String,
    pass: Option<bool>,
}

/// "2 CPUs, AMD EPYC …, Linux 6.1": nproc and /proc/cpuinfo's model name.
fn machine_line() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown CPU", |(_, m)| m.trim())
        .to_owned();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("machine: {cpus} CPUs, {model}, Linux {}", kernel.trim())
}
