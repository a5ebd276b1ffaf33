//! A resource rule holds for every spelling of a URI the server reads as
//! the same resource, in every place a URI is judged.

use super::*;

/// Spellings of `file:///etc/passwd` (denied by `file:///etc/**`).
const PASSWD: &[&str] = &[
    "FILE:///etc/passwd",
    "file:///%65tc/passwd",
    "file:///%65%74%63/passwd",
    "file:///tmp/../etc/passwd",
    "file:///etc/./passwd",
    "file:///../etc/passwd",
    "file:///x/%2e%2e/etc/passwd",
    "file://localhost/etc/passwd",
    "file://LocalHost/etc//passwd",
    "file:////etc/passwd",
];

/// URIs that have no normal form: refused wherever resources are judged.
const UNCLEAR: &[&str] = &[
    "file:///etc%2Fpasswd",
    "file:///srv/a%2fb",
    "file:///etc\\passwd",
    "file:///srv/%zz",
    "etc/passwd",
    "file:///srv/x%00.txt",
];

#[tokio::test]
async fn every_spelling_of_a_hidden_uri_is_refused_and_never_reaches_the_server() {
    let (mut svc, seen) = filter(empty);
    for method in [
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        for uri in PASSWD.iter().chain(UNCLEAR) {
            let req = Message::request(1, method, Some(json!({"uri": uri})));
            let (code, message, _) = error_of(send(&mut svc, Direction::ToServer, req).await);
            assert_eq!(code, -32002, "{method} {uri}");
            assert_eq!(message, format!("Resource not found: {uri}"));
        }
    }
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn an_allowed_uri_is_forwarded_as_the_client_spelled_it() {
    let (mut svc, seen) = filter(empty);
    for uri in ["FILE:///srv/../srv/x", "file:///srv/%78", "https://h:443"] {
        let req = Message::request(1, "resources/read", Some(json!({"uri": uri})));
        let answer = send(&mut svc, Direction::ToServer, req).await;
        assert!(matches!(answer, Some(Message::Response(_))), "{uri}");
    }
    let seen = seen.lock().expect("not poisoned");
    let sent: Vec<_> = seen
        .iter()
        .map(|m| {
            m.params()
                .map(|p| p.to_value().expect("readable")["uri"].clone())
        })
        .collect();
    assert_eq!(
        sent,
        [
            Some(json!("FILE:///srv/../srv/x")),
            Some(json!("file:///srv/%78")),
            Some(json!("https://h:443"))
        ]
    );
}

#[tokio::test]
async fn updates_for_any_spelling_of_a_hidden_uri_are_dropped() {
    let (mut svc, seen) = filter(empty);
    for uri in PASSWD.iter().chain(UNCLEAR) {
        let note =
            Message::notification("notifications/resources/updated", Some(json!({"uri": uri})));
        assert!(
            send(&mut svc, Direction::ToClient, note).await.is_none(),
            "{uri}"
        );
    }
    assert!(seen.lock().expect("not poisoned").is_empty());
}

fn spelled_lists(method: &str) -> Value {
    match method {
        "resources/list" => {
            let mut items: Vec<Value> = PASSWD
                .iter()
                .chain(UNCLEAR)
                .map(|u| json!({"uri": u}))
                .collect();
            items.push(json!({"uri": "file:///srv/x"}));
            json!({"resources": items})
        }
        _ => json!({"resourceTemplates": [
            {"uriTemplate": "DB://{t}"}, {"uriTemplate": "db://%7Bt%7D"},
            {"uriTemplate": "file:///srv/../etc/{name}"}, {"uriTemplate": "FILE:///srv/{name}"}]}),
    }
}

#[tokio::test]
async fn listed_items_under_any_spelling_of_a_hidden_uri_are_pruned() {
    let (mut svc, _) = filter(spelled_lists);
    let r = Message::request(1, "resources/list", None);
    let r = result_of(send(&mut svc, Direction::ToServer, r).await);
    assert_eq!(r["resources"], json!([{"uri": "file:///srv/x"}]));
    let t = Message::request(2, "resources/templates/list", None);
    let t = result_of(send(&mut svc, Direction::ToServer, t).await);
    assert_eq!(
        t["resourceTemplates"],
        json!([{"uriTemplate": "FILE:///srv/{name}"}])
    );
}

#[tokio::test]
async fn completions_for_any_spelling_of_a_hidden_template_are_refused() {
    let (mut svc, seen) = filter(empty);
    let spellings = [
        "DB://{table}",
        "Db://%7Btable%7D",
        "FILE:///tmp/../etc/{name}",
        "file:///etc%2F{x}",
    ];
    completions_are_refused(&mut svc, &spellings).await;
    assert!(seen.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn patterns_are_normalized_too() {
    let config = FilterConfig {
        resources: list(Some(&["FILE:///SRV/**", "test://Static/%72esource/*"]), &[]),
        ..FilterConfig::default()
    };
    let (mut svc, _) = filter_with(config, empty);
    for (uri, allowed) in [
        ("file:///SRV/a", true),
        ("test://static/resource/1", true),
        ("file:///srv/a", false), // the path keeps its case
        ("test://static/resource/1/../../secret/1", false),
    ] {
        let req = Message::request(1, "resources/read", Some(json!({"uri": uri})));
        let answer = send(&mut svc, Direction::ToServer, req).await;
        assert_eq!(
            matches!(answer, Some(Message::Response(_))),
            allowed,
            "{uri}"
        );
    }
}
