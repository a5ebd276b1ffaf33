//! Where JSON is written (a line's buffer, or a count of its bytes), and a
//! string written as serde_json writes it.

/// Writes `s` as a JSON string, as serde_json does: a string with nothing
/// to escape (most names and methods) as it stands.
pub(crate) fn write_str(s: &str, out: &mut impl Out) {
    if s.bytes().all(|c| c >= 0x20 && c != b'"' && c != b'\\') {
        out.put(b"\"");
        out.put(s.as_bytes());
        out.put(b"\"");
    } else {
        serde_json::to_writer(out, s).expect("a string always serializes into a Vec");
    }
}

/// Where JSON is written: a line's buffer, or a count of its bytes.
pub(crate) trait Out: std::io::Write {
    fn put(&mut self, bytes: &[u8]);

    /// How many bytes were written so far.
    fn written(&self) -> usize;
}

impl Out for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn written(&self) -> usize {
        self.len()
    }
}

/// Counts what would be written.
pub(crate) struct Count(pub(crate) usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Out for Count {
    fn put(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }

    fn written(&self) -> usize {
        self.0
    }
}
