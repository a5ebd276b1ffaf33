//! One audit line: what it holds, how the outcome is read from an answer,
//! and the timestamp format.

use crate::embedded::{is_input_required, InputRequests};
use crate::json::write_str;
use crate::message::{method, ErrorObject};
use crate::payload::Payload;
use crate::target::Target;
use crate::{BoxError, Direction, ErrorCode, Message, RequestId};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the result of a request may say beyond "ok", by its method, read
/// into the answer's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reads {
    Nothing,
    /// `tasks/result` (2025-11-25): a tool's `isError`.
    ToolError,
    /// `tools/call`: `isError`, or (2026-07-28) input required first.
    ToolOrInput,
    /// `prompts/get`, `resources/read`: input required first.
    Input,
    /// `tasks/get`: a task waiting on the requests in `inputRequests`, or
    /// done, with its call's result (which may say `isError`) inlined.
    TaskInput,
}

impl Reads {
    pub(super) fn of(method: &str) -> Self {
        match method {
            method::TASKS_RESULT => Self::ToolError,
            method::TOOLS_CALL => Self::ToolOrInput,
            method::PROMPTS_GET | method::RESOURCES_READ => Self::Input,
            method::TASKS_GET => Self::TaskInput,
            _ => Self::Nothing,
        }
    }
}

/// The fields of one line, borrowed from the message they describe, so a
/// large payload is written straight into the line, never copied first.
/// Field order is the order written ([`Record::to_line`]); fields that are
/// `None` are left out.
#[derive(Debug, Default)]
pub(super) struct Record<'a> {
    pub(super) time: Timestamp,
    pub(super) direction: &'static str,
    pub(super) kind: &'static str,
    /// `"session"`, `"client"` and `"token"`, already written, when served
    /// over HTTP.
    pub(super) session: Option<&'a [u8]>,
    pub(super) id: Option<&'a RequestId>,
    pub(super) method: Option<&'a str>,
    /// The gateway server the target's name is of (the shared chain).
    pub(super) server: Option<&'a str>,
    pub(super) tool: Option<&'a str>,
    pub(super) resource: Option<&'a str>,
    pub(super) resource_template: Option<&'a str>,
    pub(super) prompt: Option<&'a str>,
    /// `id`, `method` and the target, already written by [`Record::head`]
    /// for a request's line, so its answer's line reuses them; when set, the
    /// seven fields above are not written.
    pub(super) head: Option<&'a [u8]>,
    pub(super) outcome: Option<&'static str>,
    pub(super) code: Option<i64>,
    /// The layer that answered, when mcp-chain did (`error.data.layer`).
    pub(super) layer: Option<&'a str>,
    pub(super) reason: Option<&'a str>,
    /// A failure that is not a protocol answer (the upstream is gone).
    pub(super) failure: Option<String>,
    pub(super) duration_ms: Option<f64>,
    /// Bytes of the message as JSON, without the newline.
    pub(super) size: Option<usize>,
    /// The methods of the server→client requests embedded in a result or
    /// task notification (`inputRequests`), `?` for one unreadable.
    pub(super) input_requests: Option<Vec<String>>,
    /// What the layers inside the audit noted while answering, by layer
    /// (see [`crate::note`]).
    pub(super) notes: Option<&'a Map<String, Value>>,
    pub(super) params: Option<&'a Payload>,
    pub(super) result: Option<&'a Payload>,
    pub(super) error: Option<&'a ErrorObject>,
}

impl<'a> Record<'a> {
    pub(super) fn new(direction: Direction, kind: &'static str) -> Self {
        Self {
            time: Timestamp::now(),
            direction: direction.as_str(),
            kind,
            ..Self::default()
        }
    }

    /// Sets `tool`, `resource`, `resource_template` or `prompt`.
    pub(super) fn target(&mut self, target: Option<&'a Target<'_>>) {
        match target {
            Some(Target::Tool(n)) => self.tool = Some(n),
            Some(Target::Resource(n)) => self.resource = Some(n),
            Some(Target::ResourceTemplate(n)) => self.resource_template = Some(n),
            Some(Target::Prompt(n)) => self.prompt = Some(n),
            None => {}
        }
    }

    /// Sets `input_requests` from a payload that may carry them; an
    /// unreadable map is recorded as one unreadable request.
    pub(super) fn input_requests(&mut self, payload: &Payload) {
        self.input_requests = match InputRequests::of(payload) {
            Ok(None) => None,
            Ok(Some(requests)) => Some(requests.methods().map(str::to_owned).collect()),
            Err(_) => Some(vec!["?".to_owned()]),
        };
    }

    /// Sets the outcome, code, layer and reason of an answer (and its
    /// payload when asked for). `reads`: what its request's result may
    /// say beyond "ok".
    pub(super) fn answer(
        &mut self,
        answer: &'a Result<Option<Message>, BoxError>,
        payloads: bool,
        reads: Reads,
    ) {
        match answer {
            Ok(None) => self.outcome = Some("cancelled"),
            Err(e) => {
                self.outcome = Some("failed");
                self.failure = Some(e.to_string());
            }
            Ok(Some(msg)) => {
                self.size = Some(msg.json_len());
                match msg {
                    Message::Response(r) => {
                        // One member read for each: the result stays
                        // unparsed, and a listing is not searched for them.
                        let result = &r.result;
                        let is_error = match reads {
                            Reads::ToolError | Reads::ToolOrInput => {
                                matches!(result.member("isError"), Ok(Some(Value::Bool(true))))
                            }
                            // A completed task inlines its call's result.
                            Reads::TaskInput => matches!(result.member("result"),
                                Ok(Some(r)) if r.get("isError") == Some(&Value::Bool(true))),
                            Reads::Input | Reads::Nothing => false,
                        };
                        let input_required = matches!(reads, Reads::ToolOrInput | Reads::Input)
                            && is_input_required(result);
                        if input_required || reads == Reads::TaskInput {
                            self.input_requests(result);
                        }
                        self.outcome = Some(match (input_required, is_error) {
                            (true, _) => "input_required",
                            (false, true) => "tool_error",
                            (false, false) => "ok",
                        });
                        // Written as it stands: unread, the sender's bytes.
                        self.result = payloads.then_some(&r.result);
                    }
                    Message::Error(e) => {
                        self.error_outcome(&e.error);
                        self.error = payloads.then_some(&*e.error);
                    }
                    // Not an answer to a request; recorded as it came.
                    Message::Request(_) | Message::Notification(_) => self.outcome = Some("ok"),
                }
            }
        }
    }

    fn error_outcome(&mut self, error: &'a ErrorObject) {
        self.code = Some(error.code.0);
        let data = error.data.as_ref();
        let field = |k: &str| data.and_then(|d| d.get(k)).and_then(Value::as_str);
        self.layer = field("layer");
        self.reason = field("reason");
        self.outcome = Some(match (self.layer, error.code) {
            (None, _) => "error",
            (Some(_), ErrorCode::RATE_LIMITED) => "rate_limited",
            (Some(_), ErrorCode::REQUEST_TIMEOUT) => "timed_out",
            // mcp-chain's own failures, not a decision about the request.
            (Some(_), ErrorCode::CONNECTION_CLOSED)
            | (Some(_), ErrorCode::UPSTREAM_UNAVAILABLE)
            | (Some(_), ErrorCode::INTERNAL_ERROR) => "error",
            (Some(_), _) => "denied",
        });
    }

    /// The record as one line of JSON, with its newline, added to `out`.
    /// Written by hand: the keys are fixed ASCII, and most values are short
    /// strings with nothing to escape; through serde's derive the line cost
    /// three times as much.
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        out.reserve(200);
        out.extend_from_slice(b"{\"time\":\"");
        self.time.write(out);
        out.extend_from_slice(b"\",\"direction\":\"");
        out.extend_from_slice(self.direction.as_bytes());
        out.extend_from_slice(b"\",\"kind\":\"");
        out.extend_from_slice(self.kind.as_bytes());
        out.push(b'"');
        if let Some(session) = self.session {
            out.extend_from_slice(session);
        }
        match self.head {
            Some(head) => out.extend_from_slice(head),
            None => self.write_head(out),
        }
        if let Some(outcome) = self.outcome {
            out.extend_from_slice(b",\"outcome\":\"");
            out.extend_from_slice(outcome.as_bytes());
            out.push(b'"');
        }
        json_field(out, "code", self.code.as_ref());
        string_field(out, "layer", self.layer);
        string_field(out, "reason", self.reason);
        string_field(out, "failure", self.failure.as_deref());
        json_field(out, "duration_ms", self.duration_ms.as_ref());
        json_field(out, "size", self.size.as_ref());
        json_field(out, "input_requests", self.input_requests.as_ref());
        json_field(out, "notes", self.notes);
        json_field(out, "params", self.params);
        json_field(out, "result", self.result);
        json_field(out, "error", self.error.as_ref());
        out.extend_from_slice(b"}\n");
    }

    /// `id`, `method` and the target fields, as [`write`](Self::write)
    /// puts them: written once for a request, kept for its answer's line.
    pub(super) fn head(&self) -> Vec<u8> {
        let mut head = Vec::with_capacity(64);
        self.write_head(&mut head);
        head
    }

    fn write_head(&self, out: &mut Vec<u8>) {
        json_field(out, "id", self.id);
        string_field(out, "method", self.method);
        string_field(out, "server", self.server);
        string_field(out, "tool", self.tool);
        string_field(out, "resource", self.resource);
        string_field(out, "resource_template", self.resource_template);
        string_field(out, "prompt", self.prompt);
    }

    /// The line on its own (tests).
    #[cfg(test)]
    pub(super) fn to_line(&self) -> Vec<u8> {
        let mut line = Vec::new();
        self.write(&mut line);
        line
    }
}

/// A line about mcp-chain itself (see `AuditLayer::event`).
pub(super) fn event_line(out: &mut Vec<u8>, event: &str, fields: &[(&str, &str)]) {
    out.extend_from_slice(b"{\"time\":\"");
    Timestamp::now().write(out);
    out.extend_from_slice(b"\",\"kind\":\"event\"");
    string_field(out, "event", Some(event));
    for (name, value) in fields {
        string_field(out, name, Some(value));
    }
    out.extend_from_slice(b"}\n");
}

/// `,"name":` and the value as JSON, when there is one.
fn json_field<T: Serialize + ?Sized>(out: &mut Vec<u8>, name: &str, value: Option<&T>) {
    if let Some(value) = value {
        key(out, name);
        // Strings, numbers, ids and payloads, into a Vec: cannot fail.
        // Defanged: the audit is read by people too (a bidi override in a
        // name must not reorder a line in their terminal).
        crate::shown::write_json(out, value).expect("an audit field always serializes");
    }
}

/// `,"name":"value"`, when there is a value.
pub(super) fn string_field(out: &mut Vec<u8>, name: &str, value: Option<&str>) {
    if let Some(value) = value {
        key(out, name);
        // Printable ASCII (most names and methods) has nothing to defang;
        // anything else goes through the defanging writer.
        match value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            true => write_str(value, out),
            false => crate::shown::write_json(out, value).expect("a string always serializes"),
        }
    }
}

/// `,"name":` (the names are fixed ASCII).
fn key(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Milliseconds with microsecond precision, for `duration_ms`.
pub(super) fn millis(d: Duration) -> f64 {
    // u128 → f64 is exact below 2^53 µs (285 years).
    d.as_micros() as f64 / 1000.0
}

/// A wall-clock time, written as RFC 3339 in UTC with microseconds:
/// `2025-06-18T09:30:00.123456Z`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timestamp(SystemTime);

impl Timestamp {
    pub(crate) fn now() -> Self {
        Self(SystemTime::now())
    }
}

impl Default for Timestamp {
    fn default() -> Self {
        Self::now()
    }
}

impl Timestamp {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.text());
    }

    /// The text, digit by digit into a buffer of its own: through `write!`
    /// and its padding it cost more than the rest of the audit line. The
    /// date and time of day are worked out once a second (a thread keeps the
    /// last); only the microseconds change from line to line. Years past
    /// 9999 (a broken clock) are written as 9999.
    fn text(&self) -> [u8; 27] {
        thread_local! {
            static SECOND: Cell<(u64, [u8; 19])> = const { Cell::new((u64::MAX, [0; 19])) };
        }
        // A clock before 1970 is a broken clock; write the epoch.
        let since = self.0.duration_since(UNIX_EPOCH).unwrap_or_default();
        let mut text = *b"0000-00-00T00:00:00.000000Z";
        let secs = since.as_secs();
        let second = SECOND.with(|last| match last.get() {
            (at, second) if at == secs => second,
            _ => {
                let second = second_text(secs);
                last.set((secs, second));
                second
            }
        });
        text[..19].copy_from_slice(&second);
        digits(&mut text[20..26], since.subsec_micros());
        text
    }
}

/// `YYYY-MM-DDTHH:MM:SS` for seconds since 1970.
fn second_text(secs: u64) -> [u8; 19] {
    let secs = i64::try_from(secs).unwrap_or(i64::MAX / 2);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    let year = u32::try_from(year.clamp(0, 9999)).unwrap_or(9999);
    let rest = u32::try_from(rest).unwrap_or(0);
    let mut text = *b"0000-00-00T00:00:00";
    for (field, n) in [
        (0..4, year),
        (5..7, month),
        (8..10, day),
        (11..13, rest / 3600),
        (14..16, rest / 60 % 60),
        (17..19, rest % 60),
    ] {
        digits(&mut text[field], n);
    }
    text
}

/// `n`'s last `out.len()` decimal digits, zero-padded.
fn digits(out: &mut [u8], mut n: u32) {
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(&self.text()).map_err(|_| fmt::Error)?)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = self.text();
        let text = std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?;
        s.serialize_str(text)
    }
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year, March first
    let mp = (5 * doy + 2) / 153; // month from March, 0..=11
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are in range by construction (1..=31, 1..=12).
    (year, day_or_month(month), day_or_month(day))
}

fn day_or_month(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests;
