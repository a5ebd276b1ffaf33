//! `mcp-chain check` and config handling through the binary: every example
//! in config/ must pass, so none of them can rot.

mod support;

use std::process::Command;
use support::{Proxy, TempDir, PROXY};

fn check(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(PROXY)
        .arg("check")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // config/remote.toml takes its token from the environment.
        .env("EXAMPLE_TOKEN", "example-token-value")
        .output()
        .expect("mcp-chain runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_example_config_passes_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("config/ exists") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let (ok, stdout, stderr) = check(&["--config", &path.display().to_string()]);
            assert!(ok, "{}: {stderr}", path.display());
            assert!(stdout.contains(": ok"), "{stdout}");
            assert!(
                !stdout.contains("example-token-value"),
                "a header value shown: {stdout}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "expected example configs in config/");
}

#[test]
fn check_prints_the_effective_chain_in_order() {
    let dir = TempDir::new("check");
    let path = dir.write(
        "c.toml",
        "[upstream]\ncommand = \"srv\"\nargs = [\"--x\"]\n[[middleware]]\ntype = \"log\"\n",
    );
    let (ok, stdout, _) = check(&["--config", &path]);
    assert!(ok);
    assert!(stdout.contains("upstream: srv --x"), "{stdout}");
    assert!(stdout.contains("1. log"), "{stdout}");
    // The command after `--` overrides [upstream].
    let (ok, stdout, _) = check(&["--config", &path, "--", "other", "arg"]);
    assert!(ok);
    assert!(stdout.contains("upstream: other arg"), "{stdout}");
}

#[test]
fn check_prints_a_url_upstream_with_header_names_only() {
    let (ok, stdout, stderr) = check(&[
        "--header",
        "X-Api-Key: hunter2",
        "--",
        "https://mcp.example.com/mcp",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("upstream: https://mcp.example.com/mcp"),
        "{stdout}"
    );
    assert!(stdout.contains("transport: streamable-http"), "{stdout}");
    assert!(stdout.contains("headers: x-api-key"), "{stdout}");
    assert!(!stdout.contains("hunter2"), "{stdout}");
    // A ws:// URL is a WebSocket upstream.
    let (ok, stdout, stderr) = check(&["--", "ws://127.0.0.1:1/mcp"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("transport: websocket"), "{stdout}");
    // A header for a command is said so, not ignored.
    let (ok, _, stderr) = check(&["--header", "A: b", "--", "npx", "server"]);
    assert!(!ok);
    assert!(
        stderr.contains("--header is for a URL upstream"),
        "{stderr}"
    );
}

#[test]
fn check_rejects_a_bad_config_with_its_place() {
    let dir = TempDir::new("check-bad");
    let path = dir.write(
        "bad.toml",
        "[upstream]\ncommand = \"x\"\n\n[[middleware]]\ntype = \"log\"\nlevle = \"info\"\n",
    );
    let (ok, stdout, stderr) = check(&["--config", &path]);
    assert!(!ok);
    assert!(stdout.is_empty());
    assert!(stderr.contains(&format!("{path}:4:")), "{stderr}");
    assert!(stderr.contains("levle"), "{stderr}");
}

/// `--help` names every layer a config can use, each once.
#[test]
fn help_names_every_layer() {
    let out = Command::new(PROXY).arg("--help").output().expect("runs");
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    let listed = help
        .split_once("layers of a TOML config (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(list, _)| list)
        .unwrap_or_else(|| panic!("no list of layers in --help: {help}"));
    let mut listed: Vec<&str> = listed.split(',').map(str::trim).collect();
    listed.sort_unstable();
    let mut layers = [
        "audit",
        "filter",
        "rewrite",
        "rate_limit",
        "timeout",
        "limit",
        "validate",
        "pin",
        "approve",
        "log",
    ];
    layers.sort_unstable();
    assert_eq!(listed, layers);
}

/// A problem a layer finds inside its table points at its own key: the
/// bad glob's line and column, not the `[[middleware]]` header's.
#[test]
fn a_bad_pattern_is_placed_at_its_own_line_and_column() {
    let dir = TempDir::new("check-glob");
    let path = dir.write(
        "c.toml",
        "[upstream]\ncommand = \"x\"\n\n[[middleware]]\ntype = \"filter\"\n# deny what reads secrets\ntools = { deny = [\"read_*\", \"[unclosed\"] }\n",
    );
    let (ok, _, stderr) = check(&["--config", &path]);
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "{path}:7:29: middleware[0] (filter): tools.deny[1]: bad glob"
        )),
        "{stderr}"
    );
}

#[test]
fn a_missing_config_file_is_a_clear_error() {
    let (ok, _, stderr) = check(&["--config", "/nonexistent/c.toml"]);
    assert!(!ok);
    assert!(
        stderr.starts_with("mcp-chain: /nonexistent/c.toml"),
        "{stderr}"
    );
}

#[tokio::test]
async fn no_server_at_all_is_a_clear_error() {
    let mut proxy = Proxy::spawn(&[]);
    assert!(!proxy.wait().await.success());
    assert!(
        proxy.stderr().contains("no server to run"),
        "{}",
        proxy.stderr()
    );
}

#[test]
fn every_flag_has_help() {
    // Short help (-h) puts each option's text on the option's own line,
    // after its `<VALUE>`: an undocumented flag leaves that empty.
    let out = Command::new(PROXY).arg("-h").output().expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--config",
        "--log-level",
        "--max-message-bytes",
        "--shutdown-grace",
    ] {
        let line = help
            .lines()
            .find(|l| l.contains(flag))
            .unwrap_or_else(|| panic!("{flag} missing: {help}"));
        let text = line.split_once('>').map_or("", |(_, rest)| rest.trim());
        assert!(!text.is_empty(), "{flag} has no help: {line:?}");
    }
}

#[tokio::test]
async fn config_upstream_runs_and_the_log_layer_sees_both_directions() {
    let dir = TempDir::new("log-layer");
    let path = dir.write(
        "c.toml",
        &format!(
            "[upstream]\ncommand = \"{}\"\n[[middleware]]\ntype = \"log\"\nlevel = \"info\"\n",
            support::FAKE
        ),
    );
    let mut proxy = Proxy::spawn(&["--config", &path]);
    proxy.initialize("2025-11-25").await;
    proxy
        .send(support::call(
            serde_json::json!(1),
            "ask",
            serde_json::json!({"method": "roots/list"}),
        ))
        .await;
    let server_req = proxy.recv().await;
    proxy
        .send(serde_json::json!({"jsonrpc":"2.0","id":server_req["id"],"result":{"roots":[]}}))
        .await;
    proxy.recv_answer(&serde_json::json!(1)).await;
    let (status, _) = proxy.finish().await;
    assert!(status.success());
    let stderr = proxy.stderr();
    assert!(
        stderr.contains("direction=client_to_server") && stderr.contains("method=\"tools/call\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("direction=server_to_client") && stderr.contains("method=\"roots/list\""),
        "{stderr}"
    );
}

/// `${MCP_CHAIN_STATE_DIR}` is the user's state directory (here the XDG
/// one, as on Linux); `check` shows it and creates nothing; the first run
/// creates it, private, with the pin file in it. Set, the variable wins.
#[cfg(all(unix, not(target_os = "macos")))]
#[tokio::test]
async fn the_state_directory_is_found_per_os_and_created_at_first_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("state-dir");
    let xdg = dir.path("xdg");
    let config = dir.write(
        "c.toml",
        "[[middleware]]\ntype = \"pin\"\npath = \"${MCP_CHAIN_STATE_DIR}/pins.json\"\n",
    );
    let out = Command::new(PROXY)
        .args(["check", "--config", &config, "--", support::DEMO])
        .env("XDG_STATE_HOME", &xdg)
        .env_remove(STATE_DIR_VAR)
        .output()
        .expect("check runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let state = xdg.join("mcp-chain");
    assert!(
        stdout.contains(&format!(
            "state directory (${{MCP_CHAIN_STATE_DIR}}): {}",
            state.display()
        )),
        "{stdout}"
    );
    assert!(!xdg.exists(), "check created {}", xdg.display());

    let mut proxy = Proxy::spawn_with(&["--config", &config, "--", support::DEMO], |command| {
        command
            .env("XDG_STATE_HOME", &xdg)
            .env_remove(STATE_DIR_VAR);
    });
    proxy.initialize("2025-11-25").await;
    proxy
        .send(support::req(
            serde_json::json!(2),
            "tools/list",
            serde_json::json!({}),
        ))
        .await;
    proxy.recv_answer(&serde_json::json!(2)).await;
    let (status, _) = proxy.finish().await;
    assert!(status.success(), "{}", proxy.stderr());
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&state.join("pins.json")), 0o600);

    let chosen = dir.path("chosen");
    let out = Command::new(PROXY)
        .args(["check", "--config", &config, "--", support::DEMO])
        .env("XDG_STATE_HOME", &xdg)
        .env(STATE_DIR_VAR, &chosen)
        .output()
        .expect("check runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&chosen.display().to_string()), "{stdout}");
}

const STATE_DIR_VAR: &str = "MCP_CHAIN_STATE_DIR";
