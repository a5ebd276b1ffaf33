//! Member names as serde_json hands them over (borrowed from the text when
//! they have no escapes), and where a borrowed slice lies in its text.

use serde::de::{DeserializeSeed, Deserializer, Visitor};
use std::fmt;
use std::ops::Range;

/// Where `part`, a slice serde_json borrowed from `text`, lies in it.
pub(crate) fn place(text: &[u8], part: &[u8]) -> Range<usize> {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    start..start + part.len()
}

/// A member name as serde_json hands it over: borrowed from the text when
/// it has no escapes, decoded otherwise.
pub(crate) enum Name<'de> {
    Borrowed(&'de str),
    Own(String),
}

impl Name<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Borrowed(s) => s,
            Self::Own(s) => s,
        }
    }
}

pub(crate) struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Name<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Name<'de>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Name<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Name<'de>, E> {
        Ok(Name::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Name<'de>, E> {
        Ok(Name::Own(s.to_owned()))
    }
}
