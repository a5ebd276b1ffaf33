//! Messages out, one line of JSON each: the envelope written as serde_json
//! writes it, the payloads as they stand (see [`Payload::write`]).

use super::{Message, RequestId};
use crate::json::{write_str, Count, Out};
use crate::payload::{Payload, Text, BIG_PAYLOAD_BYTES};

// === impl Message ===

impl Message {
    /// Appends the message as one line of JSON (with its `\n`).
    pub fn write_line(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.reserve(64 + self.payload().map_or(0, Payload::len_if_known));
        self.write_json(out, false);
        out.push(b'\n');
        crate::counts::one_written(out.len() - start);
    }

    /// [`Self::write_line`], except that a payload of
    /// [`BIG_PAYLOAD_BYTES`] or more that goes out as the sender's text is
    /// not copied into `out`: it is handed back, with where in `out` it
    /// belongs (the rest of the line is in `out` around that point), so
    /// that a writer can send it from where it is, in one `writev` with
    /// the bytes around it.
    pub fn write_line_around(self, out: &mut Vec<u8>) -> Option<(usize, Text)> {
        let Some(payload) = self.payload() else {
            self.write_line(out);
            return None;
        };
        let big_text = payload
            .text()
            .is_some_and(|text| text.len() >= BIG_PAYLOAD_BYTES);
        // A big payload a layer changed (a redacted result) is written once,
        // into a buffer of about its size, and sent from there like a big
        // text: written into `out`, a buffer shared by every message, it
        // grew by doubling and left each smaller copy behind.
        let big_value = !big_text && payload.len_if_known() >= BIG_PAYLOAD_BYTES;
        if !(big_text || big_value) {
            self.write_line(out);
            return None;
        }
        let start = out.len();
        let at = self.write_json(out, true);
        out.push(b'\n');
        let text = match big_value {
            true => {
                let mut bytes = Vec::with_capacity(payload.len_if_known() * 9 / 8);
                payload.write_to(&mut bytes);
                Some(Text::written(bytes))
            }
            false => self.into_payload().and_then(|p| p.into_text()),
        };
        let around = out.len() - start;
        crate::counts::one_written(around + text.as_ref().map_or(0, Text::len));
        Some((at?, text?))
    }

    /// Appends `messages` as one line: a JSON array (a batch's answers).
    pub fn write_batch(messages: &[Message], out: &mut Vec<u8>) {
        let start = out.len();
        out.push(b'[');
        for (n, message) in messages.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            message.write_json(out, false);
        }
        out.put(b"]\n");
        crate::counts::one_written(out.len() - start);
    }

    /// About how many bytes [`Self::write_line`] writes, without writing:
    /// the payload's size when it is known, and room for the envelope.
    pub fn estimated_len(&self) -> usize {
        64 + self.payload().map_or(0, Payload::len_if_known)
    }

    /// How many bytes [`Self::write_line`] writes, without the newline:
    /// counted, not written.
    pub fn json_len(&self) -> usize {
        let mut count = Count(0);
        self.write_json(&mut count, true);
        count.0 + self.payload().map_or(0, |p| p.json_len())
    }

    /// Writes the message as JSON: exactly what serde_json writes for its
    /// members in this order. With `skip_payload`, the payload's place is
    /// left empty and returned.
    pub(super) fn write_json(&self, out: &mut impl Out, skip_payload: bool) -> Option<usize> {
        out.put(br#"{"jsonrpc":"2.0""#);
        let mut payload_at = None;
        let (payload, key, extra) = match self {
            Self::Request(r) => {
                out.put(br#","id":"#);
                write_id(&r.id, out);
                out.put(br#","method":"#);
                write_str(&r.method, out);
                (r.params.as_ref(), &br#","params":"#[..], &r.extra)
            }
            Self::Notification(n) => {
                out.put(br#","method":"#);
                write_str(&n.method, out);
                (n.params.as_ref(), &br#","params":"#[..], &n.extra)
            }
            Self::Response(r) => {
                out.put(br#","id":"#);
                write_id(&r.id, out);
                (Some(&r.result), &br#","result":"#[..], &r.extra)
            }
            Self::Error(e) => {
                out.put(br#","id":"#);
                match &e.id {
                    Some(id) => write_id(id, out),
                    None => out.put(b"null"),
                }
                out.put(br#","error":"#);
                serde_json::to_writer(&mut *out, &e.error)
                    .expect("an error object always serializes");
                (None, &b""[..], &e.extra)
            }
        };
        if let Some(payload) = payload {
            out.put(key);
            payload_at = Some(out.written());
            if !skip_payload {
                payload.write_to(out);
            }
        }
        for (name, value) in extra {
            out.put(b",");
            write_str(name, out);
            out.put(b":");
            serde_json::to_writer(&mut *out, value).expect("a Value always serializes");
        }
        out.put(b"}");
        payload_at
    }
}

fn write_id(id: &RequestId, out: &mut impl Out) {
    match id {
        RequestId::Number(n) => serde_json::to_writer(out, n).expect("a number always serializes"),
        RequestId::String(s) => write_str(s, out),
    }
}
