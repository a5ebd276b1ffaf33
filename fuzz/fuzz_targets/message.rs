//! Framing and message parsing, held to serde_json: any line either fails
//! to parse (-32700), is judged invalid (-32600), or gives messages that are
//! the ones serde_json reads, are written back as one line each, and parse
//! back to the same message; every read of a payload gives what reading
//! its whole value gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_chain_fuzz::{round_trips, values_match};
use mcp_chain_middleware::message::Incoming;
use mcp_chain_middleware::payload::{Item, Payload};
use mcp_chain_middleware::Message;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let parsed = Incoming::parse(data);
    let whole = serde_json::from_slice::<Value>(data);
    // serde_json's `Value` reads an object whose first key is its private
    // RawValue token in a way of its own; mcp-chain reads it as any reader
    // does (see payload::value). Such lines are not compared (any spelling
    // of the token but one escaped throughout holds one of these).
    let quirk = [&b"serde"[..], b"private", b"RawValue"]
        .iter()
        .any(|part| memchr_find(data, part).is_some());
    match (&parsed, &whole) {
        (Ok(_), Ok(_)) | (Err(_), Err(_)) => {}
        // What serde_json reads, mcp-chain reads.
        (Err(e), Ok(_)) => assert!(quirk, "refused what serde_json reads: {e}"),
        // mcp-chain passes over a payload no layer reads: serde_json's
        // refusals of a value it reads in full (a number beyond an f64)
        // come when a layer reads it.
        (Ok(_), Err(e)) => assert!(
            quirk || e.to_string().contains("number out of range"),
            "read what serde_json refuses: {e}"
        ),
    }
    // Read with its payloads left in the line (as a big one is), the
    // messages are the same.
    let mut buf = b"{}\n".to_vec();
    buf.extend_from_slice(data);
    let shared = Incoming::parse_shared(std::sync::Arc::new(buf), 3..3 + data.len());
    match (&parsed, &shared) {
        (Ok(Incoming::Single(a)), Ok(Incoming::Single(b))) => assert_eq!(a, b),
        (Ok(Incoming::Batch(a)), Ok(Incoming::Batch(b))) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        other => panic!("shared and copied reads differ: {other:?}"),
    }
    let Ok(incoming) = parsed else {
        return;
    };
    if !quirk {
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
            members_read_alike(&resp.result);
        }
        if let Some(params) = message.params() {
            members_read_alike(params);
        }
        let mut line = Vec::new();
        message.write_line(&mut line);
        assert_eq!(message.json_len() + 1, line.len(), "{message:?}");
        // Whatever it holds, the line is one JSON value.
        serde_json::from_slice::<serde::de::IgnoredAny>(&line).expect("we wrote JSON");
        if quirk {
            continue;
        }
        // Read whole (when serde_json will: a number beyond an f64 it passes
        // over but does not hold), it is the message.
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            assert!(message.to_value().is_string(), "{message:?}");
            continue;
        };
        assert!(
            values_match(&value, &message.to_value()),
            "{value} vs {message:?}"
        );
        // from_value of a message's own value is the same message, and
        // written from values it is byte for byte what serde_json writes.
        let again = Message::from_value(value.clone());
        assert_eq!(again.as_ref(), Ok(&message));
        if let Ok(again) = again {
            let mut ours = Vec::new();
            again.write_line(&mut ours);
            let mut theirs = serde_json::to_vec(&value).expect("a value serializes");
            theirs.push(b'\n');
            assert_eq!(ours, theirs, "{message:?}");
        }
    }
});

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Editing list items on the sender's text gives what editing the parsed
/// value gives: the same items kept, the same members changed; a list that
/// cannot be read is an error for both.
fn lists_edit_alike(result: &Payload) {
    let Ok(value) = result.to_value() else {
        return;
    };
    let mut parsed = Payload::from(value);
    let mut raw = result.clone();
    for key in ["a", "tools"] {
        let edited = [&mut raw, &mut parsed].map(|payload| {
            let first = payload.edit_items(key, edit);
            let second = payload.edit_items(key, |item| item.str_member("b").is_none());
            first.is_ok() && second.is_ok()
        });
        assert_eq!(edited[0], edited[1], "{key}: {result:?}");
    }
    let raw = raw.to_value().expect("edited text reads");
    let parsed = parsed.to_value().expect("edited value reads");
    assert!(values_match(&raw, &parsed), "{raw} vs {parsed}");
}

fn edit(item: &mut Item<'_>) -> bool {
    let Some(name) = item.str_member("name").map(|n| n.into_owned()) else {
        return true;
    };
    if let Some(Value::Object(map)) = item.get_mut("x") {
        map.insert("seen".into(), true.into());
    }
    item.set("name", format!("{name}!").into());
    name.len() % 2 == 0
}

/// A member read one level deep from the sender's text is the one the
/// whole value holds; a payload that is not an object is an error both
/// ways.
fn members_read_alike(payload: &Payload) {
    const KEYS: [&str; 4] = ["name", "uri", "arguments", "isError"];
    let whole = payload.to_value();
    for key in KEYS {
        let read = payload.str_member(key);
        let member = payload.member(key);
        match &whole {
            Ok(Value::Object(map)) => {
                let value = map.get(key);
                if let Ok(member) = &member {
                    assert_eq!(member.as_ref(), value, "{key} of {payload:?}");
                }
                match (read, value) {
                    (Ok(Some(s)), Some(Value::String(v))) => assert_eq!(&*s, v),
                    (Ok(None), None) => {}
                    (Err(_), Some(v)) => assert!(!v.is_string(), "{key} of {payload:?}"),
                    (read, value) => panic!("{key}: {read:?} vs {value:?}"),
                }
            }
            Ok(_) => assert!(read.is_err() && member.is_err(), "{payload:?}"),
            Err(_) => {}
        }
    }
}
