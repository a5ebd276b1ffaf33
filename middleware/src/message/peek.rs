//! Finding the id of a response that cannot be parsed whole: nested deeper
//! than the parser allows, or cut short because it was over the size cap.
//! Without it, the request that response answers would never be answered.
//!
//! The scan walks the top-level object's keys and skips values without
//! recursion (a depth counter), so no input can exhaust the stack.

use super::RequestId;

/// The `id` of a JSON-RPC response (an object with `result` or `error` and
/// no `method`), read from a line that may be truncated or too deep to
/// parse. `None` when that cannot be told.
pub fn response_id(line: &[u8]) -> Option<RequestId> {
    let mut i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let (mut id, mut response) = (None, false);
    loop {
        i = skip_ws(line, i);
        if line.get(i) != Some(&b'"') {
            break;
        }
        let key_end = end_of_string(line, i)?;
        let key = &line[i + 1..key_end - 1];
        i = skip_ws(line, key_end);
        if line.get(i) != Some(&b':') {
            break;
        }
        i = skip_ws(line, i + 1);
        match key {
            b"method" => return None,
            b"result" | b"error" => response = true,
            _ => {}
        }
        if response && id.is_some() {
            break;
        }
        let Some(value_end) = end_of_value(line, i) else {
            break;
        };
        if key == b"id" {
            let value: serde_json::Value = serde_json::from_slice(&line[i..value_end]).ok()?;
            id = Some(RequestId::from_value(&value)?);
            if response {
                break;
            }
        }
        i = skip_ws(line, value_end);
        match line.get(i) {
            Some(b',') => i += 1,
            _ => break,
        }
    }
    if response {
        id
    } else {
        None
    }
}

fn skip_ws(line: &[u8], mut i: usize) -> usize {
    while line.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// Index just past the string starting at `i` (which holds its `"`).
fn end_of_string(line: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match line.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// Index just past the value starting at `i`.
fn end_of_value(line: &[u8], i: usize) -> Option<usize> {
    match line.get(i)? {
        b'"' => end_of_string(line, i),
        b'{' | b'[' => {
            let (mut depth, mut j) = (0usize, i);
            loop {
                match line.get(j)? {
                    b'"' => {
                        j = end_of_string(line, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let len = line[i..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            Some(i + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_id_of_a_response_too_deep_to_parse() {
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"result\":{}1{},\"id\":7}}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert!(serde_json::from_str::<serde_json::Value>(&deep).is_err());
        assert_eq!(response_id(deep.as_bytes()), Some(7.into()));
    }

    #[test]
    fn finds_the_id_at_the_front_of_a_truncated_response() {
        let cut =
            br#"{"jsonrpc":"2.0","id":"a\"b","result":{"content":[{"type":"text","text":"xxxx"#;
        assert_eq!(response_id(cut), Some(RequestId::from("a\"b")));
    }

    #[test]
    fn requests_and_shapeless_lines_give_nothing() {
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{}}"#),
            None
        );
        assert_eq!(response_id(br#"{"jsonrpc":"2.0","id":1,"params":{"#), None);
        assert_eq!(response_id(b"not json"), None);
        assert_eq!(response_id(br#"{"result":{"#), None);
        assert_eq!(response_id(br#"[1,2"#), None);
    }
}
