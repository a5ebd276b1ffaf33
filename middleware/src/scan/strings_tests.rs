//! The walk for a listing's strings, held to serde_json's own reading of
//! the same text: a visitor that keeps every string it is shown.

use super::{strings_of, NotJson};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::fmt;

#[test]
fn strings_and_keys_in_order_numbers_left_out() {
    let (text, longest) =
        strings_of(br#"{"tools":[{"name":"a\u00e9","n":1,"x":[true,null,"bc"]}]}"#).expect("JSON");
    assert_eq!(text, "tools\nname\na\u{e9}\nn\nx\nbc\n");
    assert_eq!(longest, 5);
}

#[test]
fn escapes_are_decoded_and_quotes_inside_strings_are_not_ends() {
    let text = br#"{"a\"b":"c\\","d":"\\\"e\"","\u0069gnore":"x\/y\n","":""}"#;
    let (text, _) = strings_of(text).expect("JSON");
    assert_eq!(text, "a\"b\nc\\\nd\n\\\"e\"\nignore\nx/y\n\n\n\n");
}

#[test]
fn a_text_that_is_not_a_payloads_json_is_refused() {
    for bad in [
        &b"{\"a\":\"never closed"[..],
        b"{\"a\":\"ends on an escape\\",
        b"[\"\\ud800\"]",
        b"[\"\\q\"]",
        b"[\"\xff\"]",
    ] {
        assert_eq!(
            strings_of(bad),
            Err(NotJson),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn the_walk_gathers_what_serde_json_reads_from_the_same_text() {
    let mut n = crate::testing::numbers(0x5ca1_ab1e);
    let mut escaped = 0;
    for _ in 0..3_000 {
        let mut text = String::new();
        value(&mut n, &mut text, 0);
        escaped += usize::from(text.contains('\\'));
        let expected = by_serde_json(text.as_bytes()).expect("generated JSON");
        assert_eq!(strings_of(text.as_bytes()), Ok(expected), "{text}");
    }
    assert!(escaped > 1_000, "only {escaped} texts held an escape");
}

/// A JSON value, written as a peer might: any white space between tokens,
/// any character of a string raw or escaped.
fn value(n: &mut impl FnMut(usize) -> usize, out: &mut String, depth: usize) {
    let space = |n: &mut dyn FnMut(usize) -> usize, out: &mut String| {
        for _ in 0..n(3).saturating_sub(1) {
            out.push([' ', '\n', '\t', '\r'][n(4)]);
        }
    };
    space(n, out);
    match n(if depth > 4 { 4 } else { 6 }) {
        0 => out.push_str(["true", "false", "null"][n(3)]),
        1 => out.push_str(["0", "-12", "3.5e-7", "18446744073709551616"][n(4)]),
        2 | 3 => string(n, out),
        4 => {
            out.push('[');
            for k in 0..n(4) {
                if k > 0 {
                    out.push(',');
                }
                value(n, out, depth + 1);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            for k in 0..n(4) {
                if k > 0 {
                    out.push(',');
                }
                space(n, out);
                string(n, out);
                space(n, out);
                out.push(':');
                value(n, out, depth + 1);
            }
            out.push('}');
        }
    }
    space(n, out);
}

/// A string literal of a few characters, each raw or escaped.
fn string(n: &mut impl FnMut(usize) -> usize, out: &mut String) {
    const CHARS: [char; 14] = [
        'a', 'Z', ' ', '"', '\\', '/', '\n', '\u{1}', 'é', '’', '\u{200b}', '😀', '{', ':',
    ];
    out.push('"');
    for _ in 0..n(7) {
        let c = CHARS[n(CHARS.len())];
        let must = matches!(c, '"' | '\\') || (c as u32) < 0x20;
        let pick = n(3);
        if pick == 0 && !must {
            out.push(c);
        } else if let (1, Some(short)) = (pick, short(c)) {
            out.push_str(short);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out.push('"');
}

fn short(c: char) -> Option<&'static str> {
    Some(match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '/' => "\\/",
        '\n' => "\\n",
        _ => return None,
    })
}

/// What serde_json shows a visitor that keeps every string: the reading
/// the walk replaced.
fn by_serde_json(bytes: &[u8]) -> Result<(String, usize), serde_json::Error> {
    let mut gathered = (String::new(), 0);
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    Collect(&mut gathered).deserialize(&mut reader)?;
    reader.end()?;
    Ok(gathered)
}

struct Collect<'a>(&'a mut (String, usize));

impl<'de> DeserializeSeed<'de> for Collect<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Collect<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_str<E>(self, s: &str) -> Result<(), E> {
        self.0 .1 = self.0 .1.max(s.chars().count());
        self.0 .0.push_str(s);
        self.0 .0.push('\n');
        Ok(())
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

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Collect(&mut *self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Collect(&mut *self.0))?.is_some() {
            map.next_value_seed(Collect(&mut *self.0))?;
        }
        Ok(())
    }
}
