//! The console's activity page: the layers' decisions as they are made
//! and the audit's last lines, newest first, filtered by the `tool` and
//! `outcome` of the page's query (a GET form: filtering decides nothing);
//! and the approvals decided lately, for the approval page. Its event
//! stream says "changed" when there is more to see, at most once a
//! [`EVERY`].

use super::activity::{self, Decided};
use super::page::{set, Body, Pages, ACTIVITY_TEMPLATE};
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE};
use hyper::Response;
use mcp_chain_middleware::shown::shown;
use serde::Serialize;
use serde_json::{Map, Value};
use std::convert::Infallible;
use std::time::Duration;

/// The most lines of each kind the page shows.
const SHOWN: usize = 100;
/// How often the event stream looks for more.
const EVERY: Duration = Duration::from_secs(1);

/// The page's filter: a tool name (or part of one) and an outcome.
#[derive(Default, Serialize)]
struct Filter {
    tool: String,
    outcome: String,
}

impl Filter {
    fn of(query: Option<&str>) -> Self {
        let mut filter = Self::default();
        for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let value = shown(value.trim(), 200);
            match key.as_ref() {
                "tool" => filter.tool = value,
                "outcome" => filter.outcome = value,
                _ => {}
            }
        }
        filter
    }

    fn outcome(&self) -> Option<&str> {
        (!self.outcome.is_empty()).then_some(self.outcome.as_str())
    }

    /// A decision names no tool but in its details (a pin's `name`): with a
    /// tool asked for, one of those must hold it.
    fn keeps_decision(&self, decided: &Decided) -> bool {
        self.tool.is_empty() || decided.details.iter().any(|(_, v)| v.contains(&self.tool))
    }
}

/// One audit line as the page shows it.
#[derive(Serialize)]
struct Line {
    time: String,
    session: String,
    direction: String,
    kind: String,
    method: String,
    target: String,
    outcome: String,
    why: String,
}

impl Line {
    fn of(record: &Map<String, Value>) -> Self {
        let field = |name: &str| match record.get(name) {
            Some(Value::String(s)) => shown(s, 300),
            Some(Value::Null) | None => String::new(),
            Some(other) => shown(&other.to_string(), 300),
        };
        let target = ["tool", "prompt", "resource", "resource_template"]
            .iter()
            .map(|name| field(name))
            .find(|t| !t.is_empty())
            .unwrap_or_default();
        let why = [field("layer"), field("reason"), field("failure")]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        Self {
            time: field("time"),
            session: field("session"),
            direction: match field("direction").as_str() {
                "client_to_server" => "to server".to_owned(),
                "server_to_client" => "to client".to_owned(),
                other => other.to_owned(),
            },
            kind: field("kind"),
            method: field("method"),
            target,
            outcome: field("outcome"),
            why,
        }
    }
}

pub(super) fn page(pages: &Pages, query: Option<&str>) -> Response<Body> {
    let filter = Filter::of(query);
    let decisions: Vec<Decided> = activity::decisions(filter.outcome())
        .into_iter()
        .filter(|d| filter.keeps_decision(d))
        .take(SHOWN)
        .collect();
    let mut lines: Vec<Line> = pages
        .audit_files
        .iter()
        .flat_map(|path| activity::tail(path))
        .map(|record| Line::of(&record))
        .filter(|line| filter.tool.is_empty() || line.target.contains(&filter.tool))
        .filter(|line| filter.outcome.is_empty() || line.outcome == filter.outcome)
        .collect();
    // Newest first (RFC 3339 times in UTC sort as text; lines of the same
    // instant keep their file's order, reversed).
    lines.reverse();
    lines.sort_by(|a, b| b.time.cmp(&a.time));
    lines.truncate(SHOWN);
    let context = minijinja::context! {
        decisions => decisions,
        lines => lines,
        audited => !pages.audit_files.is_empty(),
        filter => filter,
        server => shown(&pages.server, 300),
        page => "activity",
    };
    pages.render(ACTIVITY_TEMPLATE, context)
}

/// One event each time a decision is made or an audit file grows (looked
/// at every [`EVERY`]).
pub(super) fn events(pages: &Pages) -> Response<Body> {
    let files = pages.audit_files.clone();
    let now = move || (activity::seen(), activity::sizes(&files));
    let start = now();
    let stream = futures_util::stream::unfold((start, now), |(mut last, now)| async move {
        loop {
            tokio::time::sleep(EVERY).await;
            let current = now();
            if current != last {
                last = current;
                let frame = Frame::data(Bytes::from_static(b"event: changed\ndata: \n\n"));
                return Some((Ok::<_, Infallible>(frame), (last, now)));
            }
        }
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    set(&mut response, CONTENT_TYPE, "text/event-stream");
    set(&mut response, CACHE_CONTROL, "no-store");
    response
}

/// An approval decided, as the approval page lists it.
#[derive(Serialize)]
pub(super) struct Answered {
    at_ms: u128,
    tool: String,
    caller: Option<String>,
    asked: String,
    decision: String,
}

/// The approvals decided lately for this server (the approve book's
/// records), newest first.
pub(super) async fn answered(server: &str) -> Vec<Answered> {
    let Some(book) = mcp_chain_middleware::approve::book::installed() else {
        return Vec::new();
    };
    let text = |record: &Map<String, Value>, name: &str| {
        record
            .get(name)
            .and_then(Value::as_str)
            .map(|s| shown(s, 200))
    };
    let decisions = book.decisions().await;
    let mut answered: Vec<Answered> = decisions
        .iter()
        .filter_map(Value::as_object)
        .filter(|record| record.get("server").and_then(Value::as_str) == Some(server))
        .map(|record| Answered {
            at_ms: u128::from(record.get("at").and_then(Value::as_u64).unwrap_or(0)) * 1000,
            tool: text(record, "tool").unwrap_or_default(),
            caller: text(record, "caller"),
            asked: text(record, "asked").unwrap_or_default(),
            decision: text(record, "decision").unwrap_or_default(),
        })
        .collect();
    answered.reverse();
    answered.truncate(20);
    answered
}
