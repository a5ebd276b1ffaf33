//! A header value that is not plain visible ASCII (non-ASCII, control
//! characters, spaces at either end, or one that looks like the encoding's
//! own sentinel) travels as `=?base64?…?=`, as the 2026-07-28 revision
//! says; these are the two directions of that form.

use base64::Engine as _;
use hyper::header::HeaderValue;

/// `value` as a header value: as it is when that is safe, else in the
/// specification's Base64 form.
pub(crate) fn encoded(value: &str) -> HeaderValue {
    let visible = value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b));
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let sentinel = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = visible && !padded && !sentinel;
    let text = if plain {
        value.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(value);
        format!("=?base64?{b64}?=")
    };
    // Both forms are visible ASCII (and tabs and inner spaces).
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A header value as its sender meant it: `=?base64?…?=` decoded; `None`
/// when that form is malformed (not Base64, or not UTF-8 inside).
pub(crate) fn decoded(value: &str) -> Option<String> {
    let Some(b64) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_values_go_in_base64_and_come_back() {
        for (value, sent) in [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ] {
            let header = encoded(value);
            let text = header.to_str().expect("ascii");
            assert_eq!(text, sent, "{value:?}");
            assert_eq!(decoded(text).as_deref(), Some(value));
        }
        assert_eq!(decoded("=?base64?!!?="), None);
        assert_eq!(decoded("=?base64?/w==?="), None, "not UTF-8");
    }
}
