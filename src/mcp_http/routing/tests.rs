//! Both directions of the routing headers: computed for a message that
//! leaves, checked for one that arrives.

use super::*;
use serde_json::{json, Value};

fn check(headers: &HeaderMap, message: &Message, marked: &ToolParams) -> Option<Mismatch> {
    Routing::check(headers, message, marked).err()
}

fn computed(message: Message) -> Vec<(String, String)> {
    Routing::of(&message, &ToolParams::default())
        .headers
        .into_iter()
        .map(|(n, v)| (n.to_string(), v.to_str().expect("ascii").to_owned()))
        .collect()
}

#[test]
fn a_call_names_its_method_and_tool() {
    let call = Message::request(
        1,
        "tools/call",
        Some(json!({"name": "get_weather", "arguments": {}})),
    );
    assert_eq!(
        computed(call),
        [
            ("mcp-method".into(), "tools/call".into()),
            ("mcp-name".into(), "get_weather".into())
        ]
    );
    let read = Message::request(2, "resources/read", Some(json!({"uri": "file:///a b"})));
    assert_eq!(computed(read)[1].1, "file:///a b");
    let list = Message::request(3, "tools/list", None);
    assert_eq!(computed(list), [("mcp-method".into(), "tools/list".into())]);
    let note = Message::notification("notifications/cancelled", Some(json!({"requestId": 1})));
    assert_eq!(
        computed(note),
        [("mcp-method".into(), "notifications/cancelled".into())]
    );
}

#[test]
fn a_sessionless_request_names_its_own_version() {
    let meta =
        json!({"name": "t", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let routing = Routing::of(
        &Message::request(1, "tools/call", Some(meta)),
        &ToolParams::default(),
    );
    assert_eq!(
        routing.version,
        Some(HeaderValue::from_static("2026-07-28"))
    );
    let call = Message::request(1, "tools/call", Some(json!({"name": "t"})));
    let routing = Routing::of(&call, &ToolParams::default());
    assert_eq!(routing.version, None);
}

fn request(method: &str, params: Value) -> Message {
    Message::request(1u64, method, Some(params))
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        map.insert(
            hyper::header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
            v.parse().expect("value"),
        );
    }
    map
}

#[test]
fn routing_headers_must_say_what_the_body_says() {
    let call = request(
        "tools/call",
        json!({"name": "add", "_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}),
    );
    let good = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "add"),
    ];
    assert_eq!(check(&headers(&good), &call, &ToolParams::default()), None);
    let encoded = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "=?base64?YWRk?="),
    ];
    assert_eq!(
        check(&headers(&encoded), &call, &ToolParams::default()),
        None
    );
    let name = |header: &str| Mismatch::Name {
        header: header.into(),
        member: "name",
        body: Some("add".into()),
    };
    for (bad, expected) in [
        (&good[..2], Mismatch::NoName),
        (&[good[0], good[1], ("mcp-name", "rm")][..], name("rm")),
        (
            &[good[0], ("mcp-method", "tools/list"), good[2]][..],
            Mismatch::Method {
                header: "tools/list".into(),
                body: "tools/call".into(),
            },
        ),
        (&good[1..], Mismatch::NoVersion),
        (
            &[("mcp-protocol-version", "2025-11-25"), good[1], good[2]][..],
            Mismatch::Version {
                header: "2025-11-25".into(),
                meta: "2026-07-28".into(),
            },
        ),
        (
            &[good[0], good[1], ("mcp-name", "=?base64?!!?=")][..],
            Mismatch::BadBase64(MCP_NAME),
        ),
    ] {
        let found = check(&headers(bad), &call, &ToolParams::default());
        assert_eq!(found, Some(expected), "{bad:?}");
    }
    let list = request("tools/list", json!({}));
    assert_eq!(
        check(
            &headers(&[good[0], ("mcp-method", "tools/list")]),
            &list,
            &ToolParams::default()
        ),
        None
    );
}

#[test]
fn marked_arguments_must_be_mirrored_in_their_headers() {
    let marked = ToolParams::default();
    let mut listing = mcp_chain_middleware::payload::Payload::from(json!({"tools": [{
        "name": "deploy",
        "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "replicas": {"type": "integer", "x-mcp-header": "Replicas"},
            "note": {"type": "string"}
        }}
    }]}));
    marked.learn(&mut listing);
    let meta = json!({meta::PROTOCOL_VERSION: "2026-07-28"});
    let call = |arguments: Value| {
        request(
            "tools/call",
            json!({"name": "deploy", "arguments": arguments, "_meta": meta}),
        )
    };
    let base = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "deploy"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| headers(&[&base[..], extra].concat());
    let both = json!({"region": "eu", "replicas": 3, "note": "x"});
    let ok = with(&[("mcp-param-region", "eu"), ("mcp-param-replicas", "3.0")]);
    assert_eq!(check(&ok, &call(both.clone()), &marked), None);
    let header = |name: &'static str| HeaderName::from_static(name);
    for (bad, expected) in [
        (
            with(&[("mcp-param-region", "eu")]),
            Mismatch::NoParam(header("mcp-param-replicas")),
        ),
        (
            with(&[("mcp-param-region", "us"), ("mcp-param-replicas", "3")]),
            Mismatch::Param(header("mcp-param-region")),
        ),
        (with(&[]), Mismatch::NoParam(header("mcp-param-region"))),
    ] {
        assert_eq!(
            check(&bad, &call(both.clone()), &marked),
            Some(expected),
            "{bad:?}"
        );
    }
    // An argument the call does not carry has no header, and a header
    // for it is refused.
    let only_region = json!({"region": "eu"});
    assert_eq!(
        check(
            &with(&[("mcp-param-region", "eu")]),
            &call(only_region.clone()),
            &marked
        ),
        None
    );
    let stray = with(&[("mcp-param-region", "eu"), ("mcp-param-replicas", "3")]);
    assert_eq!(
        check(&stray, &call(only_region), &marked),
        Some(Mismatch::StrayParam(header("mcp-param-replicas")))
    );
}
