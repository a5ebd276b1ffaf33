//! `params` and `result`: kept as the sender's text until a layer asks.
//!
//! Most messages cross mcp-chain without any layer reading their payload
//! (every message, with an empty chain), so a [`Payload`] holds the text
//! serde_json found for it when the line was parsed, and a payload nobody
//! changed is written back out as that same text: a 10 MB result costs a
//! copy, not a parse and a re-encode.
//!
//! Every read goes through serde_json, from that text: a layer asking for
//! one member gets the object read one level deep (the other members stay
//! text), a layer editing a list gets its items one by one ([`Item`]), a
//! layer that needs the whole value gets a `Value`. Of duplicate keys the
//! last counts everywhere, as in servers. A read that fails (a payload that
//! is not an object where one is needed, a number beyond an `f64`) is an
//! [`Unreadable`] error, never a `null`: the layer asking refuses.

mod edit;
mod list;
pub(crate) mod object;
mod text;

pub use list::Item;
use text::has_line_break;
pub use text::{Text, BIG_PAYLOAD_BYTES};

use crate::json::{value, Count, Out};
use object::{find, Member, Slot};
use serde::ser::{Error as _, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

/// A JSON value that may still be the sender's text.
#[derive(Clone)]
pub struct Payload {
    repr: Repr,
    /// What the first read of the text found, kept for the next (each layer
    /// asks for a tool's name): set through `&self`, by the first layer
    /// that reads. Taken into `repr` by the first change.
    look: OnceLock<Look>,
    /// The bytes of the text a whole value was read from: about what the
    /// value writes, for a writer sizing its buffer (0: not known).
    size_hint: usize,
}

/// The text read one level deep by the first layer that asked.
#[derive(Clone)]
enum Look {
    /// Its members, their values still places in the text.
    Members(Vec<Member>),
    /// Its keys are not plain (see `object::Read::plain`): the value read
    /// whole, which it is read and written from from then on.
    Whole(Box<Value>),
    /// Not an object, or not readable.
    Failed(Unreadable),
}

#[derive(Clone)]
enum Repr {
    /// As received, unchanged.
    Text(Text),
    /// Read one level deep because a layer edited a member or a list; the
    /// members not changed are still places in the text.
    Object(Box<Object>),
    /// Built by mcp-chain, or changed as a whole by a layer.
    Value(Box<Value>),
}

#[derive(Clone)]
struct Object {
    text: Text,
    members: Vec<Member>,
    /// Whether a layer changed anything: if not, the text is written.
    changed: bool,
    /// What a change comes to, once written (the audit counts an edited
    /// list, then it is written out): dropped by the next change.
    written: OnceLock<Vec<u8>>,
}

impl Object {
    fn new(text: Text, members: Vec<Member>, changed: bool) -> Self {
        Self {
            text,
            members,
            changed,
            written: OnceLock::new(),
        }
    }

    /// The object as JSON, written once.
    fn written(&self) -> &[u8] {
        self.written.get_or_init(|| {
            let mut out = Vec::with_capacity(self.text.len() + 64);
            object::write(&self.members, self.text.as_bytes(), &mut out);
            out
        })
    }
}

/// What a layer could not read in a payload, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(String);

impl Unreadable {
    pub fn new(what: impl Into<String>) -> Self {
        Self(what.into())
    }

    fn json(e: serde_json::Error) -> Self {
        Self(format!("not readable JSON: {e}"))
    }

    fn not_an_object() -> Self {
        Self::new("not an object")
    }
}

/// A member found by [`Payload::find_member`]: its text, or its value.
enum Found<'a> {
    Text(Cow<'a, [u8]>),
    Value(&'a Value),
}

// === impl Payload ===

impl Payload {
    pub(crate) fn from_text(text: Text) -> Self {
        Self::with(Repr::Text(text))
    }

    /// Text mcp-chain wrote itself from pieces of payloads (what
    /// [`Payload::write`] and [`Payload::write_items`] wrote) and
    /// serde_json's output: one JSON value without line breaks, kept as
    /// text without being read again (a gateway's merged listing). Checked
    /// in debug builds.
    pub fn from_written(bytes: Vec<u8>) -> Self {
        debug_assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok()
                && !has_line_break(&bytes),
            "written payload text must be one JSON value without line breaks"
        );
        Self::from_text(Text::written(bytes))
    }

    fn with(repr: Repr) -> Self {
        Self {
            repr,
            look: OnceLock::new(),
            size_hint: 0,
        }
    }

    /// The sender's text, while no layer has changed the payload (nor read
    /// one whose keys are not plain).
    pub fn text(&self) -> Option<&Text> {
        match (&self.repr, self.look.get()) {
            (_, Some(Look::Whole(_))) => None,
            (Repr::Text(text), _) => Some(text),
            (Repr::Object(o), _) if !o.changed => Some(&o.text),
            (Repr::Object(_) | Repr::Value(_), _) => None,
        }
    }

    /// [`Self::text`], taken out.
    pub fn into_text(self) -> Option<Text> {
        self.text().is_some().then(|| match self.repr {
            Repr::Text(text) => text,
            Repr::Object(o) => o.text,
            Repr::Value(_) => unreachable!("a value has no text"),
        })
    }

    /// Whether the payload is still exactly the sender's text.
    pub fn is_untouched(&self) -> bool {
        self.text().is_some()
    }

    /// Whether it is an object or an array (what `params` must be).
    pub fn is_structured(&self) -> bool {
        match &self.repr {
            Repr::Text(text) => matches!(text.as_bytes().first(), Some(b'{' | b'[')),
            Repr::Object(_) => true,
            Repr::Value(v) => v.is_object() || v.is_array(),
        }
    }

    /// The whole value, parsed.
    pub fn to_value(&self) -> Result<Value, Unreadable> {
        match (&self.repr, self.look.get()) {
            (_, Some(Look::Whole(value))) | (Repr::Value(value), _) => Ok((**value).clone()),
            _ => value::parse(&self.to_bytes()).map_err(Unreadable::json),
        }
    }

    /// The whole value, taken out.
    pub fn into_value(mut self) -> Result<Value, Unreadable> {
        Ok(std::mem::take(self.value_mut()?))
    }

    /// The member `name` of an object, parsed; the others are not. `None`
    /// when there is no such member. `Err` when this is not an object or
    /// the member cannot be read.
    pub fn member(&self, name: &str) -> Result<Option<Value>, Unreadable> {
        // A 10 MB result that cannot spell the name is not read to find
        // out (an object's; what is not one is still an error).
        let object = matches!(&self.repr, Repr::Text(t) if t.as_bytes().first() == Some(&b'{'));
        if object && !self.may_spell(name) {
            return Ok(None);
        }
        match self.find_member(name)? {
            None => Ok(None),
            Some(Found::Text(text)) => value::parse(&text).map(Some).map_err(Unreadable::json),
            Some(Found::Value(value)) => Ok(Some(value.clone())),
        }
    }

    /// Whether the payload could hold `word` (in a key or a string): false
    /// only for text as received that cannot spell it, written or escaped.
    /// One search of the text: a caller asking after several members that
    /// share a word (`task`, `taskId`) passes a payload without it over at
    /// the cost of one, not one per member.
    pub fn may_spell(&self, word: &str) -> bool {
        match (&self.repr, self.look.get()) {
            (Repr::Text(text), None) => may_spell(text.as_bytes(), word),
            _ => true,
        }
    }

    /// The string member `name` of an object. `None` when there is no such
    /// member. `Err` when this is not an object, or the member is not a
    /// string serde_json reads.
    pub fn str_member(&self, name: &str) -> Result<Option<Cow<'_, str>>, Unreadable> {
        let read = match self.find_member(name)? {
            None => return Ok(None),
            Some(Found::Text(Cow::Borrowed(text))) => value::read_str(text),
            Some(Found::Text(Cow::Owned(text))) => {
                value::read_str(&text).map(|s| Cow::Owned(s.into_owned()))
            }
            Some(Found::Value(Value::String(s))) => Some(Cow::Borrowed(s.as_str())),
            Some(Found::Value(_)) => None,
        };
        let not_a_string = || Unreadable::new(format!("\"{name}\" is not a string"));
        read.map(Some).ok_or_else(not_a_string)
    }

    /// Where the member `name` is: read one level deep from the text when
    /// its keys are plain, else from the whole value.
    fn find_member(&self, name: &str) -> Result<Option<Found<'_>>, Unreadable> {
        let text = match &self.repr {
            Repr::Value(value) => return in_value(value, name),
            Repr::Object(o) => {
                let text = o.text.as_bytes();
                return Ok(
                    find(&o.members, text, name).map(|n| match &o.members[n].value {
                        Slot::Value(value) => Found::Value(value),
                        slot => Found::Text(object::text_of(slot, text)),
                    }),
                );
            }
            Repr::Text(text) => text.as_bytes(),
        };
        match self.look.get_or_init(|| Look::of(text)) {
            Look::Members(members) => Ok(find(members, text, name)
                .map(|n| Found::Text(object::text_of(&members[n].value, text)))),
            Look::Whole(value) => in_value(value, name),
            Look::Failed(e) => Err(e.clone()),
        }
    }

    /// Appends the payload as JSON.
    pub fn write(&self, out: &mut Vec<u8>) {
        self.write_to(out);
    }

    pub(crate) fn write_to(&self, out: &mut impl Out) {
        match (&self.repr, self.look.get()) {
            (_, Some(Look::Whole(value))) | (Repr::Value(value), _) => {
                serde_json::to_writer(out, value).expect("a Value always serializes")
            }
            (Repr::Object(o), _) if o.changed => out.put(o.written()),
            (Repr::Text(text), _) => out.put(text.as_bytes()),
            (Repr::Object(o), _) => out.put(o.text.as_bytes()),
        }
    }

    /// The payload as JSON text.
    fn to_bytes(&self) -> Cow<'_, [u8]> {
        match self.text() {
            Some(text) => Cow::Borrowed(text.as_bytes()),
            None => {
                let mut out = Vec::new();
                self.write(&mut out);
                Cow::Owned(out)
            }
        }
    }

    /// How many bytes [`Self::write`] writes, when that is known without
    /// writing anything (a value is not serialized to be measured: what
    /// its text had, when it was read from one, else 0): for a writer
    /// sizing its buffer.
    pub(crate) fn len_if_known(&self) -> usize {
        match (&self.repr, self.look.get()) {
            (_, Some(Look::Whole(_))) | (Repr::Value(_), _) => self.size_hint,
            (Repr::Text(text), _) => text.len(),
            (Repr::Object(o), _) if o.changed => o.written().len(),
            (Repr::Object(o), _) => o.text.len(),
        }
    }

    /// How many bytes [`Self::write`] writes.
    pub fn json_len(&self) -> usize {
        let mut count = Count(0);
        self.write_to(&mut count);
        count.0
    }
}

impl Look {
    fn of(text: &[u8]) -> Self {
        match object::members(text, 0) {
            Err(_) => Self::Failed(Unreadable::not_an_object()),
            Ok(read) if read.plain => Self::Members(read.members),
            Ok(_) => match value::parse(text) {
                Ok(value) => Self::Whole(Box::new(value)),
                Err(e) => Self::Failed(Unreadable::json(e)),
            },
        }
    }
}

/// The member `name` of an object value.
fn in_value<'a>(value: &'a Value, name: &str) -> Result<Option<Found<'a>>, Unreadable> {
    let map = value.as_object().ok_or_else(Unreadable::not_an_object)?;
    Ok(map.get(name).map(Found::Value))
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self::with(Repr::Value(Box::new(value)))
    }
}

/// Two payloads are equal when they read as the same value (text that
/// cannot be read compares by its bytes).
impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self.to_value(), other.to_value()) {
            (Ok(a), Ok(b)) => a == b,
            _ => self.to_bytes() == other.to_bytes(),
        }
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = Text::written(self.to_bytes().into_owned());
        write!(f, "Payload({text:?})")
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = self.to_bytes();
        let raw: &RawValue = serde_json::from_slice(&bytes).map_err(S::Error::custom)?;
        raw.serialize(s)
    }
}

/// Whether `text` could hold the key `name`: written as it is, or, for a
/// name of ASCII characters, with one of them escaped (`\u0069`). Other
/// escapes (`\n`, `\u00e9`) cannot spell such a name, so text full of
/// them is still passed over. Past a few dozen `\u` escapes the answer is
/// "maybe": the caller then reads the object once, and keeps what it read.
fn may_spell(text: &[u8], name: &str) -> bool {
    const LOOKED_AT: usize = 64;
    if memchr::memmem::find(text, name.as_bytes()).is_some() || !name.is_ascii() {
        return true;
    }
    if memchr::memchr(b'\\', text).is_none() {
        return false;
    }
    // `\u00` and a digit from 2 to 7: an ASCII character, maybe a letter.
    let ascii = |at: usize| matches!(text.get(at + 2..at + 5), Some([b'0', b'0', b'2'..=b'7']));
    let mut escapes = memchr::memmem::find_iter(text, b"\\u");
    escapes.by_ref().take(LOOKED_AT).any(ascii) || escapes.next().is_some()
}

#[cfg(test)]
mod tests;
