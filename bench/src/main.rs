//! mcp-chain's benchmark: what the proxy costs next to a direct connection,
//! measured in one run.
//!
//! ```text
//! mcp-chain-bench [--quick] [--rounds N] [--json [PATH]] [--modes LIST] [--proxy PATH] [--config PATH] [--only LIST] [--in-flight LIST]
//! ```
//!
//! Modes, each a process the load generator talks to over stdio pipes:
//!
//! - `direct`: the fixture server (`bench-mcp-server`) itself;
//! - `relay`: `bench-byte-relay` in front of it, the floor for any process
//!   in the middle;
//! - `empty`: `mcp-chain -- bench-mcp-server`, no layers;
//! - `gateway`: `mcp-chain` serving three copies of the fixture as
//!   `[servers.*]` (one of them unprefixed, the one the calls go to): what
//!   the gateway costs a round trip, and what merging three 1,000-tool
//!   listings costs; `gateway-1`: the same with one copy, so what each
//!   further server adds in memory is `gateway` over it;
//! - `full`: `mcp-chain --config bench/configs/full.toml -- bench-mcp-server`
//! - `full-telemetry`: `full` with `[telemetry]` on: every span exported
//!   over OTLP/HTTP (to a sink of the bench's, `sink.rs`), metrics recorded,
//!   exported and served at a `metrics_listen` of its own;
//! - `guards`: the same with the guard layers (validate, limit, approve,
//!   pin) added: `bench/configs/guards.toml`
//!   (audit to a temp file, filter, rewrite with a prefix, rate_limit);
//! - `http-empty`, `http-full`: the same, to the fixture served over
//!   Streamable HTTP (`bench-mcp-server --http`, one for the run);
//! - `http-supergateway`: supergateway's Streamable HTTP→stdio bridge to
//!   that server, what users run for this without mcp-chain (from
//!   tests/interop/node_modules; not available until `make test-interop`
//!   installed it);
//! - `front-empty`, `front-full`, `front-supergateway`: the fixture served
//!   to HTTP clients, by `mcp-chain --listen` (empty or full chain) or by
//!   supergateway's stdio→Streamable HTTP server (`--stateful`, one child
//!   per session). The load generator reaches each through the same
//!   adapter, `mcp-chain -- URL` with no layers, so what differs between
//!   the three is the server under test; memory figures are that server's.
//!   The `HTTP clients:` rows load those servers directly over HTTP
//!   (`http_load.rs`), nothing of ours in between: what a remote client
//!   sees.
//! - `front-shared-floor`: the fixture served to HTTP clients by a
//!   minimal bridge that shares one child among them (`bench-shared-bridge`:
//!   one handshake, ids renamed, nothing else): the floor for a shared
//!   upstream.
//! - `front-shared`: `front-empty` in shared mode, every session served by
//!   a pool of two children (`upstream_sessions = "shared"`).
//! - `front-oauth`: `front-empty` as an OAuth resource server: every
//!   request carries an RS256 access token the front checks; the bench is
//!   the issuer (`issuer.rs`), and its pipe client sends the token as a
//!   header.
//! - `limited`, `limited-state`: one `rate_limit` rule that never refuses,
//!   on the process's buckets or on `[state]` (a loopback Redis).
//! - `scan`: one `scan` layer, every listing and result read by its rules.
//!
//! Every round starts fresh processes and runs every workload on every
//! mode, one after another (A B C D, A B C D, …, the order rotated each
//! round), so drift of the machine falls on all modes alike. Each figure is
//! the median over rounds; the table gives it with its ratio to direct and
//! what was added.
//!
//! # Layout
//!
//! - `session.rs`: one spawned process, its pipes, its /proc memory;
//! - `served.rs`: the servers that listen for a whole run;
//! - `http_load.rs`: HTTP clients' load on a `front-*` server, direct;
//! - `workload.rs`: the measurements;
//! - `stats.rs`: percentiles and medians;
//! - `report.rs`: the Markdown table, the budget, the JSON.

mod http_load;
mod issuer;
mod report;
mod served;
mod session;
mod sink;
mod state;
mod stats;
mod workload;

use report::{Figure, Mode, Report};
use session::{Launch, Session};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub(crate) type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Tools the fixture lists: the size the budget names.
const TOOLS: usize = 1000;

/// Notifications per relay run: the size the budget names.
const NOTIFICATIONS: usize = 10_000;

/// How long a fresh session sits before its idle memory is read.
const SETTLE: Duration = Duration::from_millis(100);

/// How much of everything to do.
#[derive(Debug, Clone)]
struct Plan {
    rounds: usize,
    starts: usize,
    seq_warm_up: usize,
    seq_calls: usize,
    /// (in flight, answers to wait for)
    pipelined: Vec<(u64, u64)>,
    mib1_calls: usize,
    mib10_calls: usize,
    list_calls: usize,
    notify_runs: usize,
}

impl Plan {
    fn full() -> Self {
        Self {
            rounds: 7,
            starts: 10,
            seq_warm_up: 1000,
            seq_calls: 10_000,
            pipelined: vec![(1, 5_000), (16, 20_000), (256, 40_000)],
            mib1_calls: 20,
            mib10_calls: 6,
            list_calls: 200,
            notify_runs: 3,
        }
    }

    fn quick() -> Self {
        Self {
            rounds: 3,
            starts: 5,
            seq_warm_up: 500,
            seq_calls: 10_000,
            pipelined: vec![(1, 2_000), (16, 10_000), (256, 20_000)],
            mib1_calls: 8,
            mib10_calls: 3,
            list_calls: 50,
            notify_runs: 1,
        }
    }
}

#[derive(Debug)]
struct Options {
    plan: Plan,
    quick: bool,
    /// `Some(None)`: JSON on stdout instead of the table.
    json: Option<Option<PathBuf>>,
    modes: Vec<Mode>,
    proxy: Option<PathBuf>,
    config: PathBuf,
    /// Workloads to run (all when `None`), for profiling one at a time.
    only: Option<Vec<String>>,
}

/// The workloads `--only` can pick.
const WORKLOADS: [&str; 7] = [
    "start-up",
    "round-trip",
    "pipelined",
    "1mib",
    "10mib",
    "tools-list",
    "notifications",
];

impl Options {
    fn wants(&self, workload: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|w| w == workload))
    }
}

const USAGE: &str = "usage: mcp-chain-bench [--quick] [--rounds N] [--json [PATH]] \
[--modes direct,relay,empty,full,guards,http-empty,http-full,http-supergateway,front-empty,front-full,front-supergateway] [--proxy PATH] [--config PATH] \
[--only start-up,round-trip,pipelined,1mib,10mib,tools-list,notifications] \
[--in-flight 1,16,256]";

fn parse_options() -> Result<Options> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.reverse();
    let mut quick = false;
    let mut rounds = None;
    let mut json = None;
    let mut modes = Mode::ALL.to_vec();
    let mut proxy = None;
    let mut only = None;
    let mut in_flight: Option<Vec<u64>> = None;
    let mut config = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/full.toml");
    while let Some(arg) = args.pop() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--rounds" => {
                let n: usize = args.pop().and_then(|n| n.parse().ok()).ok_or(USAGE)?;
                rounds = Some(n.max(1));
            }
            "--json" => match args.last() {
                Some(next) if !next.starts_with("--") => {
                    json = Some(args.pop().map(PathBuf::from));
                }
                _ => json = Some(None),
            },
            "--modes" => {
                let list = args.pop().ok_or(USAGE)?;
                modes = list
                    .split(',')
                    .map(|m| Mode::parse(m.trim()).ok_or(format!("unknown mode {m:?}")))
                    .collect::<std::result::Result<_, _>>()?;
                if !modes.contains(&Mode::Direct) {
                    modes.insert(0, Mode::Direct);
                }
            }
            "--proxy" => proxy = Some(PathBuf::from(args.pop().ok_or(USAGE)?)),
            "--config" => config = PathBuf::from(args.pop().ok_or(USAGE)?),
            "--only" => {
                let list: Vec<String> = args
                    .pop()
                    .ok_or(USAGE)?
                    .split(',')
                    .map(|w| w.trim().to_owned())
                    .collect();
                if let Some(bad) = list.iter().find(|w| !WORKLOADS.contains(&w.as_str())) {
                    return Err(format!("unknown workload {bad:?}\n{USAGE}").into());
                }
                only = Some(list);
            }
            "--in-flight" => {
                let list = args.pop().ok_or(USAGE)?;
                let windows = list
                    .split(',')
                    .map(|n| n.trim().parse::<u64>().ok().filter(|&n| n > 0))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(format!("--in-flight wants numbers: {list:?}"))?;
                in_flight = Some(windows);
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    let mut plan = if quick { Plan::quick() } else { Plan::full() };
    if let Some(n) = rounds {
        plan.rounds = n;
    }
    if let Some(windows) = in_flight {
        // The planned total for the nearest planned window, so a profile of
        // one window runs as long as it does in the full table.
        let planned = plan.pipelined.clone();
        plan.pipelined = windows
            .into_iter()
            .map(|w| {
                let total = planned
                    .iter()
                    .min_by_key(|(p, _)| p.abs_diff(w))
                    .map_or(20_000, |&(_, t)| t);
                (w, total)
            })
            .collect();
    }
    Ok(Options {
        plan,
        quick,
        json,
        modes,
        proxy,
        config,
        only,
    })
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-chain-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Where `cargo build` put our siblings (the fixture, the relay, mcp-chain).
fn sibling(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe.parent().ok_or("no parent directory")?.join(name);
    if !path.exists() {
        return Err(format!(
            "{} not found: run `cargo build --release --workspace` first (or `make bench`)",
            path.display()
        )
        .into());
    }
    Ok(path)
}

fn run() -> Result<()> {
    let opts = parse_options()?;
    let fixture = sibling("bench-mcp-server")?;
    let proxy = match &opts.proxy {
        Some(p) => p.clone(),
        None => sibling("mcp-chain")?,
    };
    let work = std::env::temp_dir().join(format!("mcp-chain-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let outcome = measure(&opts, &fixture, &proxy, &work);
    let _ = std::fs::remove_dir_all(&work);
    let report = outcome?;

    let mut out = std::io::stdout().lock();
    match &opts.json {
        Some(None) => report.write_json(&mut out)?,
        Some(Some(path)) => {
            report.write_table(&mut out)?;
            report.write_json(&mut std::fs::File::create(path)?)?;
        }
        None => report.write_table(&mut out)?,
    }
    Ok(())
}

/// supergateway, as the interop suite installs it.
const SUPERGATEWAY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/interop/node_modules/supergateway/dist/index.js"
);

fn launch(
    mode: Mode,
    fixture: &Path,
    url: &str,
    proxy: &Path,
    config: &Path,
    work: &Path,
    fronts: &mut Vec<(Mode, served::Served)>,
) -> Result<Launch> {
    let fixture_os = OsString::from(fixture);
    let mut launch = Launch {
        program: proxy.to_owned(),
        args: Vec::new(),
        env: Vec::new(),
        tool_prefix: "",
        listed_copies: 1,
        memory_of: None,
    };
    match mode {
        Mode::Direct => launch.program = fixture.to_owned(),
        Mode::Relay => {
            launch.program = sibling("bench-byte-relay")?;
            launch.args = vec![fixture_os];
        }
        Mode::Empty => launch.args = vec!["--".into(), fixture_os],
        Mode::Gateway | Mode::Gateway1 => {
            // Three copies of the fixture behind one mcp-chain (or one);
            // calls go to the one whose names are unprefixed.
            let server = |name: &str, prefix: &str| {
                format!(
                    "[servers.{name}]\ncommand = {:?}\nprefix = {prefix:?}\n",
                    fixture.display().to_string()
                )
            };
            let copies = if mode == Mode::Gateway { 3 } else { 1 };
            let servers = [server("bench", ""), server("b", "b"), server("c", "c")];
            let text = servers[..copies].concat();
            let path = work.join(format!("gateway-{copies}.toml"));
            std::fs::write(&path, text)?;
            launch.args = vec!["--config".into(), path.into()];
            launch.listed_copies = copies;
        }
        Mode::Full | Mode::FullTelemetry | Mode::Guards | Mode::HttpFull => {
            let server = if mode == Mode::HttpFull {
                url.into()
            } else {
                fixture_os
            };
            let config = match mode {
                Mode::Guards => Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/guards.toml"),
                Mode::FullTelemetry => telemetry_config(config, work)?,
                _ => config.to_owned(),
            };
            launch.args = vec!["--config".into(), config.into(), "--".into(), server];
            launch
                .env
                .push(("BENCH_AUDIT_PATH".into(), work.join("audit.jsonl").into()));
            // guards.toml's pin file.
            launch
                .env
                .push(("BENCH_PIN_PATH".into(), work.join("pins.json").into()));
            // The rewrite in configs/full.toml prefixes every tool with this.
            launch.tool_prefix = "b_";
        }
        Mode::Limited | Mode::LimitedState => {
            let redis = REDIS
                .get()
                .map(|r| r.port)
                .filter(|_| mode == Mode::LimitedState);
            let path = work.join(format!("{}.toml", mode.key()));
            std::fs::write(&path, state::config(redis))?;
            launch.args = vec!["--config".into(), path.into(), "--".into(), fixture_os];
        }
        Mode::Scan => {
            let path = work.join("scan.toml");
            std::fs::write(&path, "[[middleware]]\ntype = \"scan\"\n")?;
            launch.args = vec!["--config".into(), path.into(), "--".into(), fixture_os];
        }
        Mode::HttpEmpty => launch.args = vec!["--".into(), url.into()],
        Mode::FrontEmpty
        | Mode::FrontFull
        | Mode::FrontPeer
        | Mode::FrontOAuth
        | Mode::FrontSharedFloor
        | Mode::FrontShared => {
            let front = serve_front(mode, fixture, proxy, config, work)?;
            launch.args = vec!["--".into(), front.url.clone().into()];
            if mode == Mode::FrontOAuth {
                // mcp-chain as the pipe client sends the token as a header.
                let token = http_load::bearer().ok_or("no token for the front")?;
                let header = format!("Authorization: Bearer {token}");
                launch.args = [vec!["-H".into(), header.into()], launch.args].concat();
            }
            launch.memory_of = Some(front.pid());
            if mode == Mode::FrontFull {
                launch.tool_prefix = "b_";
            }
            fronts.push((mode, front));
        }
        Mode::HttpPeer => {
            launch.program = "node".into();
            let bridge = vec![SUPERGATEWAY.into(), "--streamableHttp".into(), url.into()];
            launch.args = bridge;
            launch.args.extend(["--logLevel".into(), "none".into()]);
        }
    }
    Ok(launch)
}

/// A `front-*` server loaded by HTTP clients directly: round trips on one
/// connection, and throughput from 16 and 256 at once, on a session of
/// their own.
fn http_clients(
    opts: &Options,
    report: &mut Report,
    mode: Mode,
    url: &str,
    prefix: &str,
) -> Result<()> {
    let plan = &opts.plan;
    let session = http_load::open_session(url)?;
    if opts.wants("round-trip") {
        let t = http_load::round_trips(
            url,
            &session,
            prefix,
            plan.seq_warm_up / 10,
            plan.seq_calls / 10,
        )?;
        report.add(Figure::HttpRoundTripP50, mode, stats::percentile(&t, 50.0));
    }
    let windows = plan
        .pipelined
        .iter()
        .filter(|(n, _)| *n > 1 && opts.wants("pipelined"));
    for &(in_flight, total) in windows {
        let mut connections = http_load::connections(url, in_flight)?;
        http_load::throughput(&mut connections, &session, prefix, total / 40)?;
        let per_s = http_load::throughput(&mut connections, &session, prefix, total / 4)?;
        report.add(Figure::HttpThroughput(in_flight), mode, per_s);
    }
    Ok(())
}

/// What every `front-*` server's config starts with. A front is loaded by
/// a bridge session (a connection per request in flight, up to 256) and
/// by as many HTTP clients at once: past the default cap of 512
/// connections, which is for people, not for this.
const FRONT: &str = "[front]\nmax_connections = 2048\n";

/// The server under test of a `front-*` mode, listening for the run.
fn serve_front(
    mode: Mode,
    fixture: &Path,
    proxy: &Path,
    config: &Path,
    work: &Path,
) -> Result<served::Served> {
    if mode == Mode::FrontSharedFloor {
        return served::Served::printing(&sibling("bench-shared-bridge")?, &[fixture.into()]);
    }
    let port = served::free_port()?;
    let log = work.join(format!("{}-server.log", mode.key()));
    let listen = format!("127.0.0.1:{port}");
    let audit = (
        "BENCH_AUDIT_PATH".to_owned(),
        work.join("front-audit.jsonl").into(),
    );
    let (program, args): (PathBuf, Vec<OsString>) = match mode {
        Mode::FrontPeer => {
            let stdio = fixture.to_string_lossy().into_owned();
            let args = [
                SUPERGATEWAY,
                "--stdio",
                &stdio,
                "--outputTransport",
                "streamableHttp",
            ];
            let mut args: Vec<OsString> = args.iter().map(Into::into).collect();
            args.extend(
                [
                    "--stateful",
                    "--port",
                    &port.to_string(),
                    "--logLevel",
                    "none",
                ]
                .map(Into::into),
            );
            ("node".into(), args)
        }
        Mode::FrontShared => {
            let shared = work.join("front-shared.toml");
            let table = "upstream_sessions = \"shared\"\nshared_pool = 2\n";
            std::fs::write(&shared, format!("{FRONT}{table}"))?;
            let args = [
                "--listen".into(),
                listen.into(),
                "--config".into(),
                shared.into(),
                "--".into(),
                fixture.into(),
            ];
            (proxy.to_owned(), args.to_vec())
        }
        Mode::FrontOAuth => {
            let issuer = ISSUER.get().ok_or("no issuer")?;
            let audience = format!("http://{listen}/mcp");
            let oauth = work.join("front-oauth.toml");
            std::fs::write(
                &oauth,
                format!(
                    "{FRONT}[front.oauth]\nissuer = \"{}\"\naudience = \"{audience}\"\nrequired_scopes = [\"mcp:read\"]\n",
                    issuer.url
                ),
            )?;
            http_load::set_bearer(issuer.token(&audience)?);
            let args = [
                "--listen".into(),
                listen.into(),
                "--config".into(),
                oauth.into(),
                "--".into(),
                fixture.into(),
            ];
            (proxy.to_owned(), args.to_vec())
        }
        Mode::FrontFull => {
            let text = std::fs::read_to_string(config)?;
            let full = work.join("front-full.toml");
            match text.lines().any(|l| l.trim() == "[front]") {
                // A config of the user's with its own front: as it is.
                true => std::fs::write(&full, text)?,
                false => std::fs::write(&full, format!("{text}\n{FRONT}"))?,
            }
            let args = [
                "--listen".into(),
                listen.into(),
                "--config".into(),
                full.into(),
            ];
            (
                proxy.to_owned(),
                [args.to_vec(), vec!["--".into(), fixture.into()]].concat(),
            )
        }
        _ => {
            let empty = work.join("front-empty.toml");
            std::fs::write(&empty, FRONT)?;
            let args = [
                "--listen".into(),
                listen.into(),
                "--config".into(),
                empty.into(),
                "--".into(),
                fixture.into(),
            ];
            (proxy.to_owned(), args.to_vec())
        }
    };
    let pins = (
        "BENCH_PIN_PATH".to_owned(),
        work.join("front-pins.json").into(),
    );
    served::Served::listening(&program, &args, &[audit, pins], port, &log)
}

/// `config` with telemetry on: spans and metrics exported over OTLP to the
/// bench's sink, metrics also served as Prometheus text (on a port of
/// their own, not scraped).
fn telemetry_config(config: &Path, work: &Path) -> Result<PathBuf> {
    let mut text = std::fs::read_to_string(config)?;
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    text += &format!(
        "\n[telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"bench\"\nmetrics_listen = \"{metrics}\"\n",
        sink::url()?
    );
    let path = work.join(format!("telemetry-{}.toml", metrics.port()));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Why a mode cannot run here, if it cannot.
fn unavailable(mode: Mode, launch: &Launch) -> Option<String> {
    match mode {
        Mode::Full | Mode::FullTelemetry | Mode::Guards | Mode::HttpFull => {
            check_full(launch).err()
        }
        Mode::HttpPeer | Mode::FrontPeer if !Path::new(SUPERGATEWAY).is_file() => {
            Some("supergateway is not installed (make test-interop installs it)".into())
        }
        Mode::LimitedState => state::Redis::unavailable(),
        _ => None,
    }
}

/// `mcp-chain check` on the full config: `Err(reason)` until the layers
/// it names are wired into the binary.
fn check_full(launch: &Launch) -> std::result::Result<(), String> {
    let mut args: Vec<OsString> = vec!["check".into()];
    args.extend(launch.args.iter().cloned());
    let out = std::process::Command::new(&launch.program)
        .args(&args)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    Err(text.lines().take(3).collect::<Vec<_>>().join(" / "))
}

/// The issuer of the `front-oauth` mode's tokens, for the run.
static ISSUER: std::sync::OnceLock<issuer::Issuer> = std::sync::OnceLock::new();

/// The Redis of the `limited-state` mode, for the run.
static REDIS: std::sync::OnceLock<state::Redis> = std::sync::OnceLock::new();

fn measure(opts: &Options, fixture: &Path, proxy: &Path, work: &Path) -> Result<Report> {
    let plan = &opts.plan;
    if opts.modes.contains(&Mode::FrontOAuth) {
        let _ = ISSUER.set(issuer::Issuer::start()?);
    }
    if opts.modes.contains(&Mode::LimitedState) && state::Redis::unavailable().is_none() {
        let _ = REDIS.set(state::Redis::start(work)?);
    }
    let http = match opts.modes.iter().any(|m| m.is_http()) {
        true => Some(served::Served::fixture(fixture)?),
        false => None,
    };
    let url = http.as_ref().map_or("", |h| h.url.as_str());
    let mut launches = Vec::new();
    let mut unavailable = Vec::new();
    let mut fronts = Vec::new();
    for &mode in &opts.modes {
        if mode == Mode::FrontPeer && !Path::new(SUPERGATEWAY).is_file() {
            let reason = "supergateway is not installed (make test-interop installs it)".to_owned();
            eprintln!("{} not available: {reason}", mode.label());
            unavailable.push((mode, reason));
            continue;
        }
        let l = launch(mode, fixture, url, proxy, &opts.config, work, &mut fronts)?;
        if let Some(reason) = self::unavailable(mode, &l) {
            eprintln!("{} not available: {reason}", mode.label());
            unavailable.push((mode, reason));
            continue;
        }
        launches.push((mode, l));
    }
    let modes: Vec<Mode> = launches.iter().map(|(m, _)| *m).collect();
    let front_urls: Vec<(Mode, String, &str)> = fronts
        .iter()
        .filter(|(mode, _)| modes.contains(mode))
        .map(|(mode, served)| {
            let prefix = if *mode == Mode::FrontFull { "b_" } else { "" };
            (*mode, served.url.clone(), prefix)
        })
        .collect();
    let mut report = Report::new(&modes, plan.rounds, opts.quick, unavailable);
    let started = Instant::now();

    for round in 0..plan.rounds {
        eprintln!(
            "round {}/{} ({:.0} s so far)",
            round + 1,
            plan.rounds,
            started.elapsed().as_secs_f64()
        );
        let mut order: Vec<&(Mode, Launch)> = launches.iter().collect();
        order.rotate_left(round % launches.len());
        let stderr = |mode: Mode| work.join(format!("{}.stderr", mode.key()));

        // Start-up: a fresh process per start, modes taking turns.
        let mut starts: Vec<Vec<f64>> = vec![Vec::new(); order.len()];
        let start_count = if opts.wants("start-up") {
            plan.starts
        } else {
            0
        };
        for _ in 0..start_count {
            for (i, (mode, l)) in order.iter().enumerate() {
                starts[i].push(workload::start_up(l, &stderr(*mode))?);
            }
        }
        for (i, (mode, _)) in order.iter().enumerate().filter(|_| start_count > 0) {
            report.add(Figure::StartUp, *mode, stats::median(&starts[i]));
        }

        // One long-lived session per mode for the rest of the round.
        let mut sessions = Vec::new();
        for (mode, l) in &order {
            let mut s = Session::spawn(l, &stderr(*mode))?;
            s.initialize()?;
            sessions.push((*mode, s));
        }
        std::thread::sleep(SETTLE);
        for (mode, s) in &sessions {
            let (rss, _) = s.memory_kib()?;
            report.add(Figure::IdleRss, *mode, rss as f64 / 1024.0);
        }

        let each = |sessions: &mut Vec<(Mode, Session)>,
                    f: &mut dyn FnMut(Mode, &mut Session) -> Result<()>|
         -> Result<()> {
            for (mode, s) in sessions.iter_mut() {
                f(*mode, s).map_err(|e| format!("{}: {e}", mode.label()))?;
            }
            Ok(())
        };

        if opts.wants("round-trip") {
            if let Some(redis) = REDIS.get() {
                let (ping, script) = redis.round_trips_us(plan.seq_calls.min(2_000))?;
                report.redis_rtt.push((ping, script));
            }
            each(&mut sessions, &mut |mode, s| {
                let t = workload::round_trips(s, plan.seq_warm_up, plan.seq_calls)?;
                report.add(Figure::RoundTripP50, mode, stats::percentile(&t, 50.0));
                report.add(Figure::RoundTripP90, mode, stats::percentile(&t, 90.0));
                report.add(Figure::RoundTripP99, mode, stats::percentile(&t, 99.0));
                Ok(())
            })?;
        }
        for &(in_flight, total) in plan.pipelined.iter().filter(|_| opts.wants("pipelined")) {
            let figure = Figure::Throughput(in_flight);
            each(&mut sessions, &mut |mode, s| {
                // A short unmeasured run first: fills buffers, wakes threads.
                workload::throughput(s, in_flight, total / 10)?;
                report.add(figure, mode, workload::throughput(s, in_flight, total)?);
                Ok(())
            })?;
        }
        if opts.wants("1mib") {
            each(&mut sessions, &mut |mode, s| {
                let t = workload::big_results(s, 1 << 20, false, 2, plan.mib1_calls)?;
                report.add(Figure::Result1MiB, mode, stats::median(&t));
                let (_, hwm) = s.memory_kib()?;
                report.add(Figure::PeakRss1MiB, mode, hwm as f64 / 1024.0);
                Ok(())
            })?;
        }
        if opts.wants("10mib") {
            each(&mut sessions, &mut |mode, s| {
                let t = workload::big_results(s, 10 << 20, false, 1, plan.mib10_calls)?;
                report.add(Figure::Result10MiB, mode, stats::median(&t));
                // What reading a result costs `scan` on text like a real
                // one's, against the empty chain.
                if matches!(mode, Mode::Empty | Mode::Scan) {
                    let t = workload::big_results(s, 10 << 20, true, 1, plan.mib10_calls)?;
                    report.add(Figure::ResultProse10MiB, mode, stats::median(&t));
                }
                Ok(())
            })?;
        }
        if opts.wants("tools-list") {
            each(&mut sessions, &mut |mode, s| {
                let t = workload::tool_lists(s, TOOLS, 10, plan.list_calls)?;
                report.add(Figure::ToolsList, mode, stats::median(&t));
                Ok(())
            })?;
        }
        if opts.wants("notifications") {
            each(&mut sessions, &mut |mode, s| {
                let t = workload::notifications(s, NOTIFICATIONS, 1, plan.notify_runs)?;
                report.add(Figure::Notifications, mode, stats::median(&t));
                Ok(())
            })?;
        }

        for (mode, url, prefix) in &front_urls {
            http_clients(opts, &mut report, *mode, url, prefix)
                .map_err(|e| format!("{}, HTTP clients: {e}", mode.label()))?;
        }

        for (mode, s) in sessions {
            let (_, hwm) = s.memory_kib()?;
            report.add(Figure::PeakRss, mode, hwm as f64 / 1024.0);
            s.finish().map_err(|e| format!("{}: {e}", mode.label()))?;
        }
        // The audit log of the full chain grows by a line per message.
        let _ = std::fs::remove_file(work.join("audit.jsonl"));
    }
    let slow = session::SLOW_PARSES.load(std::sync::atomic::Ordering::Relaxed);
    if slow > 0 {
        eprintln!("note: {slow} answer lines took the slow (full-parse) path");
    }
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(report)
}
