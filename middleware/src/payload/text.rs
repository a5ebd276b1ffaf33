//! A payload's text as it came: bytes serde_json accepted as one JSON
//! value, owned, or (for a big one) left where it is in the line it came in
//! and shared with it, so a 10 MB result is not copied on its way through.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// A payload of this many bytes or more stays in the buffer its line was
/// read into (see [`Text::shared`]), and a writer sends it from there
/// rather than copying it into its queue. One constant, because reading
/// and writing must agree on what is big.
pub const BIG_PAYLOAD_BYTES: usize = 64 * 1024;

/// JSON text of one value, without blanks around it and without line
/// breaks anywhere, so it can be written into a line as it stands.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Own(Box<[u8]>),
    /// `buf[at]`. Boxed: most payloads are small and their own.
    Shared(Box<(Arc<Vec<u8>>, Range<usize>)>),
}

// === impl Text ===

impl Text {
    /// A copy of `bytes`, which serde_json accepted as one JSON value.
    pub(crate) fn copied(bytes: &[u8]) -> Self {
        Self(Repr::Own(without_line_breaks(bytes)))
    }

    /// `buf[at]`, which serde_json accepted as one JSON value, shared with
    /// the buffer when it is big, copied otherwise.
    pub(crate) fn shared(buf: &Arc<Vec<u8>>, at: Range<usize>) -> Self {
        let bytes = &buf[at.clone()];
        if bytes.len() < BIG_PAYLOAD_BYTES || has_line_break(bytes) {
            return Self::copied(bytes);
        }
        Self(Repr::Shared(Box::new((buf.clone(), at))))
    }

    /// Text mcp-chain wrote itself (with serde_json, or from pieces of
    /// received text), so already one JSON value without line breaks.
    pub(crate) fn written(bytes: Vec<u8>) -> Self {
        Self(Repr::Own(bytes.into_boxed_slice()))
    }

    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Own(bytes) => bytes,
            Repr::Shared(shared) => &shared.0[shared.1.clone()],
        }
    }

    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(self.as_bytes()) {
            Ok(text) if text.len() <= 256 => write!(f, "Text({text})"),
            _ => write!(f, "Text({} bytes)", self.len()),
        }
    }
}

pub(crate) fn has_line_break(bytes: &[u8]) -> bool {
    memchr::memchr2(b'\n', b'\r', bytes).is_some()
}

/// `bytes` without CR or LF. In JSON text those two bytes can only be
/// blanks between tokens: inside a string they must be escaped, and in
/// UTF-8 they are never part of a longer character. Dropping them changes
/// nothing a reader sees, and keeps a payload from breaking the line it is
/// written into (a sender may put them between tokens).
fn without_line_breaks(bytes: &[u8]) -> Box<[u8]> {
    if !has_line_break(bytes) {
        return bytes.into();
    }
    bytes
        .iter()
        .copied()
        .filter(|b| !matches!(b, b'\n' | b'\r'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_between_tokens_are_dropped() {
        let text = Text::copied(b"{\"a\":1,\r\n\"b\":[2 \n]}");
        assert_eq!(text.as_bytes(), b"{\"a\":1,\"b\":[2 ]}");
    }

    #[test]
    fn a_big_payload_stays_in_its_buffer_and_a_small_one_is_copied() {
        let line = format!("{{\"result\":\"{}\"}}", "x".repeat(BIG_PAYLOAD_BYTES));
        let buf = Arc::new(line.into_bytes());
        let big = Text::shared(&buf, 10..buf.len() - 1);
        assert!(matches!(big.0, Repr::Shared(_)));
        assert_eq!(big.as_bytes(), &buf[10..buf.len() - 1]);
        let small = Text::shared(&buf, 10..20);
        assert!(matches!(small.0, Repr::Own(_)));
    }
}
