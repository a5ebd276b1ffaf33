use super::callback::{Callback, Returned};
use super::store::{self, server_key, Entry, Tokens};
use std::time::Duration;
use url::Url;

#[test]
fn a_server_is_keyed_without_user_info_query_or_fragment() {
    let a = Url::parse("https://user:pw@mcp.example.com/mcp?token=x#f").expect("a URL");
    assert_eq!(server_key(&a), "https://mcp.example.com/mcp");
}

#[test]
fn tokens_and_secrets_stay_out_of_debug() {
    let entry = Entry {
        tokens: Some(Tokens {
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            expires_at: Some(1),
            scopes: vec!["read".into()],
        }),
        ..Entry::default()
    };
    let shown = format!("{entry:?}");
    assert!(
        !shown.contains("at-secret") && !shown.contains("rt-secret"),
        "{shown}"
    );
    assert!(entry
        .tokens
        .as_ref()
        .is_some_and(|t| t.expires_within(Duration::ZERO)));
}

#[test]
fn a_token_file_of_another_version_is_refused_not_misread() {
    let dir = std::env::temp_dir().join(format!("mcp-chain-oauth-{}", std::process::id()));
    let path = dir.join("x.json");
    store::write(&path, &Entry::default()).expect("written");
    assert!(store::read(&path).expect("read").is_some());
    std::fs::write(&path, br#"{"version": 9, "server": "x"}"#).expect("written");
    let refused = store::read(&path).expect_err("refused");
    assert!(refused.to_string().contains("version 9"), "{refused}");
    assert!(store::remove(&path).expect("removed"));
    assert!(!store::remove(&path).expect("nothing to remove"));
    let _ = std::fs::remove_dir_all(dir);
}

async fn get(port: u16, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer[9..12].parse().expect("a status")
}

#[tokio::test]
async fn the_callback_takes_only_the_redirect_with_its_state() {
    let callback = Callback::bind(None).await.expect("bound");
    let port = callback.port;
    let waiting = tokio::spawn(callback.wait("the-state", Duration::from_secs(20)));
    assert_eq!(get(port, "/favicon.ico").await, 404);
    assert_eq!(get(port, "/callback?code=forged&state=other").await, 400);
    assert_eq!(get(port, "/callback?state=the-state").await, 400, "no code");
    assert_eq!(
        get(
            port,
            "/callback?code=c0de&state=the-state&iss=https%3A%2F%2Fas"
        )
        .await,
        200
    );
    match waiting.await.expect("joined").expect("returned") {
        Returned::Code { code, iss } => {
            assert_eq!(code, "c0de");
            assert_eq!(iss.as_deref(), Some("https://as"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_callback_nobody_calls_ends_at_its_bound() {
    let callback = Callback::bind(None).await.expect("bound");
    let waited = callback.wait("s", Duration::from_secs(300)).await;
    assert!(
        matches!(waited, Err(super::OAuthError::TimedOut(_))),
        "{waited:?}"
    );
}
