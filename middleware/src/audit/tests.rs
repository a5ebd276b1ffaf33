use super::*;
use crate::config_error::keys;
use crate::message::method;
use crate::rate_limit::RateLimitConfig;
use crate::{BoxError, Direction, Envelope, ErrorCode, ErrorObject, Message};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use tower::{Layer, Service, ServiceExt};

/// A log file of its own for each test, removed when the test ends.
struct TempLog(PathBuf);

impl TempLog {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("mcp-chain-audit-test-{}-{n}.jsonl", std::process::id());
        let path = std::env::temp_dir().join(name);
        let _ = std::fs::remove_file(&path);
        Self(path)
    }

    fn path(&self) -> String {
        self.0
            .to_str()
            .expect("temp paths are UTF-8 here")
            .to_owned()
    }

    /// The lines written so far, once the runtime has run what it had in
    /// hand: the audit layer writes answers' lines at the end of a burst.
    async fn lines(&self) -> Vec<Value> {
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        read_lines(&self.0)
    }

    fn layer(&self, extra: Value) -> AuditLayer {
        let mut config = json!({"path": self.path()});
        if let (Some(c), Value::Object(extra)) = (config.as_object_mut(), extra) {
            c.extend(extra);
        }
        serde_json::from_value::<AuditConfig>(config)
            .expect("config parses")
            .validate()
            .expect("config is valid")
    }
}

impl Drop for TempLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn read_lines(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

fn call(id: u64, tool: &str) -> Envelope {
    let params = json!({"name": tool, "arguments": {"q": "rust"}});
    Envelope::new(
        Direction::ToServer,
        Message::request(id, method::TOOLS_CALL, Some(params)),
    )
}

/// A server whose every request gets `answer(id)`.
fn answering(
    answer: impl Fn(crate::RequestId) -> Result<Option<Message>, BoxError> + Clone + Send + 'static,
) -> impl Service<Envelope, Response = Option<Message>, Error = BoxError, Future = impl Send + 'static>
       + Clone {
    tower::service_fn(move |env: Envelope| {
        let out = match env.message {
            Message::Request(r) => answer(r.id),
            _ => Ok(None),
        };
        async move { out }
    })
}

#[tokio::test]
async fn request_line_is_on_disk_before_the_request_is_forwarded() {
    let log = TempLog::new();
    let path = log.0.clone();
    let svc = log
        .layer(json!({}))
        .layer(tower::service_fn(move |env: Envelope| {
            // The server's side of the world: the line must already be there.
            let lines = read_lines(&path);
            assert_eq!(lines.len(), 1, "request line written before forwarding");
            assert_eq!(lines[0]["kind"], "request");
            let id = env.message.id().cloned().expect("request");
            async move { Ok::<_, BoxError>(Some(Message::response(id, json!({"content": []})))) }
        }));
    let answer = svc.oneshot(call(4, "search")).await.expect("answered");
    assert!(matches!(answer, Some(Message::Response(_))));

    let lines = log.lines().await;
    assert_eq!(lines.len(), 2);
    let (req, resp) = (&lines[0], &lines[1]);
    assert_eq!(req["direction"], "client_to_server");
    assert_eq!(
        (&req["id"], &req["method"], &req["tool"]),
        (&json!(4), &json!("tools/call"), &json!("search"))
    );
    assert!(req["size"].as_u64().expect("size") > 0);
    assert!(req.get("params").is_none(), "no payloads unless asked");
    assert_eq!(resp["kind"], "response");
    assert_eq!(
        (&resp["id"], &resp["tool"], &resp["outcome"]),
        (&json!(4), &json!("search"), &json!("ok"))
    );
    assert!(resp["duration_ms"].is_f64() || resp["duration_ms"].is_u64());
    assert!(resp.get("result").is_none());
    let time = req["time"].as_str().expect("time");
    // 2025-06-18T09:30:00.123456Z
    assert_eq!(
        (time.len(), &time[10..11], &time[19..20], &time[26..]),
        (27, "T", ".", "Z"),
        "{time}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn file_is_created_0600_and_appended_to() {
    use std::os::unix::fs::PermissionsExt;
    let log = TempLog::new();
    let svc = log
        .layer(json!({}))
        .layer(answering(|id| Ok(Some(Message::response(id, json!({}))))));
    let mode = std::fs::metadata(&log.0)
        .expect("created at load")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    svc.oneshot(call(1, "a")).await.expect("ok");
    assert_eq!(log.lines().await.len(), 2);
    // A second layer (a restart) appends to what is there.
    let svc = log
        .layer(json!({}))
        .layer(answering(|id| Ok(Some(Message::response(id, json!({}))))));
    svc.oneshot(call(2, "b")).await.expect("ok");
    let ids: Vec<Value> = log.lines().await.iter().map(|l| l["id"].clone()).collect();
    assert_eq!(ids, vec![json!(1), json!(1), json!(2), json!(2)]);
}

#[tokio::test]
async fn payloads_are_recorded_when_asked() {
    let log = TempLog::new();
    let svc = log.layer(json!({"payloads": true})).layer(answering(|id| {
        Ok(Some(Message::response(
            id,
            json!({"content": [{"type": "text", "text": "hi"}]}),
        )))
    }));
    svc.oneshot(call(1, "search")).await.expect("ok");
    let lines = log.lines().await;
    assert_eq!(lines[0]["params"]["arguments"], json!({"q": "rust"}));
    assert_eq!(lines[1]["result"]["content"][0]["text"], "hi");
}

/// The outcome line for one answer from the inner service.
async fn outcome_of(answer: Result<Option<Message>, BoxError>) -> Value {
    let log = TempLog::new();
    let answer = std::sync::Arc::new(std::sync::Mutex::new(Some(answer)));
    let svc = log.layer(json!({})).layer(answering(move |_| {
        answer.lock().expect("lock").take().expect("answered once")
    }));
    let _ = svc.oneshot(call(1, "t")).await;
    log.lines().await.pop().expect("a response line")
}

#[tokio::test]
async fn outcomes_name_who_answered_and_how() {
    let id = || Some(crate::RequestId::from(1));
    let tool_error = Message::response(1.into(), json!({"isError": true, "content": []}));
    assert_eq!(
        outcome_of(Ok(Some(tool_error))).await["outcome"],
        "tool_error"
    );

    let server_error = Message::error(id(), ErrorObject::new(ErrorCode(-32602), "no such tool"));
    let line = outcome_of(Ok(Some(server_error))).await;
    assert_eq!(
        (&line["outcome"], &line["code"]),
        (&json!("error"), &json!(-32602))
    );
    assert!(line.get("layer").is_none());

    let denied = ErrorObject::new(ErrorCode::INVALID_PARAMS, "Unknown tool: t")
        .with_data(json!({"layer": "filter", "reason": "denied"}));
    let line = outcome_of(Ok(Some(Message::error(id(), denied)))).await;
    assert_eq!(
        (&line["outcome"], &line["layer"], &line["reason"]),
        (&json!("denied"), &json!("filter"), &json!("denied"))
    );

    let limited = ErrorObject::refusal(
        ErrorCode::RATE_LIMITED,
        "rate_limit",
        "rate_limited",
        "slow down",
    );
    assert_eq!(
        outcome_of(Ok(Some(Message::error(id(), limited)))).await["outcome"],
        "rate_limited"
    );
    let timed_out = ErrorObject::refusal(
        ErrorCode::REQUEST_TIMEOUT,
        "timeout",
        "timed_out",
        "too slow",
    );
    assert_eq!(
        outcome_of(Ok(Some(Message::error(id(), timed_out)))).await["outcome"],
        "timed_out"
    );
    let gone = ErrorObject::new(ErrorCode::CONNECTION_CLOSED, "mcp-chain: connection closed")
        .with_data(json!({"layer": "upstream", "reason": "connection_closed"}));
    assert_eq!(
        outcome_of(Ok(Some(Message::error(id(), gone)))).await["outcome"],
        "error"
    );

    assert_eq!(outcome_of(Ok(None)).await["outcome"], "cancelled");
    let line = outcome_of(Err("pipe broken".into())).await;
    assert_eq!(
        (&line["outcome"], &line["failure"]),
        (&json!("failed"), &json!("pipe broken"))
    );
}

#[tokio::test]
async fn a_result_is_recorded_without_being_parsed() {
    // A big result as it arrives from the server: the outcome line needs
    // only isError, and the result must leave as the server's bytes.
    let log = TempLog::new();
    let svc = log.layer(json!({})).layer(answering(|_| {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{}"}}],"isError":true}}}}"#,
            "x".repeat(100_000)
        );
        match crate::message::Incoming::parse(line.as_bytes()) {
            Ok(crate::message::Incoming::Single(Ok(msg))) => Ok(Some(msg)),
            other => panic!("a response, not {other:?}"),
        }
    }));
    let out = svc.oneshot(call(1, "t")).await.expect("answered");
    let Some(Message::Response(resp)) = &out else {
        panic!("a response, not {out:?}");
    };
    assert!(resp.result.is_untouched());
    let line = log.lines().await.pop().expect("a response line");
    assert_eq!(line["outcome"], "tool_error");
    assert!(line["size"].as_u64().is_some_and(|n| n > 100_000), "{line}");
}

#[tokio::test]
async fn only_tool_results_are_tool_errors() {
    // `isError` means a failed tool run only in a tool's result; a listing
    // that happens to carry the word is an ordinary answer.
    for (method, outcome) in [
        (method::TOOLS_CALL, "tool_error"),
        (method::TASKS_RESULT, "tool_error"),
        (method::TASKS_GET, "ok"),
        (method::TOOLS_LIST, "ok"),
        (method::RESOURCES_READ, "ok"),
    ] {
        let log = TempLog::new();
        let svc = log.layer(json!({})).layer(answering(|id| {
            Ok(Some(Message::response(id, json!({"isError": true}))))
        }));
        let request = Message::request(1, method, Some(json!({})));
        let _ = svc
            .oneshot(Envelope::new(Direction::ToServer, request))
            .await;
        let line = log.lines().await.pop().expect("a response line");
        assert_eq!(line["outcome"], outcome, "{method}");
    }
}

#[tokio::test]
async fn requests_embedded_in_results_and_task_notifications_are_recorded() {
    let requests = json!({
        "a": {"method": "sampling/createMessage"}, "b": {"method": "elicitation/create"}});
    let asking = json!({"resultType": "input_required", "inputRequests": requests});
    // A task's state is a complete answer to `tasks/get`, whatever it asks.
    let task = json!({"resultType": "complete", "taskId": "t", "status": "input_required",
        "inputRequests": requests});
    for (method, result, outcome, recorded) in [
        (method::TOOLS_CALL, &asking, "input_required", true),
        (method::RESOURCES_READ, &asking, "input_required", true),
        (method::TASKS_GET, &task, "ok", true),
        // No client looks for them in a listing; neither does the audit.
        (method::TOOLS_LIST, &asking, "ok", false),
    ] {
        let log = TempLog::new();
        let result = result.clone();
        let svc = log.layer(json!({})).layer(answering(move |id| {
            Ok(Some(Message::response(id, result.clone())))
        }));
        let request = Message::request(1, method, Some(json!({})));
        let _ = svc
            .oneshot(Envelope::new(Direction::ToServer, request))
            .await;
        let line = log.lines().await.pop().expect("a response line");
        assert_eq!(line["outcome"], outcome, "{method}");
        let methods = json!(["sampling/createMessage", "elicitation/create"]);
        assert_eq!(
            line.get("input_requests") == Some(&methods),
            recorded,
            "{method}"
        );
    }
    // A completed task's inlined result is a tool result.
    let log = TempLog::new();
    let svc = log.layer(json!({})).layer(answering(|id| {
        let task = json!({"taskId": "t", "status": "completed", "result": {"isError": true}});
        Ok(Some(Message::response(id, task)))
    }));
    let request = Message::request(1, method::TASKS_GET, Some(json!({"taskId": "t"})));
    let _ = svc
        .oneshot(Envelope::new(Direction::ToServer, request))
        .await;
    let line = log.lines().await.pop().expect("a response line");
    assert_eq!(line["outcome"], "tool_error");
    let log = TempLog::new();
    let svc = log.layer(json!({})).layer(answering(|_| Ok(None)));
    let note = Message::notification(
        method::NOTIFICATION_TASKS,
        Some(json!({
        "taskId": "t", "status": "input_required", "inputRequests": {"x": {"method": "roots/list"}}})),
    );
    let _ = svc.oneshot(Envelope::new(Direction::ToClient, note)).await;
    let line = log.lines().await.pop().expect("a notification line");
    assert_eq!(line["input_requests"], json!(["roots/list"]));
}

#[tokio::test]
async fn placed_first_it_records_the_refusals_of_later_layers() {
    let log = TempLog::new();
    let limit: RateLimitConfig =
        serde_json::from_value(json!({"rules": [{"tool": "search", "rate": "1/min"}]}))
            .expect("parses");
    let inner = limit
        .validate()
        .expect("valid")
        .layer(answering(|id| Ok(Some(Message::response(id, json!({}))))));
    let mut svc = log.layer(json!({})).layer(inner);
    for id in 1..=2 {
        svc.ready()
            .await
            .expect("ready")
            .call(call(id, "search"))
            .await
            .expect("answered");
    }
    let lines = log.lines().await;
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[1]["outcome"], "ok");
    assert_eq!(
        (&lines[3]["outcome"], &lines[3]["layer"], &lines[3]["code"]),
        (&json!("rate_limited"), &json!("rate_limit"), &json!(429))
    );
}

/// `limit` inside the audit: the answer's line says what the server sent
/// and what the client got.
#[tokio::test]
async fn the_notes_of_later_layers_go_in_the_answer_line() {
    let log = TempLog::new();
    let limit: crate::limit::LimitConfig =
        serde_json::from_value(json!({"max_result_bytes": 200, "action": "truncate"}))
            .expect("parses");
    let big = "x".repeat(1000);
    let inner = limit.validate().expect("valid").layer(answering(move |id| {
        let result = json!({"content": [{"type": "text", "text": big.clone()}]});
        Ok(Some(Message::response(id, result)))
    }));
    let svc = log.layer(json!({})).layer(inner);
    svc.oneshot(call(1, "read")).await.expect("answered");
    let lines = log.lines().await;
    assert_eq!(lines.len(), 2);
    assert!(lines[0].get("notes").is_none(), "{}", lines[0]);
    let note = &lines[1]["notes"]["limit"];
    assert_eq!(note["action"], "truncated");
    assert_eq!(note["limit"], 200);
    let (original, delivered) = (&note["original_bytes"], &note["delivered_bytes"]);
    assert!(original.as_u64() > Some(1000), "{note}");
    assert!(
        delivered.as_u64() <= Some(200) && delivered.as_u64() > Some(0),
        "{note}"
    );
    assert_eq!(
        lines[1]["size"].as_u64().map(|s| s > 200),
        Some(true),
        "the whole answer's size"
    );
}

#[tokio::test]
async fn notifications_and_server_requests_get_lines_too() {
    let log = TempLog::new();
    let l = log.layer(json!({}));
    let mut to_client = l.layer(answering(|id| Ok(Some(Message::response(id, json!({}))))));
    let note = Message::notification(
        method::NOTIFICATION_RESOURCES_UPDATED,
        Some(json!({"uri": "file:///a"})),
    );
    let out = to_client
        .ready()
        .await
        .expect("ready")
        .call(Envelope::new(Direction::ToClient, note))
        .await;
    assert_eq!(out.expect("passes"), None);
    let sampling = Message::request("s1", method::SAMPLING_CREATE_MESSAGE, Some(json!({})));
    to_client
        .ready()
        .await
        .expect("ready")
        .call(Envelope::new(Direction::ToClient, sampling))
        .await
        .expect("ok");
    let lines = log.lines().await;
    assert_eq!(lines.len(), 3);
    assert_eq!(
        (
            &lines[0]["kind"],
            &lines[0]["direction"],
            &lines[0]["resource"]
        ),
        (
            &json!("notification"),
            &json!("server_to_client"),
            &json!("file:///a")
        )
    );
    assert!(lines[0].get("id").is_none());
    assert_eq!(
        (&lines[1]["kind"], &lines[1]["id"]),
        (&json!("request"), &json!("s1"))
    );
    assert_eq!(
        (
            &lines[2]["kind"],
            &lines[2]["direction"],
            &lines[2]["outcome"]
        ),
        (&json!("response"), &json!("server_to_client"), &json!("ok"))
    );
}

#[tokio::test]
async fn an_abandoned_request_still_gets_its_outcome_line() {
    let log = TempLog::new();
    let mut svc = log
        .layer(json!({}))
        .layer(tower::service_fn(|_env: Envelope| async {
            std::future::pending::<Result<Option<Message>, BoxError>>().await
        }));
    let fut = svc.ready().await.expect("ready").call(call(1, "stuck"));
    drop(fut);
    let lines = log.lines().await;
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["outcome"], "abandoned");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_request_that_cannot_be_recorded_is_refused() {
    let forwarded = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = forwarded.clone();
    let server = tower::service_fn(move |env: Envelope| {
        seen.fetch_add(1, Ordering::SeqCst);
        let id = env.message.id().cloned();
        async move { Ok::<_, BoxError>(id.map(|id| Message::response(id, json!({})))) }
    });
    // /dev/full opens fine and fails every write with ENOSPC.
    let full = |extra: Value| {
        let mut c = json!({"path": "/dev/full"});
        c.as_object_mut()
            .expect("object")
            .extend(extra.as_object().cloned().unwrap_or_default());
        serde_json::from_value::<AuditConfig>(c)
            .expect("parses")
            .validate()
            .expect("opens")
    };
    let answer = full(json!({}))
        .layer(server.clone())
        .oneshot(call(7, "rm"))
        .await
        .expect("answered");
    let Some(Message::Error(e)) = answer else {
        panic!("expected a refusal, got {answer:?}")
    };
    assert_eq!((e.id, e.error.code), (Some(7.into()), ErrorCode::REFUSED));
    assert!(
        e.error.message.starts_with("mcp-chain audit: "),
        "{}",
        e.error.message
    );
    let data = e.error.data.expect("data");
    assert_eq!(
        (&data["layer"], &data["reason"]),
        (&json!("audit"), &json!("audit_write_failed"))
    );
    assert_eq!(forwarded.load(Ordering::SeqCst), 0, "never forwarded");

    // Notifications cannot be refused; they go on.
    let note = Envelope::new(
        Direction::ToServer,
        Message::notification(method::NOTIFICATION_INITIALIZED, None),
    );
    full(json!({}))
        .layer(server.clone())
        .oneshot(note)
        .await
        .expect("passes");
    assert_eq!(forwarded.load(Ordering::SeqCst), 1);

    let answer = full(json!({"on_write_error": "forward"}))
        .layer(server)
        .oneshot(call(8, "rm"))
        .await;
    assert!(matches!(answer, Ok(Some(Message::Response(_)))));
    assert_eq!(forwarded.load(Ordering::SeqCst), 2);
}

#[test]
fn config_errors_name_the_key() {
    let parse = |v: Value| serde_json::from_value::<AuditConfig>(v);
    assert!(
        parse(json!({"path": "-", "payload": true})).is_err(),
        "unknown key"
    );
    assert!(parse(json!({"path": "-", "on_write_error": "ignore"})).is_err());
    assert!(parse(json!({})).is_err(), "path is required");
    let err = parse(json!({"path": ""}))
        .expect("parses")
        .validate()
        .expect_err("empty");
    assert_eq!(err.at, keys!["path"], "{err}");
    // Missing directories are created; a path through a file cannot be.
    let file = std::env::temp_dir().join(format!("mcp-chain-audit-file-{}", std::process::id()));
    std::fs::write(&file, b"").expect("a file");
    let err = parse(json!({"path": file.join("x").join("audit.jsonl")}))
        .expect("parses")
        .validate()
        .expect_err("cannot open");
    let _ = std::fs::remove_file(&file);
    assert_eq!(err.at, keys!["path"], "{err}");
    assert!(err.message.starts_with("cannot open"), "{err}");
    assert!(parse(json!({"path": "-"}))
        .expect("parses")
        .validate()
        .is_ok());
}

#[test]
fn queued_lines_go_out_in_order_before_a_request_line() {
    use super::sink::{Queued, Sink};
    let line = |n: u32| {
        move |out: &mut Vec<u8>| out.extend_from_slice(format!("{{\"n\":{n}}}\n").as_bytes())
    };
    let log = TempLog::new();
    let sink = Sink::open(&log.path()).expect("opens");
    assert!(matches!(sink.write_later(line(1)), Queued::NeedsFlush));
    assert!(matches!(sink.write_later(line(2)), Queued::Done));
    assert!(read_lines(&log.0).is_empty(), "queued, not written");
    // A request's line is written at once, after what was queued.
    sink.write_now(line(3)).expect("writes");
    assert!(matches!(sink.write_later(line(4)), Queued::NeedsFlush));
    sink.flush().expect("writes");
    assert!(matches!(sink.write_later(line(5)), Queued::NeedsFlush));
    // Whatever is queued when the layer goes away is written too.
    drop(sink);
    let n: Vec<Value> = read_lines(&log.0).iter().map(|l| l["n"].clone()).collect();
    assert_eq!(n, (1..=5).map(Value::from).collect::<Vec<_>>());
}

#[test]
fn a_full_queue_is_written_without_waiting_for_a_flush() {
    use super::sink::Sink;
    let log = TempLog::new();
    let sink = Sink::open(&log.path()).expect("opens");
    let line = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(1000));
    for _ in 0..100 {
        let _ = sink.write_later(|out| out.extend_from_slice(line.as_bytes()));
    }
    // 100 KB queued: at least the first 64 KB were written on the way.
    assert!(read_lines(&log.0).len() >= 60);
}

#[tokio::test]
async fn answer_lines_are_written_once_the_burst_is_dealt_with() {
    let log = TempLog::new();
    let mut svc = log
        .layer(json!({}))
        .layer(answering(|id| Ok(Some(Message::response(id, json!({}))))));
    for id in 1..=3 {
        svc.ready()
            .await
            .expect("ready")
            .call(call(id, "a"))
            .await
            .expect("answered");
    }
    // The three requests' lines were written as they passed; the answers'
    // are queued behind the last one, and follow when the task yields.
    let now: Vec<Value> = read_lines(&log.0)
        .iter()
        .map(|l| l["kind"].clone())
        .collect();
    assert_eq!(now.iter().filter(|k| *k == "request").count(), 3);
    let kinds: Vec<Value> = log
        .lines()
        .await
        .iter()
        .map(|l| l["kind"].clone())
        .collect();
    assert_eq!(kinds.len(), 6);
    assert_eq!(kinds.iter().filter(|k| *k == "response").count(), 3);
}
