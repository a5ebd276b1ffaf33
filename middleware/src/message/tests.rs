use super::*;
use serde_json::json;

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
fn duplicate_keys_keep_the_last_and_we_forward_what_we_parsed() {
    let Ok(Incoming::Single(Ok(msg))) = Incoming::parse(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","name":"evil"}}"#,
    ) else {
        panic!("expected a request");
    };
    let name = msg.params().and_then(|p| p.get("name")).cloned();
    assert_eq!(name, Some(json!("evil")));
    let mut out = Vec::new();
    msg.write_line(&mut out);
    let text = String::from_utf8(out).expect("utf-8");
    assert_eq!(text.matches("\"name\"").count(), 1, "{text}");
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
    assert!(
        written(&msg).contains(r#""result":{"b": 1,  "a":[2.50, "x"]}"#),
        "{}",
        written(&msg)
    );
}

#[test]
fn unread_params_are_forwarded_as_sent() {
    let msg = single(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"z": [1, 2],"a":1}}"#);
    if let Message::Request(r) = &msg {
        assert!(r.params.as_ref().is_some_and(Payload::is_untouched));
    }
    assert!(
        written(&msg).contains(r#""params":{"z": [1, 2],"a":1}"#),
        "{}",
        written(&msg)
    );
}

#[test]
fn a_read_payload_is_written_as_it_was_read() {
    // Once a layer has looked, the server gets exactly what it saw: one
    // "name", the last.
    let mut msg = single(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","name":"evil"}}"#,
    );
    assert_eq!(
        msg.params().and_then(|p| p.get("name")),
        Some(&json!("evil"))
    );
    let out = written(&msg);
    assert_eq!(out.matches("\"name\"").count(), 1, "{out}");
    if let Message::Request(r) = &mut msg {
        if let Some(p) = r.params.as_deref_mut() {
            p["name"] = json!("changed");
        }
    }
    assert!(written(&msg).contains(r#""name":"changed""#));
}

#[test]
fn lines_the_raw_path_cannot_vouch_for_are_parsed_whole() {
    // A lone surrogate escape: rejected as before, not forwarded raw.
    assert!(
        Incoming::parse(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"\ud800"}}"#)
            .is_err()
    );
    // Also deep inside a long string, past an escaped quote.
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"x":"{}\"{}\ud800"}}}}"#,
        "a".repeat(40),
        "b".repeat(40)
    );
    assert!(Incoming::parse(long.as_bytes()).is_err());
    // A valid pair still passes (through the parsed path).
    let msg = single(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"\ud83d\ude00"}}"#);
    assert_eq!(msg.params().and_then(|p| p.get("x")), Some(&json!("😀")));
    // Too deep inside a payload: the same error as a whole parse gives.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}1{}}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    assert!(Incoming::parse(deep.as_bytes()).is_err());
    // Many brackets but shallow (some inside a string, behind an escaped
    // quote), and an escaped backslash before "ud": the walk clears them,
    // the raw path stays.
    let wide = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":[{}],"s":"{}\"{}","p":"C:\\udev"}}}}"#,
        vec!["[]"; 100].join(","),
        "x".repeat(30),
        "[".repeat(130)
    );
    let Incoming::Single(Ok(msg)) = Incoming::parse(wide.as_bytes()).expect("parses") else {
        panic!("a request");
    };
    let Message::Request(req) = &msg else {
        panic!("a request");
    };
    assert!(req.params.as_ref().is_some_and(Payload::is_untouched));
    assert_eq!(
        msg.params().and_then(|p| p.get("p")),
        Some(&json!("C:\\udev"))
    );
}

#[test]
fn a_line_break_between_tokens_is_not_copied_into_the_line_we_write() {
    // Found by fuzzing: CR and LF are blanks to JSON; a payload kept raw
    // would carry one into the middle of the line written out.
    for blank in ["\r", "\n", "\r\n"] {
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":1,{blank}"b":[2 {blank}]}}}}"#);
        let msg = single(line.as_bytes());
        let out = written(&msg);
        assert_eq!(out.matches(['\r', '\n']).count(), 1, "{out:?}");
        assert!(out.ends_with("\n"));
        assert_eq!(msg.to_value()["result"], json!({"a": 1, "b": [2]}));
    }
}

#[test]
fn serde_json_private_tokens_are_read_as_serde_json_reads_them() {
    // As the first key of an object, `$serde_json::private::RawValue` makes
    // serde_json read the member's value as JSON text for the whole object,
    // or refuse the object. Taken raw, a layer reading the payload would
    // have got `null`. The line is left to serde_json: the message is the
    // one serde_json reads, or the line gets -32700 as serde_json refuses it.
    let quirk = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"$serde_json::private::RawValue":"{\"name\":\"secret\"}"}}"#;
    let value: Value = serde_json::from_str(quirk).expect("serde_json reads it");
    let read = single(quirk.as_bytes());
    assert_eq!(Message::from_value(value).as_ref(), Ok(&read));
    assert_eq!(
        read.params().and_then(|p| p.get("name")),
        Some(&json!("secret"))
    );
    for refused in [
        r#"{"$serde_json::private::RawValue":32}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"\u0024serde_json::private::RawValue":1}}}"#,
    ] {
        assert!(serde_json::from_str::<Value>(refused).is_err(), "{refused}");
        assert!(Incoming::parse(refused.as_bytes()).is_err(), "{refused}");
    }
}

#[test]
fn numbers_beyond_f64_are_refused_not_forwarded_unread() {
    // serde_json refuses them when it reads the value; a payload skipped
    // raw and read later by a layer would be unreadable there (a filter
    // would judge a tools/call without its name). Refused like before.
    for number in [
        "1e999",
        "-2.5E+400",
        &"9".repeat(400),
        "54775777777751e4775",
    ] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"secret","arguments":{{"x":{number}}}}}}}"#
        );
        assert!(Incoming::parse(line.as_bytes()).is_err(), "{number}");
    }
    // In range, or only spelled like a big number: the raw path.
    for number in ["1e300", "1e-400", "-0.0e0", &"9".repeat(299), r#""1e999""#] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"x":{number}}}}}"#);
        let Message::Request(req) = single(line.as_bytes()) else {
            panic!("a request");
        };
        assert!(
            req.params.as_ref().is_some_and(Payload::is_untouched),
            "{number}"
        );
        assert!(
            req.params.as_deref().is_some_and(|p| p["x"] != Value::Null),
            "{number}"
        );
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
            panic!(
                "{} should be an invalid request",
                String::from_utf8_lossy(bad)
            );
        };
        assert_eq!(invalid.id, Some(RequestId::from(1u64)));
    }
}

#[test]
fn one_member_is_read_without_parsing_the_rest() {
    let msg = single(
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"big"}],"isError":false,"isError":true}}"#,
    );
    let Message::Response(resp) = &msg else {
        panic!("a response");
    };
    // The last of duplicate keys, as a whole parse gives.
    assert_eq!(resp.result.member("isError").as_deref(), Some(&json!(true)));
    assert_eq!(resp.result.member("missing"), None);
    assert!(
        resp.result.is_untouched(),
        "member() must not parse the whole"
    );
    // Not an object: no members.
    let list = single(br#"{"jsonrpc":"2.0","id":2,"result":[1,2]}"#);
    let Message::Response(list) = &list else {
        panic!("a response");
    };
    assert_eq!(list.result.member("0"), None);
    // A key spelled with an escape is still that key; a name that appears
    // only inside a value is not a member.
    for (line, expected) in [
        (
            br#"{"jsonrpc":"2.0","id":3,"result":{"is\u0045rror":true}}"#.as_slice(),
            Some(json!(true)),
        ),
        (
            br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"isError"}]}}"#,
            None,
        ),
        (
            br#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"isError":true}]}}"#,
            None,
        ),
    ] {
        let Message::Response(resp) = single(line) else {
            panic!("a response");
        };
        assert_eq!(
            resp.result
                .member("isError")
                .map(std::borrow::Cow::into_owned),
            expected
        );
    }
    // Once parsed, read from the value.
    let parsed = Payload::from(json!({"isError": true}));
    assert_eq!(parsed.member("isError").as_deref(), Some(&json!(true)));
}

/// The params of the request on `line`.
fn params_of(line: &str) -> Payload {
    match single(line.as_bytes()) {
        Message::Request(r) => r.params.expect("params"),
        other => panic!("a request, got {other:?}"),
    }
}

#[test]
fn a_string_member_is_read_from_the_bytes_when_they_say_it_plainly() {
    let call = |params: &str| {
        params_of(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#
        ))
    };
    let many: String = (0..20).map(|n| format!(r#""k{n}":{n},"#)).collect();
    // (params, the name, whether reading it left the bytes unread)
    for (params, name, unread) in [
        (
            r#"{"name":"read", "arguments": {"path":"/a"}}"#.to_owned(),
            Some("read"),
            true,
        ),
        (
            r#"{"arguments":{"name":"inner"},"name":"outer"}"#.to_owned(),
            Some("outer"),
            true,
        ),
        (r#"{"name":5}"#.to_owned(), None, true),
        (r#"{"arguments":{}}"#.to_owned(), None, true),
        (r#"[{"name":"x"}]"#.to_owned(), None, true),
        // What only a parse can settle, and what the peer then receives.
        (
            r#"{"name":"safe","name":"evil"}"#.to_owned(),
            Some("evil"),
            false,
        ),
        (
            r#"{"name":"safe","name":"evil"}"#.to_owned(),
            Some("evil"),
            false,
        ),
        (
            r#"{"name":"tab\there"}"#.to_owned(),
            Some("tab\there"),
            false,
        ),
        (format!(r#"{{{many}"name":"last"}}"#), Some("last"), false),
        (
            r#"{"na\u006de":"safe","name":"evil"}"#.to_owned(),
            Some("evil"),
            false,
        ),
        (
            r#"{"name":"safe","arguments":{},"na\u006de":"evil"}"#.to_owned(),
            Some("evil"),
            false,
        ),
        (
            r#"{"uri":"file:///a","name":"n"}"#.to_owned(),
            Some("n"),
            true,
        ),
    ] {
        let payload = call(&params);
        // What the line's outline noted gives what a look at the text does.
        let fresh = Payload::raw(raw_value(&params));
        assert_eq!(fresh.str_member("name"), name, "{params}");
        assert_eq!(payload.str_member("name"), name, "{params}");
        assert_eq!(payload.is_untouched(), unread, "{params}");
        // Again, from where the first read found it.
        assert_eq!(payload.str_member("name"), name, "{params}");
    }
    // Another member than the one last found is looked for again.
    let payload = call(r#"{"uri" : "u", "name":"n", "nam":"e"}"#);
    for (key, value) in [("name", "n"), ("uri", "u"), ("nam", "e"), ("name", "n")] {
        assert_eq!(payload.str_member(key), Some(value));
    }
    assert_eq!(payload.str_member("na"), None);
    assert!(payload.is_untouched());
    let parsed = Payload::from(json!({"name": "x"}));
    assert_eq!(parsed.str_member("name"), Some("x"));
}

#[test]
fn a_string_member_set_in_the_bytes_leaves_the_rest_as_sent() {
    let line = |params: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#)
    };
    for (params, value, expected) in [
        (
            r#"{"name" : "b_read" , "arguments": {"path": "/a"}}"#,
            "read",
            r#"{"name" : "read" , "arguments": {"path": "/a"}}"#,
        ),
        (r#"{"name":"x"}"#, r#"q"u\o"#, r#"{"name":"q\"u\\o"}"#),
        // Parsed first: one name, the last, as the layers read it.
        (r#"{"name":"a","name":"b"}"#, "c", r#"{"name":"c"}"#),
    ] {
        let mut payload = params_of(&line(params));
        // Set twice: the second finds the member where the first wrote it.
        payload.set_str_member("name", "between");
        assert_eq!(payload.str_member("name"), Some("between"), "{params}");
        payload.set_str_member("name", value);
        assert_eq!(payload.str_member("name"), Some(value), "{params}");
        let mut msg = single(line(params).as_bytes());
        if let Message::Request(r) = &mut msg {
            r.params = Some(payload);
        }
        assert_eq!(written(&msg), format!("{}\n", line(expected)), "{params}");
        // What is written is what a parse of it gives.
        assert_eq!(single(line(expected).as_bytes()).params(), msg.params());
    }
}

/// The result of `line`, as received (raw) and as already parsed.
fn both_results(line: &str) -> (Payload, Payload) {
    let Message::Response(resp) = single(line.as_bytes()) else {
        panic!("a response");
    };
    let parsed = Payload::from(resp.result.clone().into_value());
    (resp.result, parsed)
}

/// What a rewrite and a filter do to a list: rename with a prefix, describe
/// one item anew, drop what is named `*secret*`.
fn rename(item: &mut Item<'_>) -> bool {
    let Some(name) = item.str_member("name").map(|n| n.into_owned()) else {
        return true;
    };
    item.insert("name", format!("b_{name}").into());
    if name == "two" {
        item.insert("description", "new".into());
        if let Some(Value::Object(props)) = item
            .get_mut("inputSchema")
            .and_then(|s| s.get_mut("properties"))
        {
            props.remove("hidden");
        }
    }
    true
}

fn drop_secret(item: &mut Item<'_>) -> bool {
    !item
        .str_member("name")
        .unwrap_or_default()
        .contains("secret")
}

#[test]
fn list_items_are_edited_as_a_parsed_value_would_be() {
    // Blanks, escapes in keys and strings, nesting, items that are not
    // objects, items without a name, a name twice in an item, members
    // around the list.
    let line = r#"{"jsonrpc":"2.0","id":1,"result":{ "_meta" : {"a":[1,{"b":"]"}]},
        "tools" : [ {"name":"one","x":[1, 2]} , {"na\u006de":"two","description":"old",
        "inputSchema":{"type":"object","properties":{"hidden":{},"kept":{"d":"\"}"}}}},
        {"name":"my_secret"}, 42, "text", null, {"title":"nameless"},
        {"name":"dup","name":"twice_secret"}, {"name":"t\u00e9l\u00e9"} ],
        "nextCursor":"c"}}"#
        .replace('\n', " ");
    let (mut raw, mut parsed) = both_results(&line);
    for payload in [&mut raw, &mut parsed] {
        payload.edit_items("tools", rename);
        payload.edit_items("tools", drop_secret);
    }
    assert!(!parsed.is_untouched());
    let expected = json!({"_meta": {"a": [1, {"b": "]"}]}, "tools": [
        {"name": "b_one", "x": [1, 2]},
        {"name": "b_two", "description": "new",
            "inputSchema": {"type": "object", "properties": {"kept": {"d": "\"}"}}}},
        42, "text", null, {"title": "nameless"},
        {"name": "b_télé"}], "nextCursor": "c"});
    assert_eq!(*parsed, expected);
    let text = serde_json::to_string(&raw).expect("serializes");
    assert_eq!(
        serde_json::from_str::<Value>(&text).expect("valid JSON"),
        expected
    );
    // Everything the layers did not touch is the sender's text, down to the
    // blanks between items kept side by side.
    assert!(
        text.starts_with(r#"{"_meta":{"a":[1,{"b":"]"}]},"tools":[{"name":"b_one","x":[1, 2]}"#),
        "{text}"
    );
    assert!(
        text.ends_with(
            r#",42, "text", null, {"title":"nameless"},{"name":"b_télé"}],"nextCursor":"c"}"#
        ),
        "{text}"
    );
}

#[test]
fn a_long_list_is_edited_from_its_outline_as_a_parsed_value_would_be() {
    // The same hostile items as above, enough of them for the payload to
    // keep the outline its line's check recorded.
    let items = r#"[{"name":"inner"}], {"name":"one","x":[1, 2]} , {"na\u006de":"two",
        "description":"old",
        "inputSchema":{"type":"object","properties":{"hidden":{},"kept":{"d":"\"}"}}}},
        {"name":"my_secret"}, 42, "text", null, {"title":"nameless"},
        {"name":"dup","name":"twice_secret"}, {"name":"t\u00e9l\u00e9","x" : 1 ,"y":2}"#
        .replace('\n', " ");
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{ "_meta" : {{"a":[1,{{"b":"]"}}]}},
        "tools" : [ {items}, {items}, {items} ], "nextCursor":"c"}}}}"#
    )
    .replace('\n', " ");
    let (mut raw, mut parsed) = both_results(&line);
    assert!(raw.is_outlined(), "a list of 30 items keeps its outline");
    for payload in [&mut raw, &mut parsed] {
        payload.edit_items("tools", rename);
        payload.edit_items("tools", drop_secret);
    }
    let text = serde_json::to_string(&raw).expect("serializes");
    assert_eq!(
        serde_json::from_str::<Value>(&text).expect("valid JSON"),
        *parsed
    );
    assert_eq!(parsed["tools"].as_array().map(Vec::len), Some(24));
}

#[test]
fn a_long_list_in_a_batch_is_edited_as_a_parsed_value_would_be() {
    // In a batch a result is one level deeper than the outline goes for
    // a single message: its items' members must still be found.
    let tools: Vec<String> = (0..20)
        .map(|i| format!(r#"{{"name":"t{i}","d":1}},{{"name":"my_secret_{i}"}}"#))
        .collect();
    let line = format!(
        r#"[{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}]}}}},{{"jsonrpc":"2.0","id":2,"result":{{}}}}]"#,
        tools.join(",")
    );
    let Ok(Incoming::Batch(messages)) = Incoming::parse(line.as_bytes()) else {
        panic!("a batch");
    };
    let Some(Ok(Message::Response(resp))) = messages.into_iter().next() else {
        panic!("a response");
    };
    let mut raw = resp.result;
    let mut parsed = Payload::from(raw.clone().into_value());
    for payload in [&mut raw, &mut parsed] {
        payload.edit_items("tools", rename);
        payload.edit_items("tools", drop_secret);
    }
    let text = serde_json::to_string(&raw).expect("serializes");
    assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON"), *parsed);
    assert_eq!(parsed["tools"].as_array().map(Vec::len), Some(20));
    assert_eq!(parsed["tools"][0]["name"], "b_t0");
}

#[test]
fn a_list_nobody_changed_stays_the_senders_bytes() {
    let line = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[ {"name":"a" }, {"name":"b"}]}}"#;
    let (mut raw, _) = both_results(line);
    raw.edit_items("tools", |_| true);
    raw.edit_items("prompts", |_| false);
    assert!(raw.is_untouched());
    let msg = Message::Response(Response {
        id: 1.into(),
        result: raw,
        extra: Map::new(),
    });
    assert!(written(&msg).contains(r#"[ {"name":"a" }, {"name":"b"}]"#));
}

#[test]
fn a_result_with_a_key_twice_is_edited_as_parsed() {
    // serde_json keeps the last "tools": so must the edit.
    let line = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x"}],"tools":[{"name":"y"},{"name":"z_secret"}]}}"#;
    let (mut raw, _) = both_results(line);
    raw.edit_items("tools", rename);
    raw.edit_items("tools", drop_secret);
    assert_eq!(*raw, json!({"tools": [{"name": "b_y"}]}));
}

#[test]
fn a_list_that_is_not_an_array_is_left_alone() {
    for result in [
        r#"{"tools":{"name":"a"}}"#,
        r#"{"tools":"a"}"#,
        r#"[{"name":"a"}]"#,
        "7",
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
        let (mut raw, _) = both_results(&line);
        raw.edit_items("tools", |_| false);
        assert!(raw.is_untouched(), "{result}");
        assert_eq!(serde_json::to_string(&raw).expect("serializes"), result);
    }
}

#[test]
fn a_second_edit_reads_what_the_first_wrote() {
    // The second edit uses the positions the first recorded; it must see
    // the new names, and an edit after a drop must still line up.
    let tools: Vec<Value> = (0..50)
        .map(|i| json!({"name": format!("t{i}"), "description": "d \"q\" \\ é", "n": i}))
        .collect();
    let line =
        serde_json::to_string(&json!({"jsonrpc":"2.0","id":1,"result":{"tools":tools,"x":1}}))
            .expect("serializes");
    let (mut raw, mut parsed) = both_results(&line);
    for payload in [&mut raw, &mut parsed] {
        // Some items changed, some dropped, the rest copied: those move.
        payload.edit_items("tools", |item| {
            let name = item
                .str_member("name")
                .map(|n| n.into_owned())
                .unwrap_or_default();
            if name.ends_with('0') {
                item.insert("seen", 1.into());
            }
            !name.ends_with('3')
        });
        payload.edit_items("tools", rename);
        payload.edit_items("tools", |item| {
            item.str_member("name")
                .is_some_and(|n| n.starts_with("b_t"))
        });
        payload.edit_items("tools", |item| {
            item.insert(
                "name",
                item.str_member("name").map(|n| n.to_uppercase()).into(),
            );
            true
        });
    }
    assert_eq!(*raw, *parsed);
    assert_eq!(raw["tools"].as_array().map(Vec::len), Some(45));
    assert_eq!(
        raw["tools"][0],
        json!({"name": "B_T0", "description": "d \"q\" \\ é", "n": 0, "seen": 1})
    );
    assert_eq!(
        raw["tools"][1],
        json!({"name": "B_T1", "description": "d \"q\" \\ é", "n": 1})
    );
}
#[test]
fn names_spliced_in_and_passes_that_change_nothing_leave_the_list_indexed() {
    // Each pass reads the list through what the one before it left: the
    // index a keep-everything pass found, the index a splice shifted.
    let tools: Vec<Value> = (0..40)
        .map(|i| json!({"description": "d \"q\" é", "name": format!("t{i}"), "n": [i]}))
        .collect();
    let line =
        serde_json::to_string(&json!({"jsonrpc":"2.0","id":1,"result":{"x":1,"tools":tools}}))
            .expect("serializes");
    let (mut raw, mut parsed) = both_results(&line);
    let mut seen = [Vec::new(), Vec::new()];
    for (payload, seen) in [&mut raw, &mut parsed].into_iter().zip(&mut seen) {
        let spliced = payload.prefix_items("tools", "name", "b_", |_| {});
        if !spliced {
            payload.edit_items("tools", rename);
        }
        payload.edit_items("tools", |item| {
            seen.extend(item.str_member("name").map(|n| n.into_owned()));
            true
        });
        payload.edit_items("tools", |item| {
            item.str_member("name").is_some_and(|n| !n.ends_with('7'))
        });
        if !payload.prefix_items("tools", "name", "c_", |_| {}) {
            payload.edit_items("tools", |item| {
                let name = item.str_member("name").map(|n| format!("c_{n}"));
                item.insert("name", name.into());
                true
            });
        }
        payload.edit_items("tools", |item| {
            seen.extend(item.str_member("name").map(|n| n.into_owned()));
            true
        });
    }
    assert!(raw.is_untouched(), "the raw path stayed raw");
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0].len(), 40 + 36);
    assert_eq!(*raw, *parsed);
    assert_eq!(
        raw["tools"][7],
        json!({"description": "d \"q\" é", "name": "c_b_t8", "n": [8]})
    );
}

#[test]
fn messages_stay_small() {
    // Every message crosses the relay inside futures that are moved (and
    // copied) at each step: a byte here is paid many times per message. A
    // payload keeps its parsed value boxed, and where it lies in a shared
    // line; an error answer keeps its error boxed.
    assert!(
        std::mem::size_of::<Payload>() <= 56,
        "{}",
        std::mem::size_of::<Payload>()
    );
    assert!(
        std::mem::size_of::<Message>() <= 184,
        "{}",
        std::mem::size_of::<Message>()
    );
}

/// Messages of every shape `write_line` meets: ids of each kind, escaped
/// methods and ids, with and without payloads, extra members, errors, and
/// input with blanks.
const SHAPES: [&str; 15] = [
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\"b","arguments":{}}}"#,
    r#"{"jsonrpc":"2.0","id":"s\u00e9\"q","method":"m\u00e9"}"#,
    r#"{"jsonrpc":"2.0","id":"s\t","method":"m\n"}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":-0,"result":{"content":[{"type":"text","text":"é"}]}}"#,
    r#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":9007199254740993,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":-7,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":1.5,"method":"m","params":[1]}"#,
    r#"{"jsonrpc":"2.0","id":1e2,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}"#,
    r#"{"jsonrpc":"2.0","id":3,"result":[1,2],"_meta":{"x":1}}"#,
    r#" { "jsonrpc" : "2.0" , "id" : 4 , "method" : "m" , "params" : { "a" : [ 1 , 2 ] } } "#,
];

#[test]
fn json_len_is_what_write_line_writes() {
    let lines = SHAPES;
    for line in lines {
        let mut msg = single(line.as_bytes());
        for _ in 0..2 {
            let mut written = Vec::new();
            msg.write_line(&mut written);
            assert_eq!(msg.json_len(), written.len() - 1, "{line}");
            // Read (parsed) payloads are counted as they will be written.
            if let Message::Request(Request {
                params: Some(p), ..
            })
            | Message::Notification(Notification {
                params: Some(p), ..
            })
            | Message::Response(Response { result: p, .. }) = &mut msg
            {
                p.as_object_mut();
            }
        }
    }
}

#[test]
fn the_usual_shapes_are_written_by_hand_as_serde_json_writes_them() {
    let lines = SHAPES;
    for line in lines {
        let msg = single(line.as_bytes());
        let mut written = Vec::new();
        msg.write_line(&mut written);
        let mut expected = serde_json::to_vec(&msg).expect("a message");
        expected.push(b'\n');
        assert_eq!(
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&expected),
            "{line}"
        );
    }
}

#[test]
fn a_line_written_around_its_payload_is_the_line_once_it_is_put_back() {
    for line in [
        r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a"}]}}"#,
        r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"extra":true}"#,
    ] {
        let read = || match Incoming::parse(line.as_bytes()) {
            Ok(Incoming::Single(Ok(msg))) => msg,
            other => panic!("{line}: {other:?}"),
        };
        let mut whole = Vec::new();
        read().write_line(&mut whole);
        // Handed over whenever there is a payload as it was sent, and
        // only then; below the size asked for, written in place.
        let mut around = Vec::new();
        let handed = read().write_line_around(&mut around, 0);
        let plain = !line.contains("error") && !line.contains("extra") && !line.contains("ping");
        assert_eq!(handed.is_some(), plain, "{line}");
        if let Some((at, text)) = handed {
            assert_eq!(
                &text[..],
                &line[line.len() - 1 - text.len()..line.len() - 1]
            );
            around.splice(at..at, text.bytes());
        }
        assert_eq!(around, whole, "{line}");
        let mut small = Vec::new();
        assert!(read().write_line_around(&mut small, line.len()).is_none());
        assert_eq!(small, whole, "{line}");
    }
}

#[test]
fn a_payload_left_in_its_line_reads_and_writes_as_a_copied_one() {
    let tools: Vec<Value> = (0..50)
        .map(|i| json!({"name": format!("t{i}"), "description": "d \"q\" é"}))
        .collect();
    let line = serde_json::to_string(&json!({"jsonrpc":"2.0","id":3,"result":{"tools":tools}}))
        .expect("serializes");
    // The line sits in a bigger buffer, between others.
    let before = "{\"before\":1}\n";
    let buf = format!("{before}{line}\n{{\"after\":2}}").into_bytes();
    let at = before.len()..before.len() + line.len();
    let read = |big| match Incoming::parse_shared(std::sync::Arc::new(buf.clone()), at.clone(), big)
    {
        Ok(Incoming::Single(Ok(msg))) => msg,
        other => panic!("{other:?}"),
    };
    let copied = || match Incoming::parse(line.as_bytes()) {
        Ok(Incoming::Single(Ok(msg))) => msg,
        other => panic!("{other:?}"),
    };
    let written = |msg: &Message| {
        let mut out = Vec::new();
        msg.write_line(&mut out);
        out
    };
    let prefixed = |mut msg: Message| {
        let Message::Response(resp) = &mut msg else {
            panic!("a response");
        };
        assert!(resp.result.prefix_items("tools", "name", "p_", |_| {}));
        assert!(resp.result.is_untouched(), "edited as text");
        msg
    };
    for big in [0, line.len()] {
        assert_eq!(written(&read(big)), written(&copied()));
        let serialized = |msg: Message| serde_json::to_string(&msg).expect("serializes");
        assert_eq!(serialized(read(big)), serialized(copied()));
        // Edited (as text), it is the copied one edited alike.
        let (shared, own) = (prefixed(read(big)), prefixed(copied()));
        assert_eq!(written(&shared), written(&own));
        assert_eq!(shared, own);
        assert_eq!(read(big), copied());
    }
}
