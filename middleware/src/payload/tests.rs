use super::*;
use crate::message::{Incoming, Message};
use serde_json::json;

/// The result of a response line, as received.
fn result(text: &str) -> Payload {
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#);
    match Incoming::parse(line.as_bytes()) {
        Ok(Incoming::Single(Ok(Message::Response(r)))) => r.result,
        other => panic!("{line}: {other:?}"),
    }
}

fn written(payload: &Payload) -> String {
    let mut out = Vec::new();
    payload.write(&mut out);
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn one_member_is_read_and_the_rest_left_as_sent() {
    let p = result(r#"{"content":[{"type":"text","text":"big"}], "isError":true}"#);
    assert_eq!(p.member("isError"), Ok(Some(json!(true))));
    assert_eq!(p.member("absent"), Ok(None));
    assert!(p.is_untouched());
    assert_eq!(p.str_member("absent"), Ok(None));
    assert!(p.is_untouched());
    assert!(result("[1]").member("isError").is_err());
    assert!(result(r#""s""#).str_member("name").is_err());
}

#[test]
fn a_member_spelled_with_escapes_is_found() {
    let p = result(r#"{"is\u0045rror":true}"#);
    assert_eq!(p.member("isError"), Ok(Some(json!(true))));
    // Among other escapes, which cannot spell it, and after them.
    let p = result(r#"{"text":"a\nb\u00e9\\u0045","\u0069nputRequests":{}}"#);
    assert_eq!(p.member("inputRequests"), Ok(Some(json!({}))));
    let p = result(r#"{"text":"a\nb\u00e9\"c\u0041"}"#);
    assert_eq!(p.member("inputRequests"), Ok(None));
}

#[test]
fn a_word_the_text_cannot_spell_is_ruled_out_and_nothing_else() {
    let plain = result(r#"{"content":[{"type":"text","text":"done"}]}"#);
    assert!(!plain.may_spell("task"));
    assert!(plain.is_untouched());
    // Written, inside a longer key or a string, or spelled with an escape.
    for text in [
        r#"{"taskId":"t1"}"#,
        r#"{"_meta":{"io.modelcontextprotocol/related-task":{}}}"#,
        r#"{"text":"a task"}"#,
        r#"{"\u0074askId":"t1"}"#,
        r#"{"t\u0061skId":"t1"}"#,
    ] {
        assert!(result(text).may_spell("task"), "{text}");
    }
    // What is not the sender's text any more is never ruled out.
    assert!(Payload::from(json!({"a": 1})).may_spell("task"));
    let mut edited = result(r#"{"a":1}"#);
    edited.set_member("b", json!(2)).expect("an object");
    assert!(edited.may_spell("task"));
}

#[test]
fn string_members_read_as_serde_json_reads_them() {
    let p = result(r#"{"name":"a\"b\u00e9","n":5,"name2":"plain"}"#);
    assert_eq!(p.str_member("name").expect("ok").as_deref(), Some("a\"bé"));
    assert_eq!(p.str_member("name2").expect("ok").as_deref(), Some("plain"));
    assert_eq!(p.str_member("none"), Ok(None));
    assert!(p.str_member("n").is_err());
}

#[test]
fn a_member_set_leaves_the_others_as_sent() {
    let mut p = result(r#"{"name":"x", "arguments":{"a" : 1.50}}"#);
    p.set_member("name", json!("y")).expect("an object");
    p.set_member("added", json!([1])).expect("an object");
    assert_eq!(
        written(&p),
        r#"{"name":"y","arguments":{"a" : 1.50},"added":[1]}"#
    );
    assert!(!p.is_untouched());
    assert!(result("[]").set_member("a", json!(1)).is_err());
}

/// Drops items named `secret`, renames the rest with a `p_` prefix, and
/// adds a description to `b`: done on the payload, and on a parsed copy.
fn edit_both(text: &str) -> (Payload, Value) {
    let mut p = result(text);
    p.edit_items("tools", |item| {
        let Some(name) = item.str_member("name").map(|n| n.into_owned()) else {
            return true;
        };
        if name == "secret" {
            return false;
        }
        item.set("name", json!(format!("p_{name}")));
        if name == "b" {
            item.set("description", json!("B"));
        }
        true
    })
    .expect("edits");
    let mut v: Value = serde_json::from_str(text).expect("valid");
    if let Some(Value::Array(tools)) = v.get_mut("tools") {
        tools.retain(|t| t.get("name") != Some(&json!("secret")));
        for t in tools.iter_mut().filter(|t| t.is_object()) {
            if let Some(Value::String(name)) = t.get("name").cloned() {
                t["name"] = json!(format!("p_{name}"));
                if name == "b" {
                    t["description"] = json!("B");
                }
            }
        }
    }
    (p, v)
}

#[test]
fn list_items_are_edited_as_a_parsed_value_would_be() {
    let texts = [
        r#"{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"secret"},{"name":"b","description":"old"},7,{"x":1}],"nextCursor":"c"}"#,
        r#"{"tools":[{"name":"x","name":"secret"},{"na\u006de":"b"}],"tools":[{"name":"a"},{"name":"secret"}]}"#,
        r#"{"tools":[]}"#,
        r#"{"other":1}"#,
    ];
    for text in texts {
        let (p, v) = edit_both(text);
        let read: Value = serde_json::from_str(&written(&p)).expect("valid JSON");
        assert_eq!(read, v, "{text}");
        assert_eq!(p.to_value(), Ok(v), "{text}");
    }
}

#[test]
fn a_list_nobody_changed_stays_the_senders_text() {
    let text = r#"{"tools":[ {"name":"a"} ],"x":1}"#;
    let mut p = result(text);
    p.edit_items("tools", |_| true).expect("a list");
    assert!(p.is_untouched());
    assert_eq!(written(&p), text);
}

#[test]
fn a_list_that_cannot_be_read_is_an_error_and_left_alone() {
    for text in [r#"{"tools":{"name":"a"}}"#, r#"{"tools":"a"}"#, "[1]", "5"] {
        let mut p = result(text);
        assert!(p.edit_items("tools", |_| false).is_err(), "{text}");
        assert_eq!(written(&p), text);
    }
}

#[test]
fn a_second_edit_reads_what_the_first_wrote() {
    let mut p = result(r#"{"tools":[{"name":"a"},{"name":"b"}],"prompts":[{"name":"c"}]}"#);
    p.edit_items("tools", |item| {
        item.str_member("name").as_deref() != Some("a")
    })
    .expect("a list");
    let mut seen = Vec::new();
    p.edit_items("tools", |item| {
        seen.push(item.str_member("name").map(|n| n.into_owned()));
        item.set("name", json!("z"));
        true
    })
    .expect("a list");
    p.edit_items("prompts", |_| false).expect("a list");
    assert_eq!(seen, [Some("b".to_owned())]);
    assert_eq!(
        p.to_value(),
        Ok(json!({"tools":[{"name":"z"}],"prompts":[]}))
    );
}

#[test]
fn a_built_payload_is_edited_like_a_received_one() {
    let mut p = Payload::from(json!({"tools":[{"name":"a"},{"name":"b"}]}));
    p.edit_items("tools", |item| {
        item.str_member("name").as_deref() == Some("b")
    })
    .expect("a list");
    assert_eq!(p.to_value(), Ok(json!({"tools":[{"name":"b"}]})));
}

#[test]
fn an_item_member_changed_in_place_is_written_from_what_changed() {
    let mut p = result(r#"{"tools":[{"name":"a","inputSchema":{"properties":{"x":{},"y":{}}}}]}"#);
    p.edit_items("tools", |item| {
        if let Some(Value::Object(schema)) = item.get_mut("inputSchema") {
            schema.insert("required".into(), json!(["y"]));
        }
        assert_eq!(item.member("name"), Some(json!("a")));
        true
    })
    .expect("a list");
    assert_eq!(
        p.to_value(),
        Ok(
            json!({"tools":[{"name":"a","inputSchema":{"properties":{"x":{},"y":{}},"required":["y"]}}]})
        )
    );
}

#[test]
fn a_whole_edit_that_changes_nothing_leaves_the_text() {
    let mut p = result(r#"{"a": "x",  "b": 1}"#);
    assert_eq!(p.edit_value(|_| false), Ok(false));
    assert_eq!(written(&p), r#"{"a": "x",  "b": 1}"#, "the sender's text");
    assert!(p.text().is_some());
    assert_eq!(
        p.edit_value(|v| {
            v["b"] = json!(2);
            true
        }),
        Ok(true)
    );
    assert_eq!(written(&p), r#"{"a":"x","b":2}"#);
    let mut bad = result(r#"{"a":1e999}"#);
    assert!(bad.edit_value(|_| true).is_err());
    assert_eq!(written(&bad), r#"{"a":1e999}"#, "left as it was");
}

#[test]
fn the_whole_value_changed_is_written_from_the_value() {
    let mut p = result(r#"{"a": 1}"#);
    p.value_mut().expect("readable")["a"] = json!(2);
    assert_eq!(written(&p), r#"{"a":2}"#);
    let mut bad = result(r#"{"a":1e999}"#);
    assert!(bad.value_mut().is_err());
    assert_eq!(written(&bad), r#"{"a":1e999}"#, "left as it was");
}

#[test]
fn keys_not_plain_are_written_from_what_was_read() {
    // A reader keeping the first of duplicate keys would see "safe" and the
    // first "a": once a layer has read the payload, it says only what the
    // layer read, at every depth.
    let p = result(r#"{"name":"safe","name":"evil","arguments":{"a":1,"a":2}}"#);
    assert_eq!(
        p.str_member("name").expect("readable").as_deref(),
        Some("evil")
    );
    assert!(!p.is_untouched());
    assert_eq!(written(&p), r#"{"name":"evil","arguments":{"a":2}}"#);
    // Escapes are read alike by every reader: an escaped key alone leaves
    // the text as sent.
    let p = result(r#"{"na\u006de":"x"}"#);
    assert_eq!(p.member("name"), Ok(Some(json!("x"))));
    assert_eq!(written(&p), r#"{"na\u006de":"x"}"#);
    // Also when a list is edited.
    let mut p = result(r#"{"tools":[{"name":"a"}],"tools":[{"name":"b","name":"c"}]}"#);
    p.edit_items("tools", |_| true).expect("a list");
    assert_eq!(written(&p), r#"{"tools":[{"name":"c"}]}"#);
}

#[test]
fn of_a_list_key_written_twice_the_last_is_the_list() {
    let mut p = result(r#"{"tools":"not a list","tools":[{"name":"a"},{"name":"b"}]}"#);
    p.edit_items("tools", |item| {
        item.str_member("name").as_deref() == Some("b")
    })
    .expect("the last is a list");
    assert_eq!(p.to_value(), Ok(json!({"tools":[{"name":"b"}]})));
    let mut p = result(r#"{"tools":[{"name":"a"}],"tools":"not a list"}"#);
    assert!(p.edit_items("tools", |_| true).is_err());
}

#[test]
fn a_list_whose_keys_need_escapes_is_edited_and_ends() {
    // Keys that serde_json itself writes with escapes stay escaped however
    // often the text is written anew: that must not read as unclear keys.
    let mut p = result(r#"{"to\"ols":1,"tools":[{"na\nme":1,"name":"a"}],"tools":[{"name":"b"}]}"#);
    p.edit_items("tools", |item| item.str_member("name").is_some())
        .expect("a list");
    assert_eq!(
        p.to_value(),
        Ok(json!({"to\"ols":1,"tools":[{"name":"b"}]}))
    );
}

#[test]
fn a_listings_items_are_written_without_their_brackets_as_they_now_stand() {
    let items = |p: &Payload, key: &str| {
        let mut out = b"before".to_vec();
        let wrote = p.write_items(key, &mut out);
        (wrote, String::from_utf8(out).expect("utf-8"))
    };
    // As received: the sender's text between the brackets.
    let p = result(r#"{"tools": [ {"name":"a"} , {"name":"b"} ] ,"nextCursor":"c"}"#);
    assert_eq!(
        items(&p, "tools"),
        (Ok(true), r#"before{"name":"a"} , {"name":"b"}"#.into())
    );
    assert!(p.is_untouched());
    // Edited: written from the items once, the dropped one gone.
    let mut p = result(r#"{"tools":[{"name":"a","x":[1]},{"name":"b"}]}"#);
    p.edit_items("tools", |item| {
        let keep = item.str_member("name").as_deref() == Some("a");
        item.set("name", json!("s__a"));
        keep
    })
    .expect("a list");
    assert_eq!(
        items(&p, "tools"),
        (Ok(true), r#"before{"name":"s__a","x":[1]}"#.into())
    );
    // Built as a value; empty; missing.
    let p = Payload::from(json!({"tools": [{"name": "v"}, 2]}));
    assert_eq!(
        items(&p, "tools"),
        (Ok(true), r#"before{"name":"v"},2"#.into())
    );
    assert_eq!(
        items(&result(r#"{"tools":[ ]}"#), "tools"),
        (Ok(true), "before".into())
    );
    assert_eq!(
        items(&result(r#"{"tools":[]}"#), "prompts"),
        (Ok(false), "before".into())
    );
    // Not an array, not an object: an error, and nothing written.
    for (text, key) in [
        (r#"{"tools":"[x]"}"#, "tools"),
        (r#"{"tools":{"a":[]}}"#, "tools"),
        ("[[1]]", "tools"),
    ] {
        let (wrote, out) = items(&result(text), key);
        assert!(wrote.is_err(), "{text}");
        assert_eq!(out, "before", "{text}");
    }
}
