use super::*;

fn load(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml_str(text, "c.toml", |name| match name {
        "HOME" => Some("/home/me".into()),
        _ => None,
    })
}

fn problems(text: &str) -> Vec<String> {
    match load(text) {
        Err(ConfigError::Invalid { problems }) => problems,
        other => panic!("expected problems, got {other:?}"),
    }
}

#[test]
fn empty_file_is_a_transparent_relay() {
    let config = load("").expect("valid");
    assert!(config.upstream.is_none());
    assert!(config.chain.is_empty());
    assert_eq!(config.max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES);
    assert_eq!(config.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
}

#[test]
fn upstream_and_proxy_settings_are_read() {
    let config = load(
        r#"
[upstream]
command = "npx"
args = ["-y", "server", "${HOME}/share"]
env = { LOG_LEVEL = "warn" }
cwd = "/tmp"

[proxy]
max_message_bytes = 1048576
shutdown_grace = "250ms"
"#,
    )
    .expect("valid");
    let Some(UpstreamConfig::Command(upstream)) = config.upstream else {
        panic!("a command upstream: {:?}", config.upstream);
    };
    assert_eq!(upstream.command, "npx");
    assert_eq!(upstream.args, ["-y", "server", "/home/me/share"]);
    assert_eq!(upstream.env["LOG_LEVEL"], "warn");
    assert_eq!(upstream.cwd, Some(PathBuf::from("/tmp")));
    assert_eq!(config.max_message_bytes, 1_048_576);
    assert_eq!(config.shutdown_grace, Duration::from_millis(250));
}

#[test]
fn layers_keep_file_order() {
    let config =
        load("[[middleware]]\ntype = \"log\"\nlevel = \"debug\"\n[[middleware]]\ntype = \"log\"\n")
            .expect("valid");
    assert_eq!(config.layer_names(), ["log", "log"]);
}

#[test]
fn unknown_key_is_an_error_with_line_and_column() {
    let problems = problems("[upstream]\ncommand = \"x\"\ncomand = \"typo\"\n");
    assert_eq!(problems.len(), 1);
    assert!(problems[0].starts_with("c.toml:3:1:"), "{problems:?}");
    assert!(problems[0].contains("comand"), "{problems:?}");
}

#[test]
fn unknown_layer_type_is_an_error() {
    let problems = problems("[[middleware]]\ntype = \"firewall\"\n");
    assert!(problems[0].contains("firewall"), "{problems:?}");
    assert!(problems[0].starts_with("c.toml:"), "{problems:?}");
}

#[test]
fn bad_layer_value_names_the_entry_and_its_place() {
    let problems = problems(
        "[[middleware]]\ntype = \"log\"\n\n[[middleware]]\ntype = \"log\"\nlevel = \"loud\"\n",
    );
    assert_eq!(problems.len(), 1);
    // At the bad value itself, not at its table.
    assert!(problems[0].starts_with("c.toml:6:9:"), "{problems:?}");
    assert!(
        problems[0].contains("middleware[1] (log): level"),
        "{problems:?}"
    );
}

#[test]
fn every_bad_value_is_reported_at_once() {
    let problems = problems(
        "[proxy]\nmax_message_bytes = 10\nshutdown_grace = \"soon\"\n[[middleware]]\ntype = \"log\"\nlevel = \"loud\"\n",
    );
    assert_eq!(problems.len(), 3, "{problems:?}");
}

#[test]
fn undefined_variable_is_an_error_with_its_place() {
    let problems = problems("[upstream]\ncommand = \"${NOPE}/bin\"\n");
    assert!(problems[0].starts_with("c.toml:2:12:"), "{problems:?}");
    assert!(problems[0].contains("NOPE"));
}

#[test]
fn durations_parse() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
    assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
    assert!(parse_duration("5 parsecs").is_err());
    assert!(parse_duration("").is_err());
}

#[test]
fn a_url_upstream_takes_its_own_keys() {
    let config = load(
        r#"
[upstream]
url = "https://mcp.example.com/mcp"
transport = "streamable-http"
headers = { Authorization = "Bearer ${HOME}" }
ca_file = "/etc/ca.pem"
"#,
    )
    .expect("valid");
    let Some(UpstreamConfig::Url(upstream)) = &config.upstream else {
        panic!("a URL upstream: {:?}", config.upstream);
    };
    assert_eq!(upstream.url.as_str(), "https://mcp.example.com/mcp");
    assert_eq!(upstream.transport, Transport::StreamableHttp);
    assert_eq!(upstream.headers.len(), 1);
    assert_eq!(upstream.headers[0].0, "authorization");
    assert_eq!(upstream.headers[0].1, "Bearer /home/me");
    assert_eq!(upstream.ca_file, Some(PathBuf::from("/etc/ca.pem")));
    // The value is a credential: debug output shows the header's name only.
    let shown = format!("{config:?}");
    assert!(shown.contains("authorization"), "{shown}");
    assert!(!shown.contains("/home/me"), "{shown}");
}

#[test]
fn an_upstream_is_a_command_or_a_url_never_both() {
    let both = problems("[upstream]\ncommand = \"x\"\nurl = \"http://h/mcp\"\n");
    assert!(both[0].contains("one or the other"), "{both:?}");
    let neither = problems("[upstream]\nargs = [\"x\"]\n");
    assert!(
        neither[0].contains("upstream.command or upstream.url"),
        "{neither:?}"
    );
    let mixed = problems("[upstream]\nurl = \"http://h/mcp\"\nrestart = \"on-failure\"\n");
    assert!(
        mixed[0].contains("upstream.restart: only for a command"),
        "{mixed:?}"
    );
    let mixed = problems("[upstream]\ncommand = \"x\"\nheaders = { A = \"b\" }\n");
    assert!(
        mixed[0].contains("upstream.headers: only for a URL"),
        "{mixed:?}"
    );
}

#[test]
fn a_url_upstream_is_checked() {
    for (url, says) in [
        ("not a url", "is not a URL"),
        ("ftp://h/mcp", "is not http, https, ws or wss"),
    ] {
        let found = problems(&format!("[upstream]\nurl = {url:?}\n"));
        assert!(found[0].contains(says), "{url}: {found:?}");
    }
    let transport =
        problems("[upstream]\nurl = \"http://h/mcp\"\ntransport = \"carrier-pigeon\"\n");
    assert!(transport[0].contains("upstream.transport"), "{transport:?}");
    let header = problems("[upstream]\nurl = \"http://h/mcp\"\nheaders = { \"a b\" = \"c\" }\n");
    assert!(header[0].contains("is not a header name"), "{header:?}");
    let value =
        problems("[upstream]\nurl = \"http://h/mcp\"\nheaders = { A = \"line\\nbreak\" }\n");
    assert!(value[0].contains("not a valid header value"), "{value:?}");
    assert!(
        !value[0].contains("break"),
        "a header value is never shown: {value:?}"
    );
}

#[test]
fn a_websocket_url_takes_the_websocket_keys_only() {
    let config = load("[upstream]\nurl = \"wss://dev.example/ws\"\nenvelope = \"mcp-payload\"\n")
        .expect("valid");
    let Some(UpstreamConfig::Url(upstream)) = &config.upstream else {
        panic!("a URL upstream: {:?}", config.upstream);
    };
    assert_eq!(upstream.transport, Transport::WebSocket);
    assert_eq!(upstream.envelope, Envelope::McpPayload);
    for (text, says) in [
        (
            "url = \"ws://h/\"\ntransport = \"sse\"",
            "needs an http(s) URL",
        ),
        (
            "url = \"http://h/\"\ntransport = \"websocket\"",
            "needs a ws:// or wss:// URL",
        ),
        (
            "url = \"http://h/\"\nenvelope = \"mcp-payload\"",
            "only for a WebSocket upstream",
        ),
        (
            "url = \"ws://h/\"\nenvelope = \"mqtt\"",
            "is not \"none\" or \"mcp-payload\"",
        ),
    ] {
        let found = problems(&format!("[upstream]\n{text}\n"));
        assert!(found[0].contains(says), "{text}: {found:?}");
    }
}

#[test]
fn only_urls_of_the_four_schemes_are_urls_on_the_command_line() {
    assert!(is_url("https://mcp.example.com/mcp"));
    assert!(is_url("HTTP://127.0.0.1:3001/sse"));
    assert!(is_url("ws://192.168.1.20:8080/mcp"));
    assert!(!is_url("npx"));
    assert!(!is_url("http://"));
    assert!(!is_url("./http://x"));
}

#[test]
fn front_settings_are_read_and_tokens_never_shown() {
    let config = load(
        r#"
[front]
listen = "127.0.0.1:8080"
path = "/v1/mcp"
legacy_sse = false
tokens = ["a-token-of-20-chars!"]
allowed_hosts = ["MCP.example.com"]
allowed_origins = ["https://app.example.com"]
max_sessions = 8
session_idle = "5m"
init_timeout = "10s"
replica = "eu1"
"#,
    )
    .expect("valid");
    assert_eq!(config.front.replica.as_deref(), Some("eu1"));
    let front = &config.front;
    assert_eq!(front.listen, Some("127.0.0.1:8080".parse().expect("addr")));
    assert_eq!((front.path.as_str(), front.legacy_sse), ("/v1/mcp", false));
    assert_eq!(front.allowed_hosts, ["mcp.example.com"]);
    assert_eq!(front.max_sessions, 8);
    assert_eq!(front.session_idle, std::time::Duration::from_secs(300));
    assert_eq!(front.init_timeout, std::time::Duration::from_secs(10));
    assert!(!format!("{front:?}").contains("a-token-of-20-chars!"));
    // Without [front], stdio.
    assert!(load("").expect("valid").front.listen.is_none());
}

#[test]
fn front_mistakes_are_named() {
    let found = problems(
        r#"
[front]
listen = "localhost"
path = "mcp"
tokens = ["short", ""]
allowed_origins = ["app.example.com", "https://x.example/"]
max_sessions = 0
max_sessions_per_principal = 0
session_idle = "0s"
init_timeout = "soon"
replica = "EU-1"
"#,
    );
    for expected in [
        "front.listen:",
        "front.path:",
        "front.tokens[0]:",
        "front.tokens[1]:",
        "front.allowed_origins: \"app.example.com\"",
        "front.allowed_origins: \"https://x.example/\"",
        "front.max_sessions:",
        "front.max_sessions_per_principal:",
        "front.session_idle: must be more than zero",
        "front.init_timeout:",
        "front.replica:",
    ] {
        assert!(
            found.iter().any(|p| p.contains(expected)),
            "{expected} in {found:?}"
        );
    }
}

#[test]
fn upstream_oauth_is_read_and_its_secret_never_shown() {
    let config = load(
        r#"
[upstream]
url = "https://mcp.example.com/mcp"
[upstream.oauth]
client_id = "registered-id"
client_secret = "s3cret"
scopes = ["read", "write"]
resource = "https://mcp.example.com/"
callback_port = 33418
grant = "client_credentials"
login_timeout = "90s"
"#,
    )
    .expect("valid");
    let Some(UpstreamConfig::Url(url)) = &config.upstream else {
        panic!("a URL upstream");
    };
    let oauth = &url.oauth;
    assert_eq!(
        oauth.client_id,
        Some(ClientId::Registered("registered-id".into()))
    );
    assert_eq!(
        oauth.scopes.as_deref(),
        Some(&["read".to_owned(), "write".to_owned()][..])
    );
    assert!(
        matches!(&oauth.resource, Resource::Override(u) if u.as_str() == "https://mcp.example.com/")
    );
    assert_eq!(
        (oauth.callback_port, oauth.grant),
        (Some(33418), Grant::ClientCredentials)
    );
    assert_eq!(oauth.login_timeout, std::time::Duration::from_secs(90));
    assert!(
        !format!("{config:?}").contains("s3cret"),
        "Debug hides the secret"
    );

    let document = load(
        "[upstream]\nurl = \"https://mcp.example.com/mcp\"\n[upstream.oauth]\nclient_id = \"https://app.example.com/client.json\"\nresource = false\n",
    )
    .expect("valid");
    let Some(UpstreamConfig::Url(url)) = &document.upstream else {
        panic!("a URL upstream");
    };
    assert!(matches!(&url.oauth.client_id, Some(ClientId::Document(_))));
    assert_eq!(url.oauth.resource, Resource::Omit);
}

#[test]
fn upstream_oauth_mistakes_are_named() {
    let said = problems(
        r#"
[upstream]
url = "https://mcp.example.com/mcp"
[upstream.oauth]
scopes = ["two words"]
resource = "https://mcp.example.com/#frag"
callback_port = 0
grant = "password"
resource_metadata = "http://elsewhere.example.com/prm"
login_timeout = "0s"
"#,
    )
    .join("\n");
    for key in [
        "scopes",
        "resource",
        "callback_port",
        "grant",
        "resource_metadata",
        "login_timeout",
    ] {
        assert!(
            said.contains(&format!("upstream.oauth.{key}")),
            "{key}: {said}"
        );
    }
    let said = problems("[upstream]\nurl = \"https://x.example.com\"\n[upstream.oauth]\ngrant = \"client_credentials\"\n").join("\n");
    assert!(said.contains("needs client_id and client_secret"), "{said}");
    let said = problems("[upstream]\ncommand = \"x\"\n[upstream.oauth]\n").join("\n");
    assert!(said.contains("oauth: only for a URL upstream"), "{said}");
}

#[test]
fn front_oauth_is_read_and_its_secrets_never_shown() {
    let config = load(
        r#"
[front]
public_url = "https://mcp.example.com/mcp"
trusted_proxies = ["10.0.0.0/8", "::1"]
[front.oauth]
issuer = "https://login.example.com/realms/eng"
scopes_supported = ["mcp:read", "mcp:admin"]
required_scopes = ["mcp:read"]
introspection = { url = "https://login.example.com/introspect", client_id = "mcp-chain", client_secret = "intro-s3cret" }
hmac_secret = "hmac-s3cret-of-thirty-two-bytes-ok"
leeway = "30s"
"#,
    )
    .expect("valid");
    let front = &config.front;
    let oauth = front.oauth.as_deref().expect("oauth");
    assert_eq!(
        oauth.audience, "https://mcp.example.com/mcp",
        "the audience defaults to public_url"
    );
    assert!(
        oauth.algorithms.iter().any(|a| a == "HS256"),
        "HMAC with its secret"
    );
    assert!(
        !oauth.algorithms.iter().any(|a| a == "HS512"),
        "not HS512 with a secret shorter than its hash"
    );
    assert!(!oauth.algorithms.iter().any(|a| a == "none"));
    assert_eq!(oauth.leeway, std::time::Duration::from_secs(30));
    let shown = format!("{config:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    let ten = Network::parse("10.0.0.0/8").expect("a network");
    assert!(ten.contains("10.1.2.3".parse().expect("ip")));
    assert!(
        ten.contains("::ffff:10.1.2.3".parse().expect("ip")),
        "IPv4-mapped"
    );
    assert!(!ten.contains("11.0.0.1".parse().expect("ip")));
    assert!(front.trusted_proxies[1].contains("::1".parse().expect("ip")));
    assert!(Network::parse("10.0.0.0/33").is_none() && Network::parse("evil").is_none());
}

#[test]
fn an_hmac_secret_shorter_than_its_hash_is_refused() {
    let said = problems(
        r#"
[front]
public_url = "https://mcp.example.com/mcp"
[front.oauth]
issuer = "https://login.example.com"
hmac_secret = "short-s3cret"
"#,
    )
    .join("\n");
    assert!(
        said.contains("hmac_secret: 12 bytes is too short"),
        "{said}"
    );
    assert!(
        !said.contains("s3cret"),
        "the secret is never shown: {said}"
    );
    let said = problems(
        r#"
[front]
public_url = "https://mcp.example.com/mcp"
[front.oauth]
issuer = "https://login.example.com"
algorithms = ["HS512"]
hmac_secret = "a-secret-of-exactly-thirty-two-b"
"#,
    )
    .join("\n");
    assert!(
        said.contains("\"HS512\" needs an hmac_secret of at least 64 bytes"),
        "{said}"
    );
}

#[test]
fn front_oauth_mistakes_are_named() {
    let said = problems(
        r#"
[front]
trusted_proxies = ["not a network"]
[front.oauth]
issuer = "http://login.example.com"
algorithms = ["HS256", "none"]
scopes_supported = ["two words"]
"#,
    )
    .join("\n");
    for expected in [
        "front.trusted_proxies",
        "front.oauth.issuer",
        "front.oauth.audience",
        "\"HS256\" needs hmac_secret",
        "\"none\" is not a signature algorithm",
        "front.oauth.scopes_supported",
    ] {
        assert!(said.contains(expected), "{expected}: {said}");
    }
}

#[test]
fn servers_are_read_each_with_its_prefix_and_chain() {
    let config = load(
        r#"
[servers.time]
command = "uvx"
args = ["mcp-server-time"]

[servers.tracker]
url = "https://mcp.example.com/mcp"
prefix = "jira"

[[servers.tracker.middleware]]
type = "filter"
tools = { deny = ["delete_*"] }

[gateway]
separator = "."
startup_timeout = "3s"
"#,
    )
    .expect("valid");
    let gateway = config.gateway.expect("a gateway");
    assert_eq!(gateway.separator, ".");
    assert_eq!(gateway.startup_timeout, std::time::Duration::from_secs(3));
    let names: Vec<_> = gateway
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.prefix.as_str(), s.chain.len()))
        .collect();
    assert_eq!(names, [("time", "time", 0), ("tracker", "jira", 1)]);
    assert!(config.upstream.is_none());
}

#[test]
fn servers_problems_name_the_server() {
    let found = problems(
        r#"
[upstream]
command = "a"

[servers.a]
command = "a"
prefix = "has space"

[servers.b]
url = "ftp://x"

[servers.c]
command = "c"
transport = "sse"

[[servers.c.middleware]]
type = "filter"
tools = { deny = ["["] }

[gateway]
separator = ""
"#,
    );
    let text = found.join("\n");
    for expected in [
        "upstream, servers: give [upstream]",
        "servers.a.prefix",
        "servers.b.",
        "servers.c.transport: only for a URL upstream",
        "servers.c.middleware[0]",
        "gateway.separator",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    let lonely = problems("[gateway]\nseparator = \"__\"\n");
    assert!(
        lonely.iter().any(|p| p.contains("no [servers.NAME]")),
        "{lonely:?}"
    );
}

#[test]
fn two_servers_cannot_pin_to_one_file() {
    let dir = std::env::temp_dir().join(format!("mcp-chain-pins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let pins = dir.join("pins.json");
    // A literal string: a Windows path's backslashes are no escapes.
    let found = problems(&format!(
        r#"
[servers.a]
command = "a"

[[servers.a.middleware]]
type = "pin"
path = '{0}'

[servers.b]
command = "b"

[[servers.b.middleware]]
type = "pin"
path = '{0}'
"#,
        pins.display()
    ));
    let text = found.join("\n");
    assert!(
        text.contains("servers.b.middleware (pin)") && text.contains("servers.a's pin file too"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
