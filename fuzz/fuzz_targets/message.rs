//! Framing and message parsing: any line either fails to parse (-32700),
//! is judged invalid (-32600), or gives messages that are written back as
//! one line each and parse back to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_fuzz::{round_trips, values_match};
use mcp_chain_middleware::message::{Incoming, Item, Payload};
use mcp_chain_middleware::Message;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // mcp-chain's own check of a line may refuse more than serde_json (the
    // line is then parsed whole), never less; and either way the message
    // read is the one serde_json reads.
    let parsed = Incoming::parse(data);
    let whole = serde_json::from_slice::<Value>(data);
    assert_eq!(parsed.is_ok(), whole.is_ok(), "{parsed:?} vs {whole:?}");
    // Read with every payload left in the line (as a big one is), the
    // messages are the same.
    let mut buf = b"{}\n".to_vec();
    buf.extend_from_slice(data);
    let shared = Incoming::parse_shared(std::sync::Arc::new(buf), 3..3 + data.len(), 0);
    match (&parsed, &shared) {
        (Ok(Incoming::Single(a)), Ok(Incoming::Single(b))) => assert_eq!(a, b),
        (Ok(Incoming::Batch(a)), Ok(Incoming::Batch(b))) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        other => panic!("shared and copied reads differ: {other:?}"),
    }
    let Ok(incoming) = parsed else {
        return;
    };
    match (&incoming, whole) {
        (Incoming::Single(read), Ok(value)) if value.is_object() => {
            assert_eq!(read.as_ref(), Message::from_value(value).as_ref());
        }
        (Incoming::Batch(reads), Ok(Value::Array(values))) => {
            assert_eq!(reads.len(), values.len());
            for (read, value) in reads.iter().zip(values) {
                assert_eq!(read.as_ref(), Message::from_value(value).as_ref());
            }
        }
        _ => {}
    }
    let items = match incoming {
        Incoming::Single(item) => vec![item],
        Incoming::Batch(items) => items,
    };
    for item in items {
        let message = match item {
            Ok(message) => message,
            Err(invalid) => {
                // The error answer for it must be writable too.
                let _ = invalid.to_string();
                continue;
            }
        };
        round_trips(&message);
        if let Message::Response(resp) = &message {
            lists_edit_alike(&resp.result);
        }
        if let Some(params) = message.payload() {
            members_read_alike(params);
        }
        // to_value and the writer agree.
        let mut line = Vec::new();
        message.write_line(&mut line);
        // The hand-written shapes are byte for byte what serde_json writes.
        let mut serde_line = serde_json::to_vec(&message).expect("a message serializes");
        serde_line.push(b'\n');
        assert_eq!(line, serde_line, "{message:?}");
        // Written with its payload handed over instead (as the writer does
        // for a big one), the line is the same once the payload is put back.
        let mut around = Vec::new();
        if let Some((at, text)) = message.clone().write_line_around(&mut around, 0) {
            around.splice(at..at, text.bytes());
        }
        assert_eq!(around, line, "{message:?}");
        let value: Value = serde_json::from_slice(&line).expect("we wrote JSON");
        assert!(
            values_match(&value, &message.to_value()),
            "{value} vs {message:?}"
        );
        // from_value of a message's own value is the same message.
        assert_eq!(
            Message::from_value(message.to_value()).as_ref(),
            Ok(&message)
        );
    }
});

/// Editing list items on the sender's text gives what editing the parsed
/// value gives: the same items kept, the same members changed.
fn lists_edit_alike(result: &Payload) {
    let mut parsed = Payload::from(result.clone().into_value());
    let mut raw = result.clone();
    for payload in [&mut raw, &mut parsed] {
        for key in ["a", "tools"] {
            payload.edit_items(key, edit);
            payload.edit_items(key, |item| item.str_member("b").is_none());
        }
    }
    let text = serde_json::to_string(&raw).expect("a payload serializes");
    let raw: Value = serde_json::from_str(&text).expect("edited text is JSON");
    assert!(values_match(&raw, &parsed), "{raw} vs {:?}", *parsed);
}

fn edit(item: &mut Item<'_>) -> bool {
    let Some(name) = item.str_member("name").map(|n| n.into_owned()) else {
        return true;
    };
    if let Some(Value::Object(map)) = item.get_mut("x") {
        map.insert("seen".into(), true.into());
    }
    item.insert("name", format!("{name}!").into());
    name.len() % 2 == 0
}

/// A string member read from the sender's bytes (found by the line's
/// outline or by a look at the text) is the one the parsed value holds.
fn members_read_alike(params: &Payload) {
    const KEYS: [&str; 3] = ["name", "uri", "arguments"];
    let from_bytes = KEYS.map(|key| params.str_member(key).map(str::to_owned));
    // Parsed now (the reads above may have left it unparsed).
    let value: &Value = params;
    for (key, read) in KEYS.iter().zip(from_bytes) {
        let parsed = value.get(key).and_then(Value::as_str);
        assert_eq!(read.as_deref(), parsed, "{key} of {value}");
    }
}
