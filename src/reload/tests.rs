use super::*;
use std::io::Write as _;

/// A config file that can be written again.
struct File(PathBuf);

impl File {
    fn new(text: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "mcp-chain-reload-{}-{}",
            std::process::id(),
            next()
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = Self(dir.join("c.toml"));
        file.write(text);
        file
    }

    fn write(&self, text: &str) {
        let mut f = std::fs::File::create(&self.0).expect("create");
        f.write_all(text.as_bytes()).expect("write");
    }
}

impl Drop for File {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn next() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

const FILTER: &str = "[[middleware]]\ntype = \"filter\"\ntools = { deny = [\"a\"] }\n";
const LIMIT: &str =
    "[[middleware]]\ntype = \"rate_limit\"\nrules = [{ method = \"*\", rate = \"5/s\" }]\n";

fn reloader(file: &File) -> (Reloader, watch::Receiver<Arc<Policy>>) {
    let config = Config::load(&file.0).expect("valid");
    let (reloader, followed) = Reloader::new(&config).expect("a file");
    (reloader, followed.policy)
}

#[test]
fn an_unchanged_entry_is_the_running_one_and_a_changed_one_is_new() {
    let file = File::new(&format!("{FILTER}{LIMIT}"));
    let (mut reloader, policy) = reloader(&file);
    let before = policy.borrow().clone();
    file.write(&format!(
        "{}{LIMIT}",
        FILTER.replace("[\"a\"]", "[\"a\", \"b\"]")
    ));
    assert_eq!(
        reloader.reload().expect("applied"),
        Applied { kept: 1, fresh: 1 }
    );
    let after = policy.borrow().clone();
    assert!(
        !Arc::ptr_eq(&before.entries[0], &after.entries[0]),
        "the filter changed"
    );
    assert!(
        Arc::ptr_eq(&before.entries[1], &after.entries[1]),
        "the rate limit kept its buckets"
    );
}

#[test]
fn an_order_change_is_a_changed_chain() {
    let file = File::new(&format!("{FILTER}{LIMIT}"));
    let (mut reloader, policy) = reloader(&file);
    let before = policy.borrow().clone();
    file.write(&format!("{LIMIT}{FILTER}"));
    assert_eq!(
        reloader.reload().expect("applied"),
        Applied { kept: 0, fresh: 2 }
    );
    let after = policy.borrow().clone();
    assert!(before
        .entries
        .iter()
        .all(|old| after.entries.iter().all(|new| !Arc::ptr_eq(old, new))));
}

#[test]
fn an_invalid_save_changes_nothing_and_says_where() {
    let file = File::new(FILTER);
    let (mut reloader, policy) = reloader(&file);
    let before = policy.borrow().clone();
    file.write("[[middleware]]\ntype = \"filter\"\ntools = { deny = [\"a\" }\n");
    let why = reloader.reload().expect_err("invalid").to_string();
    assert!(why.contains("c.toml:3:"), "{why}");
    assert!(Arc::ptr_eq(&before, &policy.borrow()), "nothing published");
    // The next valid save applies, compared with what runs.
    file.write(FILTER);
    assert_eq!(
        reloader.reload().expect("applied"),
        Applied { kept: 1, fresh: 0 }
    );
}

#[test]
fn what_needs_a_restart_is_refused_whole() {
    let file = File::new(&format!("[upstream]\ncommand = \"a\"\n{FILTER}"));
    let (mut reloader, policy) = reloader(&file);
    let before = policy.borrow().clone();
    for (changed, what) in [
        ("[upstream]\ncommand = \"b\"\n", "[upstream]"),
        (
            "[upstream]\ncommand = \"a\"\n[proxy]\nmax_message_bytes = 8192\n",
            "[proxy]",
        ),
        (
            "[upstream]\ncommand = \"a\"\n[front]\nlisten = \"127.0.0.1:9\"\n",
            "[front]",
        ),
        ("[upstream]\ncommand = \"a\"\n[telemetry]\n", "[telemetry]"),
        (
            "[upstream]\ncommand = \"a\"\n[state]\nurl = \"redis://127.0.0.1:1\"\n",
            "[state]",
        ),
    ] {
        file.write(&format!("{changed}{}", FILTER.replace("[\"a\"]", "[]")));
        let why = reloader.reload().expect_err(what).to_string();
        assert!(why.starts_with(what) && why.contains("restart"), "{why}");
        assert!(Arc::ptr_eq(&before, &policy.borrow()));
    }
    file.write(&format!(
        "[upstream]\ncommand = \"a\"\n[proxy]\nwatch_config = true\n{FILTER}"
    ));
    assert!(reloader.reload().is_ok(), "watch_config changes live");
}

#[test]
fn the_fronts_tokens_hosts_and_origins_apply_live_but_never_open_it() {
    let front =
        |tokens: &str| format!("[front]\nlisten = \"0.0.0.0:8080\"\ntokens = [{tokens}]\n{FILTER}");
    let file = File::new(&front("\"first-token-0123456789\""));
    let config = Config::load(&file.0).expect("valid");
    let (mut reloader, mut followed) = Reloader::new(&config).expect("a file");
    followed.front.mark_unchanged();
    file.write(&front(
        "{ name = \"ci\", token = \"second-token-012345678\" }",
    ));
    reloader.reload().expect("tokens apply live");
    assert!(followed.front.has_changed().expect("open"));
    let live = followed.front.borrow_and_update().clone();
    assert_eq!(live.tokens[0].name, "ci");
    assert_eq!(live.listen, Some("0.0.0.0:8080".parse().expect("addr")));
    file.write(&front(""));
    let why = reloader
        .reload()
        .expect_err("no token off loopback")
        .to_string();
    assert!(
        why.contains("open to anyone") && !why.contains("second-token"),
        "{why}"
    );
    assert!(
        !followed.front.has_changed().expect("open"),
        "nothing published"
    );
    file.write(&format!("[front]\nlisten = \"0.0.0.0:8080\"\npath = \"/other\"\ntokens = [\"second-token-012345678\"]\n{FILTER}"));
    assert!(reloader
        .reload()
        .expect_err("path")
        .to_string()
        .starts_with("[front]"));
}

#[test]
fn the_fronts_oauth_applies_live_but_never_leaves_it_open() {
    let oauth = "[front.oauth]\nissuer = \"https://login.example.com\"\naudience = \"https://mcp.example.com/mcp\"\n";
    let front = |oauth: &str| format!("[front]\nlisten = \"0.0.0.0:8080\"\n{oauth}{FILTER}");
    let file = File::new(&front(oauth));
    let config = Config::load(&file.0).expect("valid");
    let (mut reloader, mut followed) = Reloader::new(&config).expect("a file");
    followed.front.mark_unchanged();
    file.write(&front(
        &oauth.replace("login.example.com", "sso.example.com"),
    ));
    reloader.reload().expect("[front.oauth] applies live");
    let live = followed.front.borrow_and_update().clone();
    let issuer = &live.oauth.as_deref().expect("oauth").issuer;
    assert_eq!(issuer.as_str(), "https://sso.example.com/");
    // Off loopback, no OAuth and no token would let anyone in.
    file.write(&front(""));
    let why = reloader.reload().expect_err("open").to_string();
    assert!(why.contains("open to anyone"), "{why}");
    assert!(
        !followed.front.has_changed().expect("open"),
        "nothing published"
    );
}
