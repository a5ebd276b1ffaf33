//! `mcp-chain check --list`: what a client would be offered. The servers
//! are started and listed through the same relay and chain a client's
//! session goes through (over an in-memory pipe), as a client would list
//! them: every page of tools, prompts, resources and templates. What the
//! gateway says meanwhile (a name left out and why, a server that did not
//! start or answer) is heard and reported beside the names, so a person
//! sees before registering the config what the model will see.

use crate::config::Config;
use crate::relay::{self, Served};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// Pages asked of one listing at most (a server that pages forever).
const PAGES_AT_MOST: usize = 100;

/// The four listings: method, the result's array, the key that names an
/// item, the capability that offers it.
const LISTINGS: [(&str, &str, &str, &str); 4] = [
    ("tools/list", "tools", "name", "tools"),
    ("prompts/list", "prompts", "name", "prompts"),
    ("resources/list", "resources", "uri", "resources"),
    (
        "resources/templates/list",
        "resourceTemplates",
        "uriTemplate",
        "resources",
    ),
];

/// Why `check --list` could not list what the servers offer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListError {
    #[error("cannot start: {0}")]
    Runtime(std::io::Error),
    #[error("the servers were not listed within {0:?}")]
    TimedOut(Duration),
    #[error("{0}")]
    Relay(#[from] relay::RunError),
    #[error("the session closed: {0}")]
    Closed(std::io::Error),
    #[error("the session ended before {0} was answered")]
    Ended(String),
    /// A listing answered with an error (the server's words, escaped).
    #[error("{method}: {error}")]
    Refused { method: String, error: String },
}

/// Lists what `served` offers, within `wait`; the report's text.
pub(crate) fn report(
    config: &Config,
    served: &Served,
    wait: Duration,
) -> Result<String, ListError> {
    let heard = Heard::default();
    let subscriber = tracing_subscriber::registry().with(heard.clone());
    // One thread: every task the relay spawns is polled here, under
    // `heard`, so what the gateway says is heard wherever it is said.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ListError::Runtime)?;
    let listed = tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async { tokio::time::timeout(wait, list(config, served)).await })
    });
    let listed = match listed {
        Ok(listed) => listed?,
        Err(_) => return Err(ListError::TimedOut(wait)),
    };
    let mut report = String::from("listed, as a client sees it:\n");
    for ((method, _, _, _), names) in LISTINGS.iter().zip(&listed) {
        let what = method.trim_end_matches("/list").replace('/', " ");
        let Some(names) = names else {
            let _ = writeln!(report, "  {what}: not offered");
            continue;
        };
        let _ = writeln!(report, "  {what} ({}):", names.len());
        for name in names {
            let _ = writeln!(
                report,
                "    {}",
                mcp_chain_middleware::shown::shown(name, 200)
            );
        }
    }
    let said = heard.lines();
    if !said.is_empty() {
        report.push_str("said while listing (names left out, servers that did not start):\n");
        for line in said {
            let _ = writeln!(report, "  {line}");
        }
    }
    Ok(report)
}

/// Each listing's names (`None`: not offered), listed through a session.
async fn list(config: &Config, served: &Served) -> Result<Vec<Option<Vec<String>>>, ListError> {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (proxy_in, proxy_out) = tokio::io::split(theirs);
    let (_stop, signals) = tokio::sync::mpsc::channel(1);
    let relay = relay::run(
        config,
        served,
        Box::pin(proxy_in),
        Box::pin(proxy_out),
        signals,
        None,
    );
    let (read, write) = tokio::io::split(ours);
    let mut client = Client {
        lines: BufReader::new(read).lines(),
        write,
        next: 0,
    };
    let asking = async move {
        let listed = client.list_all().await;
        // The pipe closes: the session ends as a client's would.
        drop(client);
        listed
    };
    let (ended, listed) = tokio::join!(relay, asking);
    ended?;
    listed
}

struct Client<R, W> {
    lines: tokio::io::Lines<BufReader<R>>,
    write: W,
    next: u64,
}

impl<R: tokio::io::AsyncRead + Unpin, W: tokio::io::AsyncWrite + Unpin> Client<R, W> {
    async fn list_all(&mut self) -> Result<Vec<Option<Vec<String>>>, ListError> {
        let initialize = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcp-chain check --list", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = self.ask("initialize", initialize).await?;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        let mut listed = Vec::new();
        for (method, array, key, capability) in LISTINGS {
            if result
                .pointer(&format!("/capabilities/{capability}"))
                .is_none()
            {
                listed.push(None);
                continue;
            }
            listed.push(Some(self.pages(method, array, key).await?));
        }
        Ok(listed)
    }

    /// Every page of one listing: the names of its items.
    async fn pages(
        &mut self,
        method: &str,
        array: &str,
        key: &str,
    ) -> Result<Vec<String>, ListError> {
        let mut names = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..PAGES_AT_MOST {
            let params = match cursor.take() {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = self.ask(method, params).await?;
            let items = page.get(array).and_then(Value::as_array);
            names.extend(
                items
                    .into_iter()
                    .flatten()
                    .filter_map(|item| Some(item.get(key)?.as_str()?.to_owned())),
            );
            match page.get("nextCursor") {
                Some(next) if !next.is_null() => cursor = Some(next.clone()),
                _ => return Ok(names),
            }
        }
        Ok(names)
    }

    async fn send(&mut self, message: Value) -> Result<(), ListError> {
        let mut line = message.to_string();
        line.push('\n');
        self.write
            .write_all(line.as_bytes())
            .await
            .map_err(ListError::Closed)
    }

    /// Asks `method` and waits for its answer (a server's question on the
    /// way is answered "not supported", a notification passed over).
    async fn ask(&mut self, method: &str, params: Value) -> Result<Value, ListError> {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            let line = self.lines.next_line().await.map_err(ListError::Closed)?;
            let Some(line) = line else {
                return Err(ListError::Ended(method.to_owned()));
            };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if let (Some(asked), Some(_)) = (message.get("id"), message.get("method")) {
                let refusal = json!({"jsonrpc": "2.0", "id": asked, "error": {"code": -32601, "message": "mcp-chain check --list answers no questions"}});
                self.send(refusal).await?;
                continue;
            }
            if message.get("id") != Some(&json!(id)) {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(ListError::Refused {
                    method: method.to_owned(),
                    error: mcp_chain_middleware::shown::shown(&error.to_string(), 300),
                });
            }
            return Ok(message.get("result").cloned().unwrap_or(Value::Null));
        }
    }
}

/// What mcp-chain says at warning level or above while listing, as lines.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<String>>>);

impl Heard {
    fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Heard {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if *event.metadata().level() > tracing::Level::WARN {
            return;
        }
        let mut line = Line::default();
        event.record(&mut line);
        let text = format!("{}{}", line.message, line.fields);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(text);
    }
}

/// An event's message, then its fields as ` key=value`.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            name => {
                let _ = write!(self.fields, " {name}={value:?}");
            }
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let value = mcp_chain_middleware::shown::shown(value, 300);
        match field.name() {
            "message" => self.message = value.to_string(),
            name => {
                let _ = write!(self.fields, " {name}={value}");
            }
        }
    }
}
