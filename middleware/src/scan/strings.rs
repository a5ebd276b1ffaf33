//! Every string of a JSON text, gathered in one pass without building a
//! value: what a listing's first, whole reading needs (building a map per
//! tool cost more than reading the text). The same parser, serde_json,
//! with a visitor that keeps only the strings.

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The strings (object keys too) of the JSON `bytes`, a line each, and
/// the length in characters of the longest.
pub(super) fn strings_of(bytes: &[u8]) -> Result<(String, usize), serde_json::Error> {
    let mut gathered = Gathered {
        // About what the strings come to: a listing is mostly strings.
        text: String::with_capacity(bytes.len()),
        longest: 0,
    };
    // Checked as UTF-8 once (a vector pass), not string by string.
    let mut reader = serde_json::Deserializer::from_str(crate::json::value::utf8(bytes)?);
    Collect(&mut gathered).deserialize(&mut reader)?;
    reader.end()?;
    Ok((gathered.text, gathered.longest))
}

struct Gathered {
    text: String,
    longest: usize,
}

struct Collect<'a>(&'a mut Gathered);

impl Collect<'_> {
    fn push(self, s: &str) {
        // A string no longer in bytes than the longest so far in
        // characters is no longer in characters: not counted.
        if s.len() > self.0.longest {
            let chars = if s.is_ascii() {
                s.len()
            } else {
                s.chars().count()
            };
            self.0.longest = self.0.longest.max(chars);
        }
        self.0.text.push_str(s);
        self.0.text.push('\n');
    }
}

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
        self.push(s);
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

#[cfg(test)]
mod tests {
    use super::strings_of;

    #[test]
    fn strings_and_keys_in_order_numbers_left_out() {
        let (text, longest) =
            strings_of(br#"{"tools":[{"name":"a\u00e9","n":1,"x":[true,null,"bc"]}]}"#)
                .expect("JSON");
        assert_eq!(text, "tools\nname\na\u{e9}\nn\nx\nbc\n");
        assert_eq!(longest, 5);
        assert!(strings_of(b"{\"a\":").is_err());
    }
}
