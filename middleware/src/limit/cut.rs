//! Shortening a result's text until the result fits: the longest text
//! first, at a UTF-8 boundary, each cut text ending with a notice that says
//! so. Only text whose cutting leaves a valid result of the same meaning
//! kind is cut: `tools/call` content items of type `text`, and
//! `resources/read` contents with `text`.

use crate::message::method;
use crate::payload::Payload;
use serde_json::Value;

/// Tries before giving up: each cut is sized from the last measure, and
/// escapes can make the first one fall short.
const TRIES: usize = 8;

/// Cuts `result` (of `method`, `size` bytes) to `limit` bytes. `Err` says
/// why it cannot be, and leaves it as it was.
pub(super) fn cut_text(
    method: &str,
    result: &mut Payload,
    size: usize,
    limit: usize,
) -> Result<(), &'static str> {
    let (list, field) = match method {
        method::TOOLS_CALL => ("content", "text"),
        method::RESOURCES_READ => ("contents", "text"),
        _ => return Err("only tool results and resource text can be cut"),
    };
    let mut value = result.to_value().map_err(|_| "the result cannot be read")?;
    if method == method::TOOLS_CALL && value.get("structuredContent").is_some() {
        return Err("a result with structuredContent is not cut");
    }
    let notice = notice(size, limit);
    let mut now = size;
    for _ in 0..TRIES {
        let Some(text) = longest_text(&mut value, list, field, &notice) else {
            return Err("no text in it is long enough to cut it to fit");
        };
        // A text cut before is cut again from what it kept.
        let cut_before = text.ends_with(&notice);
        if cut_before {
            text.truncate(text.len() - notice.len());
        }
        // The bytes of JSON to take off, with room for the notice;
        // measured as written (an escaped character is up to six bytes),
        // so text full of escapes keeps as much as fits.
        let over = now - limit + if cut_before { 0 } else { json_len(&notice) };
        let keep = json_len(text).saturating_sub(over);
        text.truncate(prefix_within(text, keep));
        text.push_str(&notice);
        now = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
        if now <= limit {
            *result = Payload::from(value);
            return Ok(());
        }
    }
    Err("its text cannot be cut short enough")
}

/// The bytes a character takes inside a JSON string, as serde_json
/// writes it.
fn char_json_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The bytes `text` takes inside a JSON string.
fn json_len(text: &str) -> usize {
    text.chars().map(char_json_len).sum()
}

/// The longest prefix of `text` (a byte index, at a character boundary)
/// that takes at most `budget` bytes inside a JSON string.
fn prefix_within(text: &str, budget: usize) -> usize {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        used += char_json_len(c);
        if used > budget {
            return at;
        }
    }
    text.len()
}

/// What a cut text ends with.
fn notice(size: usize, limit: usize) -> String {
    format!("\n\n[mcp-chain: cut to fit {limit} bytes; the whole result was {size} bytes]")
}

/// The longest text of `value[list][*][field]` that still has more than
/// the notice to give.
fn longest_text<'a>(
    value: &'a mut Value,
    list: &str,
    field: &str,
    notice: &str,
) -> Option<&'a mut String> {
    let items = value.get_mut(list)?.as_array_mut()?;
    items
        .iter_mut()
        .filter(|item| {
            list != "content" || item.get("type").and_then(Value::as_str) == Some("text")
        })
        .filter_map(|item| match item.get_mut(field) {
            Some(Value::String(text)) if text.len() > notice.len() => Some(text),
            _ => None,
        })
        .max_by_key(|text| text.len())
}
