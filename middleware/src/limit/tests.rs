use super::*;
use crate::payload::Payload;
use crate::{BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message};
use serde_json::{json, Value};
use tower::{service_fn, Layer, ServiceExt};

fn layer(config: &Value) -> LimitLayer {
    let config: LimitConfig = serde_json::from_value(config.clone()).expect("config parses");
    config.validate().expect("valid")
}

/// The answer `limit` (configured by `config`) gives to `method` with
/// `params`, when the server answers with `result`.
async fn answer(config: &Value, method: &str, params: Value, result: Value) -> Value {
    let server = service_fn(move |env: Envelope| {
        let result = result.clone();
        async move {
            let id = env.message.id().cloned().expect("a request");
            Ok::<_, BoxError>(Some(Message::response(id, result)))
        }
    });
    let request = Message::request(1, method, Some(params));
    let env = Envelope::new(Direction::ToServer, request);
    let out = layer(config)
        .layer(server)
        .oneshot(env)
        .await
        .expect("answered");
    out.expect("an answer").to_value()
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

#[tokio::test]
async fn a_result_within_its_limit_passes_as_it_came() {
    let out = answer(
        &json!({"max_result_bytes": 100}),
        "tools/call",
        json!({"name": "t"}),
        text_result("short"),
    )
    .await;
    assert_eq!(out["result"], text_result("short"));
}

#[tokio::test]
async fn a_result_over_its_limit_is_refused_naming_size_and_limit() {
    let big = "x".repeat(500);
    let out = answer(
        &json!({"max_result_bytes": 100}),
        "tools/call",
        json!({"name": "t"}),
        text_result(&big),
    )
    .await;
    let error = &out["error"];
    assert_eq!(error["code"], 403);
    let size = Payload::from(text_result(&big)).json_len();
    assert_eq!(
        error["data"],
        json!({"layer": "limit", "reason": "too_large", "size": size, "limit": 100})
    );
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains(&format!("{size} bytes")) && message.contains("100 bytes"),
        "{message}"
    );
}

#[tokio::test]
async fn truncate_cuts_the_longest_text_at_a_char_boundary_and_says_so() {
    let toml = &json!({"max_result_bytes": 300, "action": "truncate"});
    let long = "é".repeat(400); // 800 bytes, two to a character
    let result = json!({"content": [
        {"type": "text", "text": "keep me"},
        {"type": "text", "text": long},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    ]});
    let out = answer(toml, "tools/call", json!({"name": "t"}), result).await;
    let result = &out["result"];
    assert!(
        serde_json::to_vec(result).expect("json").len() <= 300,
        "{result}"
    );
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 3);
    assert_eq!(content[0]["text"], "keep me");
    let cut = content[1]["text"].as_str().expect("text");
    assert!(cut.starts_with("éé"), "{cut}");
    assert!(cut.contains("[mcp-chain: cut to fit 300 bytes;"), "{cut}");
    assert_eq!(cut.matches("[mcp-chain").count(), 1, "one notice: {cut}");
    assert_eq!(content[2]["type"], "image");
}

#[tokio::test]
async fn truncate_cuts_resource_text_and_escaped_text_to_fit() {
    let toml = &json!({"max_result_bytes": 400, "action": "truncate"});
    // Each quote and newline takes two bytes written.
    let escaped = "\"\n".repeat(400);
    let result =
        json!({"contents": [{"uri": "file:///a", "mimeType": "text/plain", "text": escaped}]});
    let out = answer(toml, "resources/read", json!({"uri": "file:///a"}), result).await;
    let written = serde_json::to_vec(&out["result"]).expect("json").len();
    assert!(written <= 400, "{written}: {}", out["result"]);
    assert_eq!(out["result"]["contents"][0]["uri"], "file:///a");
}

#[tokio::test]
async fn text_full_of_escapes_keeps_as_much_as_fits() {
    let toml = &json!({"max_result_bytes": 1000, "action": "truncate"});
    // Six bytes written for each character.
    let escapes = "\u{1}".repeat(2000);
    let out = answer(
        toml,
        "tools/call",
        json!({"name": "t"}),
        text_result(&escapes),
    )
    .await;
    let written = serde_json::to_vec(&out["result"]).expect("json").len();
    assert!(written <= 1000, "{written}");
    let kept = out["result"]["content"][0]["text"].as_str().expect("text");
    let kept = kept.chars().filter(|c| *c == '\u{1}').count();
    // Room for the notice and the envelope aside, nearly all of it is text.
    assert!(
        kept * 6 >= 1000 - 200,
        "kept {kept} characters, {written} bytes"
    );
}

#[tokio::test]
async fn an_error_answer_is_held_to_the_limit_too() {
    let toml = &json!({"max_result_bytes": 300});
    let server = service_fn(|env: Envelope| async move {
        let id = env.message.id().cloned().expect("a request");
        let error = ErrorObject::new(ErrorCode(-32000), "é".repeat(5000))
            .with_data(json!({"dump": "x".repeat(100_000)}));
        Ok::<_, BoxError>(Some(Message::error(Some(id), error)))
    });
    let request = Message::request(1, "tools/call", Some(json!({"name": "t"})));
    let out = layer(toml)
        .layer(server)
        .oneshot(Envelope::new(Direction::ToServer, request))
        .await
        .expect("answered")
        .expect("an answer")
        .to_value();
    let error = &out["error"];
    assert_eq!(error["code"], -32000, "the server's code stays");
    assert_eq!(error["data"]["reason"], "too_large");
    let message = error["message"].as_str().expect("message");
    assert!(
        message.starts_with("éé") && message.contains("over the limit of 300"),
        "{message}"
    );
    assert!(
        serde_json::to_vec(error).expect("json").len() < 500,
        "{error}"
    );
    // A small error passes as it came.
    let small = answer(
        toml,
        "tools/call",
        json!({"name": "t"}),
        json!({"content": []}),
    )
    .await;
    assert!(small.get("result").is_some());
}

#[tokio::test]
async fn what_cannot_be_cut_is_refused_even_under_truncate() {
    let toml = &json!({"max_result_bytes": 100, "action": "truncate"});
    let big = "x".repeat(500);
    let structured =
        json!({"content": [{"type": "text", "text": big}], "structuredContent": {"text": big}});
    let out = answer(toml, "tools/call", json!({"name": "t"}), structured).await;
    assert_eq!(out["error"]["data"]["reason"], "too_large");
    assert!(out["error"]["message"]
        .as_str()
        .expect("message")
        .contains("structuredContent"));
    let blob = json!({"contents": [{"uri": "file:///b", "blob": "A".repeat(500)}]});
    let out = answer(toml, "resources/read", json!({"uri": "file:///b"}), blob).await;
    assert_eq!(out["error"]["data"]["reason"], "too_large");
    let prompt = json!({"messages": [{"role": "user", "content": {"type": "text", "text": big}}]});
    let out = answer(toml, "prompts/get", json!({"name": "p"}), prompt).await;
    assert_eq!(out["error"]["data"]["reason"], "too_large");
}

#[tokio::test]
async fn the_first_matching_tool_then_method_then_default_decides() {
    let toml = &json!({
        "max_result_bytes": 50,
        "tools": {"big_*": "1KiB", "free": "none"},
        "methods": {"resources/read": 2000}
    });
    let text = "y".repeat(600);
    let call = |name: &str| json!({"name": name});
    assert!(
        answer(toml, "tools/call", call("big_one"), text_result(&text))
            .await
            .get("result")
            .is_some()
    );
    assert!(answer(
        toml,
        "tools/call",
        call("free"),
        text_result(&"z".repeat(5000))
    )
    .await
    .get("result")
    .is_some());
    assert!(
        answer(toml, "tools/call", call("other"), text_result(&text))
            .await
            .get("error")
            .is_some()
    );
    let resource = json!({"contents": [{"uri": "u", "text": text}]});
    assert!(
        answer(toml, "resources/read", json!({"uri": "u"}), resource)
            .await
            .get("result")
            .is_some()
    );
    // A call whose tool cannot be read is held to the default, not to none.
    let unnamed = answer(toml, "tools/call", json!({"name": 7}), text_result(&text)).await;
    assert_eq!(unnamed["error"]["data"]["reason"], "too_large");
}

#[tokio::test]
async fn the_default_is_for_content_not_for_the_handshake_or_listings() {
    let config = &json!({"max_result_bytes": 50});
    let big = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "x".repeat(100)}});
    assert!(answer(config, "initialize", json!({}), big)
        .await
        .get("result")
        .is_some());
    let tools = json!({"tools": [{"name": "x".repeat(100)}]});
    assert!(answer(config, "tools/list", json!({}), tools.clone())
        .await
        .get("result")
        .is_some());
    // Named under methods, a listing is held to it.
    let config = &json!({"max_result_bytes": 50, "methods": {"tools/list": 50}});
    assert!(answer(config, "tools/list", json!({}), tools)
        .await
        .get("error")
        .is_some());
}

#[tokio::test]
async fn listings_keep_their_first_items() {
    let toml = &json!({"max_list_items": 2});
    let tools = json!({"tools": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "nextCursor": "n"});
    let out = answer(toml, "tools/list", json!({}), tools).await;
    assert_eq!(
        out["result"],
        json!({"tools": [{"name": "a"}, {"name": "b"}], "nextCursor": "n"})
    );
    let unreadable = answer(
        toml,
        "prompts/list",
        json!({}),
        json!({"prompts": "not a list"}),
    )
    .await;
    assert_eq!(unreadable["error"]["data"]["reason"], "unreadable");
}

#[test]
fn sizes_and_settings_are_checked() {
    for (config, says) in [
        (json!({}), "nothing to limit"),
        (json!({"max_result_bytes": 0}), "0 bytes"),
        (json!({"max_result_bytes": "12 parsecs"}), "unknown unit"),
        (json!({"max_result_bytes": "lots"}), "not a size"),
        (json!({"max_result_bytes": 10, "action": "shrug"}), "action"),
        (json!({"max_list_items": 0}), "empty every listing"),
        (json!({"tools": {"re:(": 10}}), "tools.\"re:(\""),
    ] {
        let parsed: LimitConfig = serde_json::from_value(config.clone()).expect("config parses");
        let error = parsed.validate().expect_err("refused").to_string();
        assert!(error.contains(says), "{config}: {error}");
    }
    for (text, bytes) in [
        ("512KiB", 524_288),
        ("1MiB", 1_048_576),
        ("2MB", 2_000_000),
        ("100", 100),
    ] {
        assert_eq!(Size::Text(text.into()).bytes(), Ok(Some(bytes)), "{text}");
    }
    assert_eq!(Size::Text("none".into()).bytes(), Ok(None));
    for (size, why) in [
        (Size::Bytes(0), BadSize::Zero),
        (Size::Text("0KiB".into()), BadSize::Zero),
        (Size::Text("lots".into()), BadSize::NotASize("lots".into())),
        (
            Size::Text("5 parsecs".into()),
            BadSize::UnknownUnit {
                text: "5 parsecs".into(),
                unit: "parsecs".into(),
            },
        ),
        (
            Size::Text("99999999999999GiB".into()),
            BadSize::TooBig("99999999999999GiB".into()),
        ),
    ] {
        assert_eq!(size.bytes(), Err(why), "{size:?}");
    }
}
