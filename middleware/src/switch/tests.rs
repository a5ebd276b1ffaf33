//! The off switch: kept per server, hidden from every listing.
use super::*;
use serde_json::json;

#[tokio::test]
async fn a_switch_is_kept_per_server_and_an_unreadable_file_does_not_start() {
    let dir = std::env::temp_dir().join(format!("mcp-chain-switch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("switches.json");
    let a = Switchboard::load(path.clone(), "a".into()).expect("no file yet");
    a.set("write_file", true).await.expect("kept");
    assert!(a.is_off("write_file") && !a.is_off("read_file"));
    let again = Switchboard::load(path.clone(), "a".into()).expect("read");
    assert!(again.is_off("write_file"), "it survives a restart");
    let b = Switchboard::load(path.clone(), "b".into()).expect("read");
    assert!(!b.is_off("write_file"), "another server's switch");
    a.set("write_file", false).await.expect("kept");
    assert!(!Switchboard::load(path.clone(), "a".into())
        .expect("read")
        .is_off("write_file"));
    // Out of every listing, `server/discover`'s too.
    a.set("write_file", true).await.expect("kept");
    for listing in [
        json!({"tools": [{"name": "write_file"}, {"name": "read_file"}]}),
        json!({"serverInfo": {}, "tools": [{"name": "write_file"}, {"name": "read_file"}]}),
    ] {
        let mut result = crate::payload::Payload::from(listing);
        hide_switched_off(&a, &mut result);
        assert_eq!(
            result.member("tools").expect("read"),
            Some(json!([{"name": "read_file"}]))
        );
    }
    std::fs::write(&path, b"[{").expect("written");
    assert!(Switchboard::load(path, "a".into()).is_err(), "fails closed");
    let _ = std::fs::remove_dir_all(&dir);
}
