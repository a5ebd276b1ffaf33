//! Load from HTTP clients, for the `front-*` modes: what a remote client
//! sees of a server on HTTP, with nothing of ours in between. One keep-alive
//! connection per request in flight, each sending `tools/call` after
//! `tools/call` on one session, as concurrent requests of one client do.
//!
//! HTTP/1.1 by hand (std only, like the rest of the load generator): a
//! request with `Content-Length`, an answer read whole, by `Content-Length`
//! or chunk by chunk; the body, JSON or an event stream, must hold the
//! answer's `"result"`.

use crate::Result;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

const ECHO: &str = r#"{"name":"PREFIXecho","arguments":{"text":"hello"}}"#;
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcp-chain-bench","version":"0"}}}"#;

/// One keep-alive connection to a server's MCP endpoint.
pub(crate) struct Conn {
    reader: BufReader<TcpStream>,
    host: String,
    path: String,
}

/// A session on the server at `url` (`http://host:port/path`): its id.
pub(crate) fn open_session(url: &str) -> Result<String> {
    let mut conn = Conn::open(url)?;
    let (headers, body) = conn.post(None, INITIALIZE)?;
    if !body.contains("\"result\"") {
        return Err(format!("initialize was answered with {body:?}").into());
    }
    let session = headers
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .ok_or("no Mcp-Session-Id in the answer to initialize")?;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    conn.post(Some(&session), initialized)?;
    Ok(session)
}

/// Sequential round trips on one connection after `warm_up`; each in µs.
pub(crate) fn round_trips(
    url: &str,
    session: &str,
    prefix: &str,
    warm_up: usize,
    calls: usize,
) -> Result<Vec<f64>> {
    let mut conn = Conn::open(url)?;
    let call = request(prefix);
    for _ in 0..warm_up {
        conn.call(session, &call)?;
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        conn.call(session, &call)?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(times)
}

/// Threads that drive the connections of a throughput run. A thread per
/// connection would put 256 threads on two cores, and the load generator's
/// own switching would be what is measured: each thread keeps a request in
/// flight on each of its connections instead, as wrk does with its event
/// loop.
const LOAD_THREADS: u64 = 4;

/// `in_flight` keep-alive connections to `url`, spread over the load
/// threads. A warm-up and its measure share them: connections closed and
/// opened again at once would meet the server's cap before it saw the
/// first ones close.
pub(crate) fn connections(url: &str, in_flight: u64) -> Result<Vec<Vec<Conn>>> {
    let threads = in_flight.min(LOAD_THREADS);
    let mut groups: Vec<Vec<Conn>> = (0..threads).map(|_| Vec::new()).collect();
    for n in 0..in_flight {
        groups[(n % threads) as usize].push(Conn::open(url)?);
    }
    Ok(groups)
}

/// `total` calls from every connection of `groups` at once (a request in
/// flight on each); answers per second.
pub(crate) fn throughput(
    groups: &mut [Vec<Conn>],
    session: &str,
    prefix: &str,
    total: u64,
) -> Result<f64> {
    let in_flight = groups.iter().map(Vec::len).sum::<usize>().max(1) as u64;
    let each = (total / in_flight).max(1);
    let call = request(prefix);
    let started = Instant::now();
    let done: Vec<Result<()>> = std::thread::scope(|scope| {
        let workers: Vec<_> = groups
            .iter_mut()
            .map(|conns| {
                let call = &call;
                scope.spawn(move || -> Result<()> {
                    for conn in conns.iter_mut() {
                        conn.send_call(session, call)?;
                    }
                    for round in 0..each {
                        for conn in conns.iter_mut() {
                            conn.answer_call()?;
                            if round + 1 < each {
                                conn.send_call(session, call)?;
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err("a load thread panicked".into()))
            })
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    done.into_iter().collect::<Result<Vec<()>>>()?;
    Ok((each * in_flight) as f64 / elapsed)
}

/// The call's text, with `ID` where each request's own id goes: ids in
/// flight on a session must differ.
fn request(prefix: &str) -> String {
    let params = ECHO.replace("PREFIX", prefix);
    format!(r#"{{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{params}}}"#)
}

/// The access token the `front-oauth` mode's requests carry (every
/// request of a run carries it once set; a front without OAuth ignores it).
static BEARER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub(crate) fn set_bearer(token: String) {
    let _ = BEARER.set(token);
}

pub(crate) fn bearer() -> Option<&'static str> {
    BEARER.get().map(String::as_str)
}

/// Ids for the calls, unique across every connection of a run.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Conn {
    fn open(url: &str) -> Result<Self> {
        let rest = url.strip_prefix("http://").ok_or("an http:// URL")?;
        let (host, path) = rest.split_once('/').ok_or("a URL with a path")?;
        let stream = TcpStream::connect(host)?;
        stream.set_nodelay(true)?;
        Ok(Self {
            reader: BufReader::with_capacity(64 * 1024, stream),
            host: host.to_owned(),
            path: format!("/{path}"),
        })
    }

    fn call(&mut self, session: &str, call: &str) -> Result<()> {
        self.send_call(session, call)?;
        self.answer_call()
    }

    /// Sends a call with an id of its own.
    fn send_call(&mut self, session: &str, call: &str) -> Result<()> {
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let call = call.replacen("ID", &id.to_string(), 1);
        self.send(Some(session), &call)
    }

    /// Reads the answer to the call sent last.
    fn answer_call(&mut self) -> Result<()> {
        let (_, body) = self.answer()?;
        if !body.contains("\"result\"") {
            return Err(format!("a call was answered with {body:?}").into());
        }
        Ok(())
    }

    /// POSTs `body`; the answer's head and body.
    fn post(&mut self, session: Option<&str>, body: &str) -> Result<(String, String)> {
        self.send(session, body)?;
        self.answer()
    }

    /// POSTs `body`, head and body in one write (two would be two packets,
    /// and a server woken twice for one request).
    fn send(&mut self, session: Option<&str>, body: &str) -> Result<()> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.host,
            body.len()
        );
        if let Some(session) = session {
            head.push_str(&format!(
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
            ));
        }
        if let Some(token) = bearer() {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        head.push_str("\r\n");
        head.push_str(body);
        self.reader.get_mut().write_all(head.as_bytes())?;
        Ok(())
    }

    fn answer(&mut self) -> Result<(String, String)> {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line)? == 0 {
                return Err("the server closed the connection".into());
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_ascii_lowercase())
            })
        };
        let mut body = Vec::new();
        if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size)?;
                let size =
                    usize::from_str_radix(size.trim(), 16).map_err(|_| "a bad chunk size")?;
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk)?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(len) = header("content-length") {
            let mut chunk = vec![0; len.parse().map_err(|_| "a bad Content-Length")?];
            self.reader.read_exact(&mut chunk)?;
            body = chunk;
        }
        if !head.starts_with("HTTP/1.1 2") {
            return Err(format!(
                "{}: {}",
                head.lines().next().unwrap_or_default(),
                String::from_utf8_lossy(&body)
            )
            .into());
        }
        Ok((head, String::from_utf8_lossy(&body).into_owned()))
    }
}
