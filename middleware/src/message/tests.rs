use super::*;
use crate::payload::BIG_PAYLOAD_BYTES;
use serde_json::json;
use std::sync::Arc;

fn roundtrip(v: Value) -> Value {
    let msg = Message::from_value(v).expect("valid message");
    let mut line = Vec::new();
    msg.write_line(&mut line);
    assert_eq!(line.last(), Some(&b'\n'));
    serde_json::from_slice(&line).expect("we write valid JSON")
}

#[test]
fn request_roundtrips_with_unknown_fields_and_meta() {
    let v = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"x","arguments":{"a":[1,2]},"_meta":{"progressToken":"p"}},
        "futureField":{"deep":true}});
    assert_eq!(roundtrip(v.clone()), v);
}

#[test]
fn ids_are_echoed_exactly() {
    for id in [
        json!(9007199254740991u64),
        json!(-1),
        json!(0),
        json!("ünïcødé 🦀"),
        json!(""),
        json!(18446744073709551615u64),
    ] {
        let v = json!({"jsonrpc":"2.0","id":id,"result":{}});
        assert_eq!(roundtrip(v.clone()), v);
    }
}

#[test]
fn responses_and_errors_keep_everything() {
    let ok = json!({"jsonrpc":"2.0","id":"a","result":{"content":[],"structuredContent":{"k":1},"isError":false}});
    assert_eq!(roundtrip(ok.clone()), ok);
    let err = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":{"x":1},"odd":2}});
    assert_eq!(roundtrip(err.clone()), err);
}

#[test]
fn notification_has_no_id() {
    let v = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let msg = Message::from_value(v.clone()).expect("valid");
    assert!(matches!(msg, Message::Notification(_)));
    assert_eq!(roundtrip(v.clone()), v);
}

#[test]
fn invalid_shapes_are_rejected_with_their_id() {
    let cases = [
        (json!(5), None),
        (json!({"id":1,"method":"ping"}), Some(RequestId::from(1))),
        (
            json!({"jsonrpc":"1.0","id":"x","method":"ping"}),
            Some("x".into()),
        ),
        (json!({"jsonrpc":"2.0","id":true,"method":"ping"}), None),
        (json!({"jsonrpc":"2.0","id":null,"method":"ping"}), None),
        (json!({"jsonrpc":"2.0","id":2,"method":7}), Some(2.into())),
        (
            json!({"jsonrpc":"2.0","id":3,"method":"m","params":"s"}),
            Some(3.into()),
        ),
        (json!({"jsonrpc":"2.0","id":4}), Some(4.into())),
        (
            json!({"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"m"}}),
            Some(5.into()),
        ),
        (json!({"jsonrpc":"2.0","result":1}), None),
        (
            json!({"jsonrpc":"2.0","id":6,"error":{"code":"x","message":"m"}}),
            Some(6.into()),
        ),
    ];
    for (value, id) in cases {
        let err = Message::from_value(value.clone()).expect_err(&value.to_string());
        assert_eq!(err.id, id, "{value}");
    }
}

#[test]
fn params_may_be_an_array() {
    let v = json!({"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]});
    assert_eq!(roundtrip(v.clone()), v);
}

#[test]
fn parse_sorts_lines() {
    assert!(Incoming::parse(b"{nope").is_err());
    assert!(matches!(
        Incoming::parse(b"[]"),
        Ok(Incoming::Single(Err(_)))
    ));
    let Ok(Incoming::Batch(items)) = Incoming::parse(
        br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},5,{"jsonrpc":"2.0","method":"n"}]"#,
    ) else {
        panic!("expected a batch");
    };
    assert!(items[0].is_ok() && items[1].is_err() && items[2].is_ok());
}

#[test]
fn jsonrpc_is_2_0_however_spelled_and_refused_as_serde_json_refuses_it() {
    let line = |version: &str| format!(r#"{{"jsonrpc":{version},"id":1,"method":"ping"}}"#);
    for spelled in [r#""2.0""#, r#""2\u002e0""#, r#""\u0032.0""#] {
        let msg = single(line(spelled).as_bytes());
        assert_eq!(msg.method(), Some("ping"), "{spelled}");
    }
    for wrong in [r#""2.00""#, "2.0", r#"["2.0"]"#, r#"{"v":"2.0"}"#, "null"] {
        let read = Incoming::parse(line(wrong).as_bytes()).expect("valid JSON");
        assert!(matches!(read, Incoming::Single(Err(_))), "{wrong}");
    }
    // What serde_json refuses in a whole line is refused here too.
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for bad in [r#""\ud800""#, deep.as_str()] {
        assert!(Incoming::parse(line(bad).as_bytes()).is_err(), "{bad}");
        assert!(serde_json::from_str::<serde_json::Value>(&line(bad)).is_err());
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = "[".repeat(100_000);
    assert!(Incoming::parse(deep.as_bytes()).is_err());
}

#[test]
fn refusal_names_mcp_chain_and_layer() {
    let e = ErrorObject::refusal(
        ErrorCode::RATE_LIMITED,
        "rate_limit",
        "limited",
        "too many calls",
    );
    assert!(e.message.starts_with("mcp-chain rate_limit:"));
    assert_eq!(
        e.data,
        Some(json!({"layer":"rate_limit","reason":"limited"}))
    );
}

fn single(line: &[u8]) -> Message {
    match Incoming::parse(line) {
        Ok(Incoming::Single(Ok(msg))) => msg,
        other => panic!("expected a message, got {other:?}"),
    }
}

fn written(msg: &Message) -> String {
    let mut out = Vec::new();
    msg.write_line(&mut out);
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn an_unread_payload_is_written_back_as_its_bytes() {
    let msg = single(br#"{"jsonrpc":"2.0","id":1,"result":{"b": 1,  "a":[2.50, "x"]}}"#);
    let out = written(&msg);
    assert!(
        out.contains(r#""result":{"b": 1,  "a":[2.50, "x"]}"#),
        "{out}"
    );
}

#[test]
fn duplicate_keys_keep_the_last_in_the_envelope_and_in_payloads() {
    let msg = single(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"safe","name":"evil"}}"#,
    );
    assert_eq!(msg.method(), Some("tools/call"));
    let params = msg.params().expect("params");
    assert_eq!(
        params.str_member("name").expect("readable").as_deref(),
        Some("evil")
    );
    // What is forwarded reads the same to any reader that keeps the last
    // (servers do): serde_json's own reading of the line written agrees.
    let out: Value = serde_json::from_str(&written(&msg)).expect("valid JSON");
    assert_eq!(out["params"]["name"], "evil");
    assert_eq!(out["method"], "tools/call");
}

#[test]
fn a_line_break_between_tokens_is_not_copied_into_the_line_we_write() {
    // CR and LF are blanks to JSON; a payload kept as text would carry one
    // into the middle of the line written out.
    for blank in ["\r", "\r\n"] {
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":1,{blank}"b":[2 {blank}]}}}}"#);
        let msg = single(line.as_bytes());
        let out = written(&msg);
        assert_eq!(out.matches(['\r', '\n']).count(), 1, "{out:?}");
        assert!(out.ends_with('\n'));
        assert_eq!(msg.to_value()["result"], json!({"a": 1, "b": [2]}));
    }
}

#[test]
fn serde_json_private_tokens_are_ordinary_keys() {
    // serde_json's `Value` reads an object whose first key is this token as
    // the JSON text in that member; a peer sees an odd key and no name.
    // mcp-chain reads it as the peer does, in every layer.
    let quirk = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"$serde_json::private::RawValue":"{\"name\":\"secret\"}"}}"#;
    let msg = single(quirk.as_bytes());
    let params = msg.params().expect("params");
    assert_eq!(params.str_member("name"), Ok(None));
    let value = params.to_value().expect("readable");
    assert!(value.get("name").is_none(), "{value}");
}

#[test]
fn what_serde_json_cannot_read_is_forwarded_unread_and_refused_when_read() {
    // serde_json passes these over as text but refuses to read them: a
    // layer asking gets an error, never a null.
    for number in ["1e999", "-2.5E+400", &"9".repeat(400)] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"x":{number}}}}}}}"#
        );
        let msg = single(line.as_bytes());
        let params = msg.params().expect("params");
        assert!(params.is_untouched());
        assert!(params.to_value().is_err(), "{number}");
        assert!(params.member("arguments").is_err(), "{number}");
        // The name beside it reads as any reader reads it.
        assert_eq!(
            params.str_member("name").expect("readable").as_deref(),
            Some("t")
        );
        assert!(written(&msg).contains(number), "{number}");
    }
    // A lone surrogate escape is refused with the line, wherever it is, as
    // a whole parse refuses it.
    for at in [r#""name":"\ud800""#, r#""arguments":{"x":["\uDBFF"]}"#] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{{at}}}}}"#);
        assert!(Incoming::parse(line.as_bytes()).is_err(), "{line}");
    }
}

#[test]
fn jsonrpc_is_compared_as_text_whatever_its_spelling() {
    let escaped = br#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#;
    assert!(matches!(single(escaped), Message::Request(_)));
    for bad in [
        &br#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#[..],
        br#"{"jsonrpc":"2.0 ","id":1,"method":"ping"}"#,
        br#"{"jsonrpc":["2.0"],"id":1,"method":"ping"}"#,
        br#"{"id":1,"method":"ping"}"#,
    ] {
        let Ok(Incoming::Single(Err(invalid))) = Incoming::parse(bad) else {
            panic!("{} should be invalid", String::from_utf8_lossy(bad));
        };
        assert_eq!(invalid.id, Some(RequestId::from(1u64)));
    }
}

#[test]
fn json_len_is_what_write_line_writes_and_the_line_is_what_serde_json_writes() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"z":[1,"é\n"]}"#,
        r#"{"jsonrpc":"2.0","method":"n"}"#,
        r#"{"jsonrpc":"2.0","id":"s\"q","result":{"a":1}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m","data":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":2.5e3,"result":[]}"#,
    ];
    for line in lines {
        let msg = single(line.as_bytes());
        let out = written(&msg);
        assert_eq!(msg.json_len() + 1, out.len(), "{line}");
        let reference: Value = serde_json::from_str(line).expect("valid");
        assert_eq!(
            out.trim_end(),
            serde_json::to_string(&reference).expect("json")
        );
    }
}

#[test]
fn a_line_written_around_its_payload_is_the_line_once_it_is_put_back() {
    let text = "x".repeat(BIG_PAYLOAD_BYTES);
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"{text}"}},"after":1}}"#);
    let msg = single(line.as_bytes());
    let mut whole = Vec::new();
    msg.write_line(&mut whole);
    let mut out = b"before".to_vec();
    let (at, payload) = msg.write_line_around(&mut out).expect("big");
    out.splice(at..at, payload.as_bytes().iter().copied());
    assert_eq!(&out[b"before".len()..], &whole[..]);
    // A small one is written whole.
    let small = single(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    assert!(small.write_line_around(&mut Vec::new()).is_none());
    // A big one a layer changed is written apart too, from its value.
    let mut edited = single(line.as_bytes());
    if let Message::Response(r) = &mut edited {
        r.result.value_mut().expect("readable")["t"] = serde_json::json!(text.to_uppercase());
    }
    let mut whole = Vec::new();
    edited.write_line(&mut whole);
    let mut out = Vec::new();
    let (at, payload) = edited.write_line_around(&mut out).expect("big, edited");
    assert!(out.len() < 100, "the payload is not in the shared buffer");
    out.splice(at..at, payload.as_bytes().iter().copied());
    assert_eq!(out, whole);
}

#[test]
fn a_payload_left_in_its_line_reads_and_writes_as_a_copied_one() {
    let text = "y".repeat(BIG_PAYLOAD_BYTES);
    let line =
        format!(r#"xx{{"jsonrpc":"2.0","id":1,"result":{{"t":"{text}","isError":true}}}}yy"#);
    let buf = Arc::new(line.into_bytes());
    let at = 2..buf.len() - 2;
    let Ok(Incoming::Single(Ok(shared))) = Incoming::parse_shared(buf.clone(), at.clone()) else {
        panic!("a message");
    };
    let copied = single(&buf[at]);
    assert_eq!(written(&shared), written(&copied));
    let Message::Response(r) = &shared else {
        panic!("a response");
    };
    assert_eq!(r.result.member("isError"), Ok(Some(json!(true))));
}

#[test]
fn a_batch_is_read_element_by_element_and_its_answers_written_as_an_array() {
    let line = br#"[{"jsonrpc":"2.0","id":1,"method":"a","params":{"k":[1]}},[1],"s",{"id":2}]"#;
    let Ok(Incoming::Batch(items)) = Incoming::parse(line) else {
        panic!("a batch");
    };
    assert_eq!(items.len(), 4);
    assert!(items[0].is_ok() && items[1].is_err() && items[2].is_err());
    assert_eq!(
        items[3].as_ref().err().and_then(|e| e.id.clone()),
        Some(2.into())
    );
    let answers = [
        Message::response(1.into(), json!({})),
        Message::response(2.into(), json!([])),
    ];
    let mut out = Vec::new();
    Message::write_batch(&answers, &mut out);
    let read: Value = serde_json::from_slice(&out).expect("valid");
    assert_eq!(
        read,
        json!([{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":[]}])
    );
}

#[test]
fn the_id_of_an_answer_too_deep_or_too_long_to_parse_is_still_found() {
    let nest = |n| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    // Deeper than serde_json reads a line, in a payload or elsewhere: the
    // line is refused, and its id found all the same.
    let deep = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{}}}"#, nest(200));
    assert!(Incoming::parse(deep.as_bytes()).is_err());
    assert_eq!(response_id(deep.as_bytes()), Some(7.into()));
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":7,"error":{{"code":1,"message":"m","data":{}}}}}"#,
        nest(200)
    );
    assert!(Incoming::parse(deep.as_bytes()).is_err());
    assert_eq!(response_id(deep.as_bytes()), Some(7.into()));
    let cut = r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"text":"aaaa"#;
    assert_eq!(response_id(cut.as_bytes()), Some("a".into()));
    // Skipped values may be as deep as they like: an id after one counts.
    let late = format!(
        r#"{{"result":{},"id":1,"error":{{"data":{}}}}}"#,
        nest(200),
        nest(200)
    );
    assert_eq!(response_id(late.as_bytes()), Some(1.into()));
    // A request is not an answer; an id after the cut is lost.
    assert_eq!(response_id(br#"{"id":1,"method":"m","params":[[["#), None);
    assert_eq!(response_id(br#"{"result":{"text":"aaaa"#), None);
}
