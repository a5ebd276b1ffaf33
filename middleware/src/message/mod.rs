//! The JSON-RPC 2.0 envelope mcp-chain relays.
//!
//! Only the envelope is modelled: `params` and `result` are [`Payload`]s,
//! `error.data` a [`serde_json::Value`], and every member the model does not
//! name is kept in `extra`, so a message no layer changed leaves with
//! everything it came with (`_meta`, `structuredContent`, fields from newer
//! revisions).
//!
//! Parsing checks the line in one pass of our own (`check`), which also
//! finds the envelope's members; they are read straight into the model, and
//! `params` and `result` stay the sender's bytes until a layer reads them.
//! A line that path cannot take (not UTF-8, nested too deep, a
//! `\uD800`-range escape, a number beyond an `f64`, a line break between
//! tokens, or not JSON at all) is parsed whole into a [`Value`] by
//! serde_json, whose errors are then the ones reported. Either way the last
//! of duplicate keys counts, and a payload a layer read is written from what
//! it read: what a layer checked is exactly what the peer receives.

mod check;
mod error;
mod id;
mod items;
pub mod method;
mod payload;
mod peek;
mod scan;

pub use error::{ErrorCode, ErrorObject};
pub use id::RequestId;
pub use items::Item;
pub use payload::{Payload, Text};
pub use peek::response_id;
pub(crate) use scan::{find_short, SHORT};

use check::{Node, Outline, Top, Within};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::ops::Range;
use std::sync::Arc;

const JSONRPC: &str = "jsonrpc";
const VERSION: &str = "2.0";

/// One JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
    Error(ErrorResponse),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Option<Payload>,
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Payload>,
    pub extra: Map<String, Value>,
}

/// A success response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: RequestId,
    pub result: Payload,
    pub extra: Map<String, Value>,
}

/// An error response. `id` is `None` (written as `null`) when the request's
/// id could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    pub id: Option<RequestId>,
    /// Boxed: error answers are rare, and every message carries the size
    /// of the largest kind.
    pub error: Box<ErrorObject>,
    pub extra: Map<String, Value>,
}

/// Valid JSON that is not a JSON-RPC message; answered with -32600.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid JSON-RPC message: {reason}")]
pub struct Invalid {
    /// The id, when one could be read, so the error can be matched.
    pub id: Option<RequestId>,
    pub reason: &'static str,
}

/// What one line of input holds.
#[derive(Debug)]
pub enum Incoming {
    Single(Result<Message, Invalid>),
    /// A JSON-RPC batch (allowed by the 2025-03-26 revision). Each element is
    /// judged on its own, as JSON-RPC asks.
    Batch(Vec<Result<Message, Invalid>>),
}

// === impl Incoming ===

impl Incoming {
    /// Parses one line (without its newline). `Err` is invalid JSON (-32700).
    /// `params` and `result` are kept as the sender's bytes until a layer
    /// reads them (see [`Payload`]).
    pub fn parse(line: &[u8]) -> Result<Self, serde_json::Error> {
        match Self::parse_checked(line, None) {
            Some(incoming) => Ok(incoming),
            None => Self::parse_values(line),
        }
    }

    /// [`Self::parse`] for the line `buf[at]`, which the caller hands over:
    /// a payload of `big` bytes or more stays where it is in `buf`, shared
    /// with the message rather than copied out of it.
    pub fn parse_shared(
        buf: Arc<Vec<u8>>,
        at: Range<usize>,
        big: usize,
    ) -> Result<Self, serde_json::Error> {
        let line = &buf[at.clone()];
        match Self::parse_checked(line, Some((&buf, at.start, big))) {
            Some(incoming) => Ok(incoming),
            None => Self::parse_values(line),
        }
    }

    /// The raw path: one pass checks the line, UTF-8 included, and outlines
    /// it ([`check::line`]); its members are then read one by one. `None`
    /// for a line that must be parsed whole. With `shared` (the buffer the
    /// line is in, where it starts there, and a size), payloads of that
    /// size or more are left in the buffer.
    fn parse_checked(line: &[u8], shared: Option<Shared<'_>>) -> Option<Self> {
        let (top, outline) = check::line(line)?;
        #[allow(unsafe_code)]
        // SAFETY: a line `check::line` passes is UTF-8 (see there; the
        // message fuzz target holds it to serde_json, which checks).
        let text = unsafe { std::str::from_utf8_unchecked(line) };
        let Outline { nodes, complete } = outline;
        if top == Top::Object {
            // An uncut outline of a message reaches three levels into its
            // payloads: what a list's items and their members need.
            return Some(Self::Single(
                Fields::read(text, nodes, complete, shared)?.into_message(),
            ));
        }
        let mut messages = Vec::new();
        for (element, run) in entries(&nodes) {
            let value = element.value();
            messages.push(if text.as_bytes()[value.start] != b'{' {
                Err(not_an_object())
            } else if complete {
                // A batch's messages are one level deeper: the outline
                // does not reach their payloads' items, which are scanned
                // if a layer edits them.
                let nodes = check::rebased(&nodes[run], element.value.start).collect();
                Fields::read(&text[value], nodes, false, None)?.into_message()
            } else {
                // Its members were not all recorded: outlined on its own.
                let text = &text[value];
                let (_, outline) = check::line(text.as_bytes())?;
                Fields::read(text, outline.nodes, false, None)?.into_message()
            });
        }
        if messages.is_empty() {
            return Some(Self::Single(Err(Invalid {
                id: None,
                reason: "an empty batch",
            })));
        }
        Some(Self::Batch(messages))
    }

    /// The whole line as `Value`s: for lines the raw path turns down, so
    /// their errors are serde_json's own.
    fn parse_values(line: &[u8]) -> Result<Self, serde_json::Error> {
        Ok(match serde_json::from_slice(line)? {
            Value::Array(items) if !items.is_empty() => {
                Self::Batch(items.into_iter().map(Message::from_value).collect())
            }
            Value::Array(_) => Self::Single(Err(Invalid {
                id: None,
                reason: "an empty batch",
            })),
            value => Self::Single(Message::from_value(value)),
        })
    }
}

fn not_an_object() -> Invalid {
    Invalid {
        id: None,
        reason: "a message must be a JSON object",
    }
}

const PARAMS: &str = "params";
const RESULT: &str = "result";

/// A message object's members: the envelope's own apart, every other one in
/// `extra`, in the sender's order. Duplicate keys: the last wins, as with a
/// parsed `Value`.
#[derive(Default)]
struct Fields {
    /// Whether `jsonrpc` was there, and `"2.0"`.
    jsonrpc: Option<bool>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Payload>,
    result: Option<Payload>,
    error: Option<Value>,
    extra: Map<String, Value>,
}

/// A member name, without allocating for the envelope's own.
enum Key {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other(String),
}

impl Key {
    fn known(name: &str) -> Option<Self> {
        Some(match name {
            JSONRPC => Self::Jsonrpc,
            "id" => Self::Id,
            "method" => Self::Method,
            PARAMS => Self::Params,
            RESULT => Self::Result,
            "error" => Self::Error,
            _ => return None,
        })
    }
}

impl Fields {
    /// The members of the object `text`, from its outline (`nodes`, see
    /// [`check::Outline`]); `params` and `result` stay the sender's bytes.
    /// With `deep` (the outline holds three levels of each payload: its
    /// members, a list's items and theirs), a payload with more than a few
    /// parts keeps its part of the outline (the outline itself, moved, not
    /// copied). `None` if a member does not read as JSON after all (the
    /// line is then parsed whole).
    fn read(text: &str, nodes: Vec<Node>, deep: bool, shared: Option<Shared<'_>>) -> Option<Self> {
        let mut fields = Self::default();
        // Where the parts of `params` and of `result` are in the outline,
        // for one with a fair number of parts (a list result), whose list a
        // layer may edit; a small one (a tools/call result) is cheap to
        // scan if one ever does. The outline goes to it once all members
        // are read.
        let (mut params_run, mut result_run) = (None, None);
        // A small params' first level: where a tool's name or a URI is.
        let mut named = None;
        for (member, run) in entries(&nodes) {
            let name = scan::unquote(&text[member.key()])?;
            let value = &text[member.value()];
            let payload = || match shared {
                Some((buf, start, big)) if value.len() >= big => {
                    let at = member.value();
                    Payload::in_line(buf.clone(), start + at.start..start + at.end)
                }
                _ => Payload::raw(raw_value(value)),
            };
            let outlined =
                (deep && run.len() >= OUTLINED_NODES).then(|| (run.clone(), member.value.start));
            match Key::known(&name) {
                Some(Key::Params) => {
                    if deep && outlined.is_none() {
                        named = Some((run.clone(), member.value.start));
                    }
                    (fields.params, params_run) = (Some(payload()), outlined);
                }
                Some(Key::Result) => (fields.result, result_run) = (Some(payload()), outlined),
                // Compared as it stands; only an unusual spelling
                // ("2\u002e0") is decoded.
                Some(Key::Jsonrpc) => {
                    let v2 = value == r#""2.0""# || scalar(value)? == VERSION;
                    fields.jsonrpc = Some(v2);
                }
                Some(key) => fields.set(key, scalar(value)?),
                None => fields.set(Key::Other(name.into_owned()), scalar(value)?),
            }
        }
        if let (Some(params), Some((run, base))) = (&fields.params, named) {
            params.note_named_member(&nodes[run], base);
        }
        // Moved, not copied: one payload has it (a message with both is
        // refused anyway).
        let outlined = match (result_run, params_run) {
            (Some(run), _) => fields.result.as_mut().map(|p| (p, run)),
            (None, Some(run)) => fields.params.as_mut().map(|p| (p, run)),
            (None, None) => None,
        };
        match outlined {
            Some((payload, (run, base))) => payload.keep_outline(Within::new(nodes, run, base)),
            None => check::recycle(nodes),
        }
        Some(fields)
    }

    fn set(&mut self, key: Key, value: Value) {
        match key {
            Key::Jsonrpc => self.jsonrpc = Some(value == VERSION),
            Key::Id => self.id = Some(value),
            Key::Method => self.method = Some(value),
            Key::Params => self.params = Some(Payload::from(value)),
            Key::Result => self.result = Some(Payload::from(value)),
            Key::Error => self.error = Some(value),
            Key::Other(name) => {
                self.extra.insert(name, value);
            }
        }
    }

    /// Checks `"jsonrpc": "2.0"`, the id's type, the method's type and the
    /// shape of `params`, and says what kind of message this is.
    fn into_message(self) -> Result<Message, Invalid> {
        let Fields {
            jsonrpc,
            id: raw_id,
            method,
            params,
            result,
            error,
            extra,
        } = self;
        let id = match &raw_id {
            None | Some(Value::Null) => None,
            Some(v) => Some(RequestId::from_value(v).ok_or(Invalid {
                id: None,
                reason: "id must be a string or a number",
            })?),
        };
        let invalid = |reason| Invalid {
            id: id.clone(),
            reason,
        };
        if jsonrpc != Some(true) {
            return Err(invalid("\"jsonrpc\" must be \"2.0\""));
        }
        if let Some(method) = method {
            let Value::String(method) = method else {
                return Err(invalid("method must be a string"));
            };
            if matches!(params, Some(ref p) if !p.is_structured()) {
                return Err(invalid("params must be an object or an array"));
            }
            return match (raw_id, id) {
                (None, _) => Ok(Message::Notification(Notification {
                    method,
                    params,
                    extra,
                })),
                (Some(_), Some(id)) => Ok(Message::Request(Request {
                    id,
                    method,
                    params,
                    extra,
                })),
                (Some(_), None) => Err(Invalid {
                    id: None,
                    reason: "a request id must not be null",
                }),
            };
        }
        match (result, error) {
            (Some(result), None) => match id {
                Some(id) => Ok(Message::Response(Response { id, result, extra })),
                None => Err(invalid("a response needs the id of its request")),
            },
            (None, Some(error)) => match ErrorObject::from_value(error) {
                Some(error) => Ok(Message::Error(ErrorResponse {
                    id,
                    error: Box::new(error),
                    extra,
                })),
                None => Err(invalid(
                    "error must have an integer code and a string message",
                )),
            },
            (Some(_), Some(_)) => Err(invalid("a response has result or error, not both")),
            (None, None) => Err(invalid("no method, result or error")),
        }
    }
}

// === impl Message ===

impl Message {
    /// Classifies a JSON value as a message. Checks `"jsonrpc": "2.0"`, the
    /// id's type, the method's type and the shape of `params`.
    pub fn from_value(value: Value) -> Result<Self, Invalid> {
        let Value::Object(map) = value else {
            return Err(not_an_object());
        };
        let mut fields = Fields::default();
        for (name, value) in map {
            let key = match Key::known(&name) {
                Some(key) => key,
                None => Key::Other(name),
            };
            fields.set(key, value);
        }
        fields.into_message()
    }

    pub fn request(id: impl Into<RequestId>, method: &str, params: Option<Value>) -> Self {
        Self::Request(Request {
            id: id.into(),
            method: method.to_owned(),
            params: params.map(Payload::from),
            extra: Map::new(),
        })
    }

    pub fn notification(method: &str, params: Option<Value>) -> Self {
        Self::Notification(Notification {
            method: method.to_owned(),
            params: params.map(Payload::from),
            extra: Map::new(),
        })
    }

    pub fn response(id: RequestId, result: Value) -> Self {
        Self::Response(Response {
            id,
            result: Payload::from(result),
            extra: Map::new(),
        })
    }

    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self::Error(ErrorResponse {
            id,
            error: Box::new(error),
            extra: Map::new(),
        })
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request(r) => Some(&r.method),
            Self::Notification(n) => Some(&n.method),
            Self::Response(_) | Self::Error(_) => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Self::Request(r) => Some(&r.id),
            Self::Response(r) => Some(&r.id),
            Self::Error(e) => e.id.as_ref(),
            Self::Notification(_) => None,
        }
    }

    /// `params` of a request or notification.
    pub fn params(&self) -> Option<&Value> {
        match self {
            Self::Request(r) => r.params.as_deref(),
            Self::Notification(n) => n.params.as_deref(),
            Self::Response(_) | Self::Error(_) => None,
        }
    }

    /// `params` of a request or notification, as it stands: unlike
    /// [`Self::params`], this does not parse it.
    pub fn payload(&self) -> Option<&Payload> {
        match self {
            Self::Request(r) => r.params.as_ref(),
            Self::Notification(n) => n.params.as_ref(),
            Self::Response(_) | Self::Error(_) => None,
        }
    }

    /// A word for logs and audit lines.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Request(_) => "request",
            Self::Notification(_) => "notification",
            Self::Response(_) => "response",
            Self::Error(_) => "error",
        }
    }

    /// Appends the message as one line of JSON (with its `\n`).
    pub fn write_line(&self, out: &mut Vec<u8>) {
        if !self.write_plain(out) {
            // Writing a Value-based message into a Vec cannot fail: no I/O,
            // and every map key is a string.
            serde_json::to_writer(&mut *out, self).expect("serializing to a Vec cannot fail");
        }
        out.push(b'\n');
    }

    /// Writes the usual shapes, a request, notification or result whose
    /// payload is unread and that has no other members, by hand: exactly
    /// what serde_json writes for them, without escaping every fixed key
    /// on the way (8 % of the instructions of relaying a small message).
    /// False, having written nothing, for any other message.
    fn write_plain(&self, out: &mut Vec<u8>) -> bool {
        let Some(payload) = self.write_head(out) else {
            return false;
        };
        out.extend_from_slice(payload.unwrap_or_default().as_bytes());
        out.push(b'}');
        true
    }

    /// [`Self::write_line`], except that a payload of `big` bytes or more
    /// that goes out as it stands is not copied into `out`: it is handed
    /// back, with where in `out` it belongs (the rest of the line is in
    /// `out` around that point), so that a writer can send it from where it
    /// is, in one `writev` with the bytes around it.
    pub fn write_line_around(self, out: &mut Vec<u8>, big: usize) -> Option<(usize, Text)> {
        match self.write_head(out) {
            None => {
                self.write_line(out);
                return None;
            }
            Some(Some(payload)) if payload.len() >= big => {}
            Some(payload) => {
                out.extend_from_slice(payload.unwrap_or_default().as_bytes());
                out.extend_from_slice(b"}\n");
                return None;
            }
        }
        let at = out.len();
        out.extend_from_slice(b"}\n");
        let payload = match self {
            Self::Request(r) => r.params,
            Self::Notification(n) => n.params,
            Self::Response(r) => Some(r.result),
            Self::Error(_) => None,
        };
        let text = payload.and_then(Payload::into_raw_text);
        Some((at, text.expect("write_head found the payload as it stands")))
    }

    /// For the shapes [`Self::write_plain`] writes: everything before the
    /// payload (its key included), and the payload's text, `None` when
    /// there is none. `None`, having written nothing, for any other
    /// message.
    fn write_head(&self, out: &mut Vec<u8>) -> Option<Option<&str>> {
        fn raw(payload: &Option<Payload>) -> Option<Option<&str>> {
            match payload {
                None => Some(None),
                Some(p) => p.raw_text().map(Some),
            }
        }
        let (id, method, payload, key) = match self {
            Self::Request(r) if r.extra.is_empty() => (
                Some(&r.id),
                Some(&r.method),
                raw(&r.params)?,
                r#","params":"#,
            ),
            Self::Notification(n) if n.extra.is_empty() => {
                (None, Some(&n.method), raw(&n.params)?, r#","params":"#)
            }
            Self::Response(r) if r.extra.is_empty() => (
                Some(&r.id),
                None,
                Some(r.result.raw_text()?),
                r#","result":"#,
            ),
            _ => return None,
        };
        out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
        if let Some(id) = id {
            out.extend_from_slice(br#","id":"#);
            write_id(id, out);
        }
        if let Some(method) = method {
            out.extend_from_slice(br#","method":"#);
            write_str(method, out);
        }
        if payload.is_some() {
            out.extend_from_slice(key.as_bytes());
        }
        Some(payload)
    }

    /// How many bytes [`Self::write_line`] writes, without the newline:
    /// counted, not written. For a message whose payload is still the
    /// sender's bytes and that has no other members (most of them) this is
    /// arithmetic on the parts, so a 10 MB result is not walked to be
    /// measured.
    pub fn json_len(&self) -> usize {
        const HEAD: usize = r#"{"jsonrpc":"2.0""#.len();
        let params = |params: &Option<Payload>| match params {
            None => Some(0),
            Some(p) => p.raw_len().map(|n| r#","params":"#.len() + n),
        };
        let parts =
            match self {
                Self::Request(r) if r.extra.is_empty() => params(&r.params).map(|params| {
                    r#","id":"#.len()
                        + counted(&r.id)
                        + r#","method":"#.len()
                        + counted(&r.method)
                        + params
                }),
                Self::Notification(n) if n.extra.is_empty() => params(&n.params)
                    .map(|params| r#","method":"#.len() + counted(&n.method) + params),
                Self::Response(r) if r.extra.is_empty() => r.result.raw_len().map(|result| {
                    r#","id":"#.len() + counted(&r.id) + r#","result":"#.len() + result
                }),
                _ => None,
            };
        match parts {
            Some(parts) => HEAD + parts + "}".len(),
            None => counted(self),
        }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a message always serializes")
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (extra, len) = match self {
            Self::Request(r) => (&r.extra, 3 + usize::from(r.params.is_some())),
            Self::Notification(n) => (&n.extra, 2 + usize::from(n.params.is_some())),
            Self::Response(r) => (&r.extra, 3),
            Self::Error(e) => (&e.extra, 3),
        };
        let mut map = s.serialize_map(Some(len + extra.len()))?;
        map.serialize_entry(JSONRPC, VERSION)?;
        match self {
            Self::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Self::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    map.serialize_entry("params", p)?;
                }
            }
            Self::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("result", &r.result)?;
            }
            Self::Error(e) => {
                map.serialize_entry("id", &e.id)?;
                map.serialize_entry("error", &ErrorSer(&e.error))?;
            }
        }
        for (k, v) in extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Whether JSON writes `s` as it stands: it holds no control character,
/// quote or backslash.
pub(super) fn needs_no_escape(s: &str) -> bool {
    s.bytes().all(|c| c >= 0x20 && c != b'"' && c != b'\\')
}

/// Writes `s` as a JSON string, as serde_json does: a string with nothing
/// to escape (most names and methods) as it stands.
pub(crate) fn write_str(s: &str, out: &mut Vec<u8>) {
    if needs_no_escape(s) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(out, s).expect("a string always serializes into a Vec");
    }
}

/// Writes an id as serde_json does; the ids mcp-chain gives its own
/// requests (a `u64`) digit by digit.
fn write_id(id: &RequestId, out: &mut Vec<u8>) {
    match id {
        RequestId::Number(n) => match n.as_u64() {
            Some(mut n) => {
                let mut digits = [0u8; 20];
                let mut at = digits.len();
                loop {
                    at -= 1;
                    digits[at] = b'0' + (n % 10) as u8;
                    n /= 10;
                    if n == 0 {
                        break;
                    }
                }
                out.extend_from_slice(&digits[at..]);
            }
            None => serde_json::to_writer(out, n).expect("a number always serializes into a Vec"),
        },
        RequestId::String(s) => write_str(s, out),
    }
}

/// How many bytes `value` takes as JSON, counted without keeping the text.
fn counted<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // The counter's writes cannot fail, and messages and their parts
    // always serialize.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Serializes an [`ErrorObject`] without building an intermediate `Value`.
struct ErrorSer<'a>(&'a ErrorObject);

impl Serialize for ErrorSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let len = 2 + usize::from(e.data.is_some()) + e.extra.len();
        let mut map = s.serialize_map(Some(len))?;
        map.serialize_entry("code", &e.code.0)?;
        map.serialize_entry("message", &e.message)?;
        if let Some(d) = &e.data {
            map.serialize_entry("data", d)?;
        }
        for (k, v) in &e.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A line handed over with its buffer (see [`Incoming::parse_shared`]):
/// the buffer, where the line starts in it, and the size from which a
/// payload stays there.
type Shared<'a> = (&'a Arc<Vec<u8>>, usize, usize);

/// How many parts (nodes of the outline) a payload must have to keep its
/// outline.
const OUTLINED_NODES: usize = 16;

/// The entries of the outermost container in an outline, each with where
/// the run of deeper nodes inside it is.
fn entries(nodes: &[Node]) -> impl Iterator<Item = (&Node, Range<usize>)> {
    let mut from = 0;
    let top = nodes.iter().enumerate().filter(|(_, node)| node.depth == 1);
    top.map(move |(n, node)| {
        let run = from..n;
        from = n + 1;
        (node, run)
    })
}

/// A member value [`check::line`] passed, as a payload's bytes.
fn raw_value(value: &str) -> Box<RawValue> {
    #[allow(unsafe_code)]
    // SAFETY: `check::line` accepted the line, so the value is one JSON
    // value, without blanks around it, that serde_json accepts (the message
    // fuzz target compares the two).
    unsafe {
        RawValue::from_string_unchecked(value.to_owned())
    }
}

/// A member value [`check::line`] passed, as a `Value`: ids, methods and
/// short strings without escapes are read directly, the rest by
/// serde_json. `None` if serde_json does not read it after all.
fn scalar(value: &str) -> Option<Value> {
    let b = value.as_bytes();
    match b.first()? {
        b'"' if !b.contains(&b'\\') => Some(Value::String(value[1..value.len() - 1].to_owned())),
        b'0'..=b'9' if b.len() < 20 && b.iter().all(u8::is_ascii_digit) => {
            value.parse::<u64>().ok().map(Value::from)
        }
        _ => serde_json::from_str(value).ok(),
    }
}

#[cfg(test)]
mod tests;
