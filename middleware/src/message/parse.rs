//! One line of input to [`Incoming`], in one pass of serde_json.
//!
//! A visitor reads the envelope's members as serde_json finds them: `id`,
//! `method`, `error` and unknown members as values, `params` and `result`
//! as the `&RawValue` serde_json found, kept as text (see [`Payload`]). Of
//! duplicate keys the last counts, as in servers. A batch is read in the
//! same pass, each element judged on its own.

use super::{
    ErrorObject, ErrorResponse, Incoming, Invalid, Message, Notification, Request, RequestId,
    Response,
};
use crate::json::key::{place, KeySeed};
use crate::json::value::{check, Check, ValueSeed, MAX_DEPTH};
use crate::payload::{Payload, Text};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

const VERSION: &str = "2.0";

/// The visits of a JSON value that is neither an object, an array nor a
/// string: each gives `$answer`.
macro_rules! scalars_are_not_messages {
    ($answer:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($answer)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($answer)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($answer)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($answer)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($answer)
        }
    };
}

// === impl Incoming ===

impl Incoming {
    /// Parses one line (without its newline). `Err` is invalid JSON (-32700).
    pub fn parse(line: &[u8]) -> Result<Self, serde_json::Error> {
        read(Line {
            line,
            shared: None,
            outer: 1,
        })
    }

    /// [`Self::parse`] for the line `buf[at]`, which the caller hands over:
    /// a payload of [`BIG_PAYLOAD_BYTES`](crate::payload::BIG_PAYLOAD_BYTES)
    /// or more stays where it is in `buf`, shared with the message rather
    /// than copied out of it.
    pub fn parse_shared(buf: Arc<Vec<u8>>, at: Range<usize>) -> Result<Self, serde_json::Error> {
        let line = &buf[at.clone()];
        read(Line {
            line,
            shared: Some((&buf, at.start)),
            outer: 1,
        })
    }
}

fn read(line: Line<'_>) -> Result<Incoming, serde_json::Error> {
    crate::counts::one_parsed(line.line.len());
    // UTF-8 checked once for the whole line, so that serde_json need not
    // check each value it passes over again.
    let Ok(text) = std::str::from_utf8(line.line) else {
        // serde_json's own words for where it stops, when it has some.
        let error = serde_json::from_slice::<Value>(line.line).err();
        return Err(error.unwrap_or_else(|| serde::de::Error::custom("invalid UTF-8")));
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let incoming = de.deserialize_any(line)?;
    de.end()?;
    Ok(incoming)
}

/// The line being read, and (when it was handed over) its buffer and where
/// it starts there.
#[derive(Clone, Copy)]
struct Line<'a> {
    line: &'a [u8],
    shared: Option<(&'a Arc<Vec<u8>>, usize)>,
    /// How many levels deep a message's members are: 1, or 2 in a batch.
    outer: usize,
}

impl Line<'_> {
    /// A payload as received, checked for what serde_json does not check
    /// when it passes over a value (see [`check`]).
    fn payload<E: serde::de::Error>(&self, raw: &RawValue) -> Result<Payload, E> {
        check(raw.get(), self.outer).map_err(E::custom)?;
        let part = raw.get().as_bytes();
        Ok(Payload::from_text(match self.shared {
            Some((buf, start)) => {
                let at = place(self.line, part);
                Text::shared(buf, start + at.start..start + at.end)
            }
            None => Text::copied(part),
        }))
    }

    /// Whether `jsonrpc` is the string `"2.0"`, however spelled; checked
    /// as a payload is.
    fn version<E: serde::de::Error>(&self, raw: &RawValue) -> Result<bool, E> {
        let text = raw.get();
        check(text, self.outer).map_err(E::custom)?;
        let spelled = || serde_json::from_str::<String>(text).is_ok_and(|s| s == VERSION);
        Ok(text == r#""2.0""# || spelled())
    }

    fn fields<'de, A: MapAccess<'de>>(&self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        while let Some(name) = map.next_key_seed(KeySeed)? {
            let name = name.as_str();
            match name {
                "params" => fields.params = Some(self.payload(map.next_value()?)?),
                "result" => fields.result = Some(self.payload(map.next_value()?)?),
                "jsonrpc" => fields.jsonrpc = Some(self.version(map.next_value()?)?),
                _ => fields.set(name, map.next_value_seed(ValueSeed)?),
            }
        }
        Ok(fields)
    }
}

/// A line is one message (an object), a batch (an array), or JSON that is
/// neither.
impl<'de> Visitor<'de> for Line<'de> {
    type Value = Incoming;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Incoming, A::Error> {
        Ok(Incoming::Single(self.fields(map)?.into_message()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Incoming, A::Error> {
        let mut messages = Vec::new();
        let element = Line { outer: 2, ..self };
        while let Some(message) = seq.next_element_seed(Element(element))? {
            messages.push(message);
        }
        if messages.is_empty() {
            return Ok(Incoming::Single(Err(Invalid {
                id: None,
                reason: "an empty batch",
            })));
        }
        Ok(Incoming::Batch(messages))
    }

    fn visit_str<E>(self, _: &str) -> Result<Incoming, E> {
        Ok(Incoming::Single(Err(not_an_object())))
    }

    scalars_are_not_messages!(Incoming::Single(Err(not_an_object())));
}

/// One element of a batch.
struct Element<'a>(Line<'a>);

impl<'de> DeserializeSeed<'de> for Element<'de> {
    type Value = Result<Message, Invalid>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Element<'de> {
    type Value = Result<Message, Invalid>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Ok(self.0.fields(map)?.into_message())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // Read as serde_json reads it, depth limit included.
        let room = MAX_DEPTH - self.0.outer;
        while seq.next_element_seed(Check { room })?.is_some() {}
        Ok(Err(not_an_object()))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Err(not_an_object()))
    }

    scalars_are_not_messages!(Err(not_an_object()));
}

pub(super) fn not_an_object() -> Invalid {
    Invalid {
        id: None,
        reason: "a message must be a JSON object",
    }
}

/// A message object's members: the envelope's own apart, every other one in
/// `extra`, in the sender's order. Duplicate keys: the last wins.
#[derive(Default)]
pub(super) struct Fields {
    /// Whether `jsonrpc` was there, and `"2.0"`.
    jsonrpc: Option<bool>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Payload>,
    result: Option<Payload>,
    error: Option<Value>,
    extra: Map<String, Value>,
}

impl Fields {
    pub(super) fn set(&mut self, name: &str, value: Value) {
        match name {
            "jsonrpc" => self.jsonrpc = Some(value == VERSION),
            "id" => self.id = Some(value),
            "method" => self.method = Some(value),
            "params" => self.params = Some(Payload::from(value)),
            "result" => self.result = Some(Payload::from(value)),
            "error" => self.error = Some(value),
            _ => {
                self.extra.insert(name.to_owned(), value);
            }
        }
    }

    /// Checks `"jsonrpc": "2.0"`, the id's type, the method's type and the
    /// shape of `params`, and says what kind of message this is.
    pub(super) fn into_message(self) -> Result<Message, Invalid> {
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

/// The `id` of a JSON-RPC response (an object with `result` or `error` and
/// no `method`) read from a line that could not be parsed whole: nested
/// deeper than serde_json allows, or cut short because it was over the
/// size cap. Without it, the request that response answers would never be
/// answered. serde_json reads the line member by member until it fails;
/// what it read before that counts. `None` when that cannot be told (the
/// id comes after the part that fails, or there is a `method`).
pub fn response_id(line: &[u8]) -> Option<RequestId> {
    let mut seen = Seen::default();
    let mut de = serde_json::Deserializer::from_slice(line);
    // Failing is what brought the line here: what was seen before counts.
    let _ = de.deserialize_map(&mut seen);
    match (seen.response, seen.method, seen.id) {
        (true, false, Some(id)) => RequestId::from_value(&id),
        _ => None,
    }
}

/// What [`response_id`] saw of a message.
#[derive(Default)]
struct Seen {
    id: Option<Value>,
    response: bool,
    method: bool,
}

impl<'de> Visitor<'de> for &mut Seen {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC response")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(name) = map.next_key::<String>()? {
            match name.as_str() {
                "id" => self.id = Some(map.next_value_seed(ValueSeed)?),
                "method" => {
                    self.method = true;
                    return Ok(());
                }
                "result" | "error" => {
                    self.response = true;
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}
