//! JSON text to `serde_json::Value`, read by serde_json, with one
//! difference from `Value`'s own `Deserialize`: an object whose first key is
//! serde_json's private `$serde_json::private::RawValue` token is an object
//! like any other. `Value`'s impl reads such an object as the JSON text held
//! in that member, so a layer would judge `{"name":"secret"}` where the
//! peer, and every other reader in mcp-chain, sees one odd key.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::fmt;

/// A payload's text as a `str`. mcp-chain keeps only UTF-8 (a line is
/// checked whole when it is read), so this is a check, not a conversion;
/// serde_json then reads it without checking each value again.
pub(crate) fn utf8(text: &[u8]) -> Result<&str, serde_json::Error> {
    std::str::from_utf8(text).map_err(serde::de::Error::custom)
}

/// Reads `text`, which must be one JSON value, as a `Value`.
pub(crate) fn parse(text: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(utf8(text)?);
    let value = ValueSeed.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Reads one value, as [`parse`] does, from a deserializer in the middle
/// of a line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        // serde_json hands over only finite numbers; Null as `Value` does.
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(ValueSeed)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        // Of duplicate keys the last counts, in the place of the first, as
        // with `Value` (and as servers read them).
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// How deep serde_json lets values nest, counting every array and object
/// from the top of the line: past this, a line is refused (-32700).
pub(crate) const MAX_DEPTH: usize = 127;

/// Checks what serde_json does not when it passes over a value it is not
/// asked to read: that `text`, a value starting `outer` levels deep in its
/// line, nests no deeper than serde_json reads, and holds no lone
/// surrogate escape (`"\ud800"`). A line failing this is refused (-32700)
/// as a whole parse would refuse it.
pub(crate) fn check(text: &str, outer: usize) -> Result<(), serde_json::Error> {
    let room = MAX_DEPTH.saturating_sub(outer);
    if !could_fail(text.as_bytes(), room) {
        return Ok(());
    }
    let mut de = serde_json::Deserializer::from_str(text);
    Check { room }.deserialize(&mut de)
}

/// Whether [`check`] must have serde_json walk `text`, JSON serde_json
/// accepted: it nests more than `room` levels (brackets counted outside
/// strings), or a string in it has an escape that starts a surrogate
/// (`\ud…`, `\uD…`). Only serde_json's walk decides; the message fuzz
/// target holds this shortcut to serde_json's verdict on whole lines.
fn could_fail(text: &[u8], room: usize) -> bool {
    if text.len() <= room {
        // Too short to nest that deep: only escapes matter.
        let escape = |at: usize| text.get(at + 1..at + 3);
        return memchr::memchr_iter(b'\\', text)
            .any(|at| matches!(escape(at), Some([b'u', b'd' | b'D'])));
    }
    let (mut depth, mut at) = (0usize, 0);
    while let Some(&byte) = text.get(at) {
        at += 1;
        match byte {
            b'[' | b'{' => {
                depth += 1;
                if depth > room {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'"' => loop {
                // To the closing quote, looking at each escape.
                let Some(end) = memchr::memchr2(b'"', b'\\', &text[at..]) else {
                    return false;
                };
                at += end + 1;
                if text[at - 1] == b'"' {
                    break;
                }
                if let Some([b'u', b'd' | b'D']) = text.get(at..at + 2) {
                    return true;
                }
                at += 1;
            },
            _ => {}
        }
    }
    false
}

/// Walks a value as serde_json reads it (strings decoded), keeping
/// nothing, and fails where it nests past `room` more levels.
pub(crate) struct Check {
    pub(crate) room: usize,
}

impl Check {
    fn deeper<E: serde::de::Error>(&self) -> Result<Self, E> {
        match self.room.checked_sub(1) {
            Some(room) => Ok(Self { room }),
            None => Err(E::custom("recursion limit exceeded")),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Check {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let room = self.deeper()?.room;
        while seq.next_element_seed(Check { room })?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let room = self.deeper()?.room;
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value_seed(Check { room })?;
        }
        Ok(())
    }
}

/// A JSON string's contents, borrowed when it has no escapes. `text` is
/// a value serde_json passed: a string without an escape is its
/// contents between the quotes as they stand; any other goes to serde_json.
pub(crate) fn read_str(text: &[u8]) -> Option<Cow<'_, str>> {
    if let [b'"', inner @ .., b'"'] = text {
        if !inner.contains(&b'\\') {
            return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
        }
    }
    serde_json::from_slice::<String>(text).ok().map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_as_serde_json_does() {
        let text =
            r#"{"a":[1,-2,2.5,1e300,"x\u0041",true,null,{}],"b":{"c":18446744073709551615},"a":0}"#;
        let ours = parse(text.as_bytes()).expect("valid");
        let theirs: Value = serde_json::from_str(text).expect("valid");
        assert_eq!(ours, theirs);
        assert_eq!(ours.to_string(), theirs.to_string());
    }

    #[test]
    fn serde_jsons_private_token_is_an_ordinary_key() {
        let text = r#"{"$serde_json::private::RawValue":"{\"name\":\"secret\"}"}"#;
        let read = parse(text.as_bytes()).expect("valid");
        assert_eq!(
            read,
            json!({"$serde_json::private::RawValue": "{\"name\":\"secret\"}"})
        );
        assert!(read.get("name").is_none());
    }

    #[test]
    fn depth_is_limited_as_serde_json_limits_a_whole_line() {
        let nest = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        for outer in [0, 1, 2] {
            let fits = nest(MAX_DEPTH - outer);
            assert!(check(&fits, outer).is_ok(), "{outer}");
            let deeper = nest(MAX_DEPTH - outer + 1);
            assert!(check(&deeper, outer).is_err(), "{outer}");
        }
        // The same limit as serde_json reading the value inside one object.
        let line = |n: usize| format!(r#"{{"a":{}}}"#, nest(n));
        assert!(serde_json::from_str::<Value>(&line(MAX_DEPTH - 1)).is_ok());
        assert!(serde_json::from_str::<Value>(&line(MAX_DEPTH)).is_err());
        // Brackets in strings are no nesting.
        let wide = format!(r#"["{}"]"#, "[".repeat(500));
        assert!(check(&wide, 1).is_ok());
        // Closing brackets and escaped quotes in strings lower no level.
        let hidden = |n: usize| format!(r#"["]]}}\"]]\\",{}]"#, nest(n));
        assert!(check(&hidden(MAX_DEPTH - 1), 0).is_ok());
        assert!(check(&hidden(MAX_DEPTH), 0).is_err());
        // Lone surrogates are refused, pairs and look-alikes are not.
        assert!(check(r#"{"a":["\uD800"]}"#, 1).is_err());
        assert!(check(r#"{"a":"\ud83d\ude00"}"#, 1).is_ok());
        assert!(check(r#"{"a":"\\ud800"}"#, 1).is_ok());
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for bad in ["1e999", r#""\ud800""#, "[1,]", "{} {}"] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
