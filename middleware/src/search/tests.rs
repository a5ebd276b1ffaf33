use super::*;
use crate::filter::FilterConfig;
use crate::message::method;
use crate::pattern::AllowDenyConfig;
use crate::testing::send;
use crate::{BoxError, Direction, Envelope, Message};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tower::{service_fn, Layer, Service, ServiceExt};

/// A server with the tools `tools` holds, recording the calls it gets.
#[derive(Clone, Default)]
struct Server {
    tools: Arc<Mutex<Vec<Value>>>,
    calls: Arc<Mutex<Vec<Value>>>,
    /// Its listings fail while set.
    down: Arc<std::sync::atomic::AtomicBool>,
}

impl Server {
    fn new(tools: Vec<Value>) -> Self {
        let server = Self::default();
        *server.tools.lock().expect("lock") = tools;
        server
    }

    fn service(
        &self,
    ) -> impl Service<Envelope, Response = Option<Message>, Error = BoxError, Future = impl Send>
           + Clone
           + Send
           + 'static {
        let server = self.clone();
        service_fn(move |env: Envelope| {
            let server = server.clone();
            async move {
                let Message::Request(req) = env.message else {
                    return Ok::<_, BoxError>(Some(env.message));
                };
                let down = server.down.load(std::sync::atomic::Ordering::Relaxed);
                if down && req.method == method::TOOLS_LIST {
                    let error = crate::ErrorObject::new(crate::ErrorCode::INTERNAL_ERROR, "down");
                    return Ok(Some(Message::error(Some(req.id), error)));
                }
                let result = match req.method.as_str() {
                    method::TOOLS_LIST => json!({"tools": *server.tools.lock().expect("lock")}),
                    method::TOOLS_CALL => {
                        let params = req.params.expect("params").to_value().expect("JSON");
                        server.calls.lock().expect("lock").push(params.clone());
                        json!({"content": [{"type": "text", "text": format!("ran {}", params["name"])}]})
                    }
                    _ => json!({}),
                };
                Ok(Some(Message::response(req.id, result)))
            }
        })
    }
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description,
           "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "Where"}}}})
}

fn tools() -> Vec<Value> {
    vec![
        tool("files__read_file", "Reads a file's contents from disk"),
        tool("files__write_file", "Writes text into a file, replacing it"),
        tool(
            "time__get_current_time",
            "Gives the current time in a timezone",
        ),
        tool("weather__forecast", "Tells the weather forecast for a city"),
        tool("git__commit", "Records staged changes in the repository"),
    ]
}

fn layer(table: &str) -> SearchLayer {
    toml::from_str::<SearchConfig>(table)
        .expect("parses")
        .validate()
        .expect("valid")
}

async fn call<S>(svc: &mut S, name: &str, arguments: Value) -> Value
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
{
    let params = json!({"name": name, "arguments": arguments});
    send(svc, Message::request(2, method::TOOLS_CALL, Some(params))).await
}

fn names(listing: &Value) -> Vec<&str> {
    listing["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect()
}

fn found(answer: &Value) -> Vec<&str> {
    answer["result"]["structuredContent"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect()
}

#[tokio::test]
async fn the_list_is_short_and_search_finds_the_rest() {
    let server = Server::new(tools());
    let mut svc = layer("always = [\"time__*\"]\nmax_results = 2").layer(server.service());
    let listing = send(&mut svc, Message::request(1, method::TOOLS_LIST, None)).await;
    assert_eq!(
        names(&listing),
        ["time__get_current_time", "search_tools", "call_tool"]
    );
    let answer = call(&mut svc, "search_tools", json!({"query": "read a file"})).await;
    let hits = found(&answer);
    assert_eq!(hits[0], "files__read_file", "{answer}");
    assert!(hits.len() <= 2);
    let first = &answer["result"]["structuredContent"]["tools"][0];
    assert_eq!(first["inputSchema"]["properties"]["path"]["type"], "string");
    let weather = call(
        &mut svc,
        "search_tools",
        json!({"query": "forecast for Paris"}),
    )
    .await;
    assert_eq!(found(&weather)[0], "weather__forecast");
    let only_git = call(
        &mut svc,
        "search_tools",
        json!({"query": "file", "server": "git"}),
    )
    .await;
    assert!(
        found(&only_git).iter().all(|n| n.starts_with("git__")),
        "{only_git}"
    );
}

#[tokio::test]
async fn call_tool_reaches_the_server_as_a_plain_call() {
    let server = Server::new(tools());
    let mut svc = layer("").layer(server.service());
    let params = json!({"name": "call_tool", "arguments": {"name": "files__read_file", "arguments": {"path": "/a"}},
                        "_meta": {"progressToken": 7}});
    let answer = send(
        &mut svc,
        Message::request(3, method::TOOLS_CALL, Some(params)),
    )
    .await;
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "ran \"files__read_file\""
    );
    let calls = server.calls.lock().expect("lock").clone();
    assert_eq!(
        calls,
        [
            json!({"name": "files__read_file", "arguments": {"path": "/a"}, "_meta": {"progressToken": 7}})
        ]
    );
    let bad = call(
        &mut svc,
        "call_tool",
        json!({"name": "files__read_file", "arguments": "x"}),
    )
    .await;
    assert_eq!(bad["result"]["isError"], true);
    let itself = call(&mut svc, "call_tool", json!({"name": "call_tool"})).await;
    assert_eq!(itself["result"]["isError"], true);
    assert_eq!(server.calls.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn what_a_filter_after_it_hides_is_never_found_nor_callable() {
    let server = Server::new(tools());
    let filter = FilterConfig {
        tools: AllowDenyConfig {
            allow: None,
            deny: vec!["*write*".into()],
        },
        ..FilterConfig::default()
    }
    .validate()
    .expect("valid");
    let mut svc = layer("describe = false").layer(filter.layer(server.service()));
    let answer = call(
        &mut svc,
        "search_tools",
        json!({"query": "write text into a file"}),
    )
    .await;
    assert!(!found(&answer).contains(&"files__write_file"), "{answer}");
    assert!(answer["result"]["structuredContent"]["tools"][0]
        .get("inputSchema")
        .is_none());
    let described = call(
        &mut svc,
        "describe_tool",
        json!({"name": "files__write_file"}),
    )
    .await;
    assert_eq!(described["result"]["isError"], true);
    let read = call(
        &mut svc,
        "describe_tool",
        json!({"name": "files__read_file"}),
    )
    .await;
    assert_eq!(
        read["result"]["structuredContent"]["name"],
        "files__read_file"
    );
    let refused = call(
        &mut svc,
        "call_tool",
        json!({"name": "files__write_file", "arguments": {}}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Unknown tool: files__write_file"
    );
    assert_eq!(refused["error"]["data"]["layer"], "filter");
    assert!(server.calls.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_changed_server_list_renews_the_index_not_the_short_list() {
    let server = Server::new(tools());
    let search = layer("");
    let mut svc = search.layer(server.service());
    let before = send(&mut svc, Message::request(1, method::TOOLS_LIST, None)).await;
    let miss = call(&mut svc, "search_tools", json!({"query": "translate"})).await;
    assert!(found(&miss).is_empty());
    server
        .tools
        .lock()
        .expect("lock")
        .push(tool("lang__translate", "Translates text between languages"));
    // The server says so: swallowed (the short list did not change).
    let said = Message::notification(method::NOTIFICATION_TOOLS_LIST_CHANGED, None);
    let passed = search
        .layer(service_fn(|env: Envelope| async move {
            Ok::<_, BoxError>(Some(env.message))
        }))
        .oneshot(Envelope::new(Direction::ToClient, said))
        .await
        .expect("handled");
    assert!(passed.is_none(), "not passed on");
    let hit = call(&mut svc, "search_tools", json!({"query": "translate"})).await;
    assert_eq!(found(&hit), ["lang__translate"]);
    let after = send(&mut svc, Message::request(1, method::TOOLS_LIST, None)).await;
    assert_eq!(before["result"], after["result"]);
}

#[tokio::test]
async fn a_huge_query_and_a_foreign_cursor_are_answered() {
    let server = Server::new(tools());
    let mut svc = layer("").layer(server.service());
    let huge = "file ".repeat(20_000) + &"word ".repeat(1_000);
    let answer = call(&mut svc, "search_tools", json!({"query": huge})).await;
    assert_eq!(
        found(&answer)[0]
            .split("__")
            .nth(1)
            .map(|n| n.contains("file")),
        Some(true)
    );
    let missing = call(&mut svc, "search_tools", json!({})).await;
    assert_eq!(missing["result"]["isError"], true);
    let paged = send(
        &mut svc,
        Message::request(1, method::TOOLS_LIST, Some(json!({"cursor": "x"}))),
    )
    .await;
    assert_eq!(paged["error"]["code"], -32602);
}

#[test]
fn settings_are_checked() {
    let bad = toml::from_str::<SearchConfig>("max_results = 0")
        .expect("parses")
        .validate();
    assert!(bad.unwrap_err().to_string().contains("max_results"));
    let bad = toml::from_str::<SearchConfig>("always = [\"re:(\"]")
        .expect("parses")
        .validate();
    assert!(bad.unwrap_err().to_string().contains("always[0]"));
}

#[test]
fn names_split_into_words() {
    assert_eq!(index::words("read_file"), "read file");
    assert_eq!(index::words("getCurrentTime"), "get Current Time");
    assert_eq!(index::words("HTTPServer-v2"), "HTTP Server v 2");
}

#[tokio::test]
async fn a_discovery_answer_carries_the_short_list() {
    let server = Server::new(tools());
    let tools_now = server.tools.clone();
    let discover = service_fn(move |env: Envelope| {
        let tools_now = tools_now.clone();
        async move {
            let Message::Request(req) = env.message else {
                return Ok::<_, BoxError>(None);
            };
            let listed = tools_now.lock().expect("lock").clone();
            Ok(Some(Message::response(
                req.id,
                json!({"tools": listed, "capabilities": {}}),
            )))
        }
    });
    let mut svc = layer("always = [\"git__*\"]").layer(discover);
    let found = send(&mut svc, Message::request(1, method::SERVER_DISCOVER, None)).await;
    assert_eq!(names(&found), ["git__commit", "search_tools", "call_tool"]);
    assert_eq!(found["result"]["capabilities"], json!({}));
}

#[tokio::test]
async fn a_listing_that_fails_is_not_kept() {
    let server = Server::new(tools());
    server
        .down
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let mut svc = layer("").layer(server.service());
    let answer = call(&mut svc, "search_tools", json!({"query": "read a file"})).await;
    assert!(found(&answer).is_empty());
    server
        .down
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let answer = call(&mut svc, "search_tools", json!({"query": "read a file"})).await;
    assert_eq!(
        found(&answer)[0],
        "files__read_file",
        "listed again: {answer}"
    );
}
