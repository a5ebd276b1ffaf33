//! The child process: start-up failures, crashes, noise, environment,
//! shutdown and the process group.

mod support;

use serde_json::json;
use support::{alive, call, eventually, Proxy, TempDir, FAKE};

#[tokio::test]
async fn a_command_that_cannot_start_is_one_clear_line_and_a_failure() {
    let mut proxy = Proxy::spawn(&["--", "/nonexistent/mcp-server", "--flag"]);
    let status = proxy.wait().await;
    assert!(!status.success());
    let stderr = proxy.stderr();
    let line = stderr
        .lines()
        .find(|l| l.starts_with("mcp-chain:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("/nonexistent/mcp-server"), "{line}");
}

#[tokio::test]
async fn a_server_that_dies_at_once_is_reported_not_hung() {
    let mut proxy = Proxy::fake(&[], &["--crash-on-start"]);
    proxy.send(support::req(json!(1), "ping", json!({}))).await;
    let (status, rest) = proxy.finish().await;
    assert!(!status.success());
    // Either the request was answered with an error or it never left.
    for msg in rest {
        assert_eq!(msg["error"]["code"], -32000, "{msg}");
    }
    assert!(
        proxy.stderr().contains("mcp-chain: the server exited"),
        "{}",
        proxy.stderr()
    );
}

#[tokio::test]
async fn a_crash_answers_every_pending_request_at_once() {
    let mut proxy = Proxy::fake(&[], &[]);
    for i in 0..5 {
        proxy
            .send(call(json!(i), "delay", json!({"ms": 60_000})))
            .await;
    }
    proxy
        .send(call(json!("boom"), "crash", json!({"code": 7})))
        .await;
    let mut answered = std::collections::HashSet::new();
    for _ in 0..6 {
        let answer = proxy.recv().await;
        assert_eq!(answer["error"]["code"], -32000, "{answer}");
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("mcp-chain"));
        answered.insert(answer["id"].to_string());
    }
    assert_eq!(answered.len(), 6);
    let status = proxy.wait().await;
    assert_eq!(status.code(), Some(1));
    let stderr = proxy.stderr();
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("mcp-chain: the server exited") && l.contains('7')),
        "{stderr}"
    );
}

#[tokio::test]
async fn garbage_on_the_servers_stdout_is_skipped() {
    let mut proxy = Proxy::fake(&[], &["--garbage-on-start"]);
    let answer = proxy.call_tool(json!(1), "garbage", json!({})).await;
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(
        proxy.request(json!(2), "ping", json!({})).await["result"],
        json!({})
    );
    assert!(
        proxy.stderr().contains("this is not json") || proxy.stderr().contains("parse error"),
        "{}",
        proxy.stderr()
    );
}

#[tokio::test]
async fn the_servers_stderr_is_drained_and_passed_on() {
    let mut proxy = Proxy::fake(&[], &["--stderr-noise", "3"]);
    // 20,000 lines would fill an undrained pipe many times over.
    let answer = proxy
        .call_tool(json!(1), "stderr", json!({"lines": 20_000}))
        .await;
    assert!(answer["result"].is_object());
    eventually("the server's stderr lines", || {
        proxy.stderr().contains("stderr line 19999")
    })
    .await;
    assert!(proxy.stderr().contains("stderr noise line 2"));
}

#[tokio::test]
async fn the_server_inherits_our_environment_plus_the_configured_env() {
    let dir = TempDir::new("env");
    let config = dir.write(
        "c.toml",
        &format!(
            "[upstream]\ncommand = \"{FAKE}\"\nenv = {{ ADDED = \"from-config\" }}\ncwd = \"{}\"\n",
            dir.0.display()
        ),
    );
    let mut proxy = Proxy::spawn_with(&["--config", &config], |cmd| {
        cmd.env("INHERITED_SECRET", "s3cret");
    });
    let answer = proxy
        .call_tool(
            json!(1),
            "env",
            json!({"names": ["INHERITED_SECRET", "ADDED", "PWD_DIR"]}),
        )
        .await;
    let env = &answer["result"]["structuredContent"];
    assert_eq!(env["INHERITED_SECRET"], "s3cret", "{answer}");
    assert_eq!(env["ADDED"], "from-config");
    assert_eq!(env["cwd"], json!(dir.0.display().to_string()));
}

#[tokio::test]
async fn pipes_are_widened_for_big_messages() {
    let mut proxy = Proxy::fake(&[], &[]);
    let answer = proxy.call_tool(json!(1), "env", json!({"names": []})).await;
    let env = &answer["result"]["structuredContent"];
    // 1 MiB, the default fs.pipe-max-size; a pipe starts at 64 KiB.
    assert_eq!(env["stdin_pipe_bytes"], 1024 * 1024, "{answer}");
    assert_eq!(env["stdout_pipe_bytes"], 1024 * 1024, "{answer}");
    // And the client's pipes to mcp-chain: widened by mcp-chain at start.
    assert_eq!(proxy.pipe_sizes(), (1024 * 1024, 1024 * 1024));
}

#[tokio::test]
async fn shutdown_ends_the_whole_process_group() {
    let mut proxy = Proxy::fake(&[], &[]);
    let answer = proxy.call_tool(json!(1), "grandchild", json!({})).await;
    let pid = answer["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("pid") as u32;
    assert!(alive(pid));
    let (status, _) = proxy.finish().await;
    assert!(status.success(), "{}", proxy.stderr());
    eventually("the grandchild to be gone", || !alive(pid)).await;
}

#[tokio::test]
async fn a_crashed_server_leaves_no_grandchild_and_no_hang() {
    let mut proxy = Proxy::fake(&[], &[]);
    let answer = proxy.call_tool(json!(1), "grandchild", json!({})).await;
    let pid = answer["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("pid") as u32;
    // The grandchild holds the server's stdout open: exit must still be seen.
    proxy.send(call(json!(2), "crash", json!({}))).await;
    let (answer, _) = proxy.recv_answer(&json!(2)).await;
    assert_eq!(answer["error"]["code"], -32000);
    assert!(!proxy.wait().await.success());
    eventually("the grandchild to be gone", || !alive(pid)).await;
}

#[tokio::test]
async fn stdin_eof_waits_for_owed_answers() {
    let mut proxy = Proxy::fake(&[], &[]);
    proxy
        .send(call(json!("late"), "delay", json!({"ms": 500})))
        .await;
    let (status, rest) = proxy.finish().await;
    assert!(status.success(), "{}", proxy.stderr());
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], "late");
    assert!(rest[0]["result"].is_object());
}

#[tokio::test]
async fn answers_still_owed_after_the_grace_get_an_error() {
    let mut proxy = Proxy::fake(&["--shutdown-grace", "300ms"], &["--ignore-stdin-eof"]);
    proxy
        .send(call(json!("stuck"), "delay", json!({"ms": 60_000})))
        .await;
    let (status, rest) = proxy.finish().await;
    assert!(status.success(), "{}", proxy.stderr());
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], "stuck");
    assert_eq!(rest[0]["error"]["code"], -32000);
}

#[tokio::test]
async fn a_signal_shuts_down_like_end_of_input() {
    for signal in ["TERM", "INT"] {
        let mut proxy = Proxy::fake(&[], &[]);
        let answer = proxy.call_tool(json!(1), "grandchild", json!({})).await;
        let pid = answer["result"]["structuredContent"]["pid"]
            .as_u64()
            .expect("pid") as u32;
        proxy
            .send(call(json!("owed"), "delay", json!({"ms": 300})))
            .await;
        // Let the request reach the server before the signal.
        let _ = proxy.request(json!("sync"), "ping", json!({})).await;
        proxy.signal(signal);
        let (answer, _) = proxy.recv_answer(&json!("owed")).await;
        assert!(answer["result"].is_object(), "{signal}: {answer}");
        assert!(proxy.wait().await.success(), "{signal}: {}", proxy.stderr());
        eventually("the grandchild to be gone", || !alive(pid)).await;
    }
}

#[tokio::test]
async fn a_hangup_asks_for_a_reload_and_never_stops_the_session() {
    // No --config: nothing to read again, which is said; the session goes on.
    let mut proxy = Proxy::fake(&[], &[]);
    assert_eq!(proxy.request(json!(1), "ping", json!({})).await["id"], 1);
    proxy.signal("HUP");
    eventually("the hangup to be logged", || {
        proxy.stderr().contains("no config file to read again")
    })
    .await;
    assert_eq!(proxy.request(json!(2), "ping", json!({})).await["id"], 2);
    let (status, _) = proxy.finish().await;
    assert!(status.success(), "{}", proxy.stderr());
}

#[tokio::test]
async fn a_server_that_ignores_eof_is_terminated_after_the_grace() {
    let mut proxy = Proxy::fake(&["--shutdown-grace", "200ms"], &["--ignore-stdin-eof"]);
    assert_eq!(proxy.request(json!(1), "ping", json!({})).await["id"], 1);
    let (status, _) = proxy.finish().await;
    assert!(status.success(), "{}", proxy.stderr());
    assert!(proxy.stderr().contains("terminating"), "{}", proxy.stderr());
}

#[tokio::test]
async fn a_second_signal_cuts_the_grace_short() {
    // The MCP SDKs close stdin, wait, then SIGTERM, then SIGKILL: the
    // server must be gone well before the (long) grace would end.
    let mut proxy = Proxy::fake(&["--shutdown-grace", "60s"], &["--ignore-stdin-eof"]);
    let answer = proxy.call_tool(json!(1), "grandchild", json!({})).await;
    let pid = answer["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("pid") as u32;
    proxy.close_stdin();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    proxy.signal("TERM");
    let status = proxy.wait().await;
    assert!(status.success(), "{}", proxy.stderr());
    assert!(
        proxy.stderr().contains("asked to stop again"),
        "{}",
        proxy.stderr()
    );
    eventually("the grandchild to be gone", || !alive(pid)).await;
}

#[tokio::test]
async fn a_killed_proxy_takes_its_server_with_it() {
    let mut proxy = Proxy::fake(&[], &["--ignore-stdin-eof"]);
    let answer = proxy.call_tool(json!(1), "grandchild", json!({})).await;
    let grandchild = answer["result"]["structuredContent"]["pid"]
        .as_u64()
        .expect("pid") as u32;
    let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).expect("stat");
    let server: u32 = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|ppid| ppid.parse().ok())
        .expect("ppid");
    assert!(alive(server));
    proxy.signal("KILL");
    proxy.wait().await;
    eventually("the server to be gone", || !alive(server)).await;
    // The grandchild is in the server's group; clean it up for the machine.
    let _ = std::process::Command::new("kill")
        .arg(grandchild.to_string())
        .status();
}
