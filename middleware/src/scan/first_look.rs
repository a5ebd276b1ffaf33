//! A result's first look: every string of its JSON text read where it
//! stands, before any value is built. Most results hold nothing the rules
//! find, and building the value copied every string of one, a 10 MiB
//! text included: the relay's peak memory over `make bench`'s results was
//! 41.9 MiB with the value built, 31.9 MiB without. Only a result where
//! the first look finds something is read again as a value, text by text,
//! and cut.

use super::rules::Place;
use super::scanner::{Scanner, WINDOW};
use super::strings::{each_string, NotJson};

/// A string at least this long is read on its own; shorter ones are
/// joined, a line each, and read once they come to [`JOINED`].
const SHORT: usize = 1024;
const JOINED: usize = 32 * 1024;
const _: () = assert!(
    SHORT + JOINED <= WINDOW,
    "joined strings are read in one window"
);

impl Scanner {
    /// Whether no rule finds anything at `place` in any string (object
    /// keys too) of the JSON text `bytes`. Every string the reading of a
    /// value reads is one of them, read the same way, so this misses
    /// nothing that reading finds; it may find more (a key, a URI), and
    /// then the value is read. Short strings are read together, a line
    /// each, as a listing's are: a line break is no part of any match a
    /// string's own reading finds, and joined, each lies whole in one
    /// window. Many tiny strings cost a pass, not a reading each.
    pub(super) fn clean_strings(&self, bytes: &[u8], place: Place) -> Result<bool, NotJson> {
        let text = std::str::from_utf8(bytes).map_err(|_| NotJson)?;
        let mut short = String::new();
        let mut clean = true;
        each_string(text, |s| {
            if s.len() >= SHORT {
                clean = self.text(&s, place).is_empty();
            } else {
                short.push_str(&s);
                short.push('\n');
                if short.len() >= JOINED {
                    clean = self.text(&short, place).is_empty();
                    short.clear();
                }
            }
            clean
        })?;
        Ok(clean && (short.is_empty() || self.text(&short, place).is_empty()))
    }
}

#[cfg(test)]
#[path = "first_look_tests.rs"]
mod tests;
