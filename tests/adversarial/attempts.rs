//! The bypass attempts, by class: each a line as a hostile client would
//! write it, or a tool call that makes the fixture server say what a
//! hostile server would (`send` writes lines, `fixtureReply` scripts a
//! result). Lines are written by hand where serde_json could not produce
//! them (duplicate keys, escapes).

use serde_json::{json, Value};

/// One attempt: the line the client sends, and how its answer is told.
pub(crate) struct Attempt {
    pub(crate) class: &'static str,
    pub(crate) line: String,
    pub(crate) answer: Answer,
}

pub(crate) enum Answer {
    /// A response or error with this id.
    Id(Value),
    /// A batch answer (an array).
    Batch,
}

fn raw(class: &'static str, id: &str, line: String) -> Attempt {
    Attempt {
        class,
        line,
        answer: Answer::Id(json!(id)),
    }
}

fn request(class: &'static str, id: &str, method: &str, params: Value) -> Attempt {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    raw(class, id, line.to_string())
}

/// A call of the allowed `echo` tool whose result the server scripts.
fn scripted(class: &'static str, id: &str, method: &str, reply: Value) -> Attempt {
    let params = json!({"name": "echo", "taskId": "t1", "fixtureReply": reply});
    request(class, id, method, params)
}

/// The server writes `lines` to the client while answering a call.
fn server_says(class: &'static str, id: &str, lines: Vec<Value>) -> Attempt {
    let params = json!({"name": "send", "arguments": {"lines": lines}});
    request(class, id, "tools/call", params)
}

const TOOLS: &str = "tool names";
const PROMPTS: &str = "prompt names";
const URIS: &str = "URI spellings";
const METHODS: &str = "methods, client to server";
const SERVER: &str = "server to client requests";
const SHAPES: &str = "2026-07-28 embedded requests";
const TASKS: &str = "task results and redaction";
const LISTS: &str = "listings and updates";
const ENVELOPE: &str = "envelope tricks";

/// Spellings of `file:///etc/passwd` and `mem://secret/key`.
pub(crate) const HIDDEN_URIS: [&str; 14] = [
    "file:///etc/passwd",
    "FILE:///etc/passwd",
    "file:///%65tc/passwd",
    "file:///tmp/../etc/passwd",
    "file:///etc/./passwd",
    "file:///x/%2e%2e/etc/passwd",
    "file://localhost/etc/passwd",
    "file:////etc//passwd",
    "file:///etc%2Fpasswd",
    "file:///etc%2fpasswd",
    "file:///etc\\passwd",
    "mem://SECRET/key",
    "mem://secret/x/../key",
    "Mem://secret/%6Bey",
];

pub(crate) fn all() -> Vec<Attempt> {
    let mut a = Vec::new();
    // Tool names: the hidden ones as written, escaped, duplicated.
    for (i, name) in ["crash", "garbage", "env", "env_dump"].iter().enumerate() {
        a.push(request(
            TOOLS,
            &format!("t{i}"),
            "tools/call",
            json!({"name": name}),
        ));
    }
    let lines = [
        r#"{"jsonrpc":"2.0","id":"t10","method":"tools/call","params":{"name":"echo","name":"crash"}}"#,
        r#"{"jsonrpc":"2.0","id":"t11","method":"tools/call","params":{"na\u006de":"crash"}}"#,
        r#"{"jsonrpc":"2.0","id":"t12","method":"tools/call","params":{"name":"cr\u0061sh"}}"#,
        r#"{"jsonrpc":"2.0","id":"t13","method":"tools/call","params":{"name":"\u0063rash","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":"t14","method":"tools/call","params":{"name":"echo","name":"env","name":"garbage"}}"#,
        r#"{"jsonrpc":"2.0","id":"t15","method":"tools/call","params":{"name":null}}"#,
        r#"{"jsonrpc":"2.0","id":"t16","method":"tools/call","params":{"name":7}}"#,
        r#"{"jsonrpc":"2.0","id":"t17","method":"tools/call","params":["crash"]}"#,
        r#"{"jsonrpc":"2.0","id":"t18","method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":"t19","method":"tools/call","params":{"name":"echo"},"params":{"name":"crash"}}"#,
        r#"{"jsonrpc":"2.0","id":"t20","method":"ping","method":"tools/call","params":{"name":"crash"}}"#,
        r#"{"jsonrpc":"2.0","id":"t21","method":"tools\/call","params":{"name":"crash"}}"#,
        r#"{"jsonrpc":"2.0","id":"t22","method":"tools/c\u0061ll","params":{"name":"env"}}"#,
        r#"{"jsonrpc":"2.0","id":"t23","method":"tools/call","params":{"name":"crash ","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":"t24","method":"tools/call","params":{"name":"CRASH"}}"#,
        r#"{"jsonrpc":"2.0","id":"t25","method":"tools/call","params":{"name":"сrash"}}"#,
        r#"{"jsonrpc":"2.0","id":"t26","method":"tools/call","params":{"name":"echo","arguments":{"name":"crash"}}}"#,
    ];
    for line in lines {
        let id = &line[line.find("\"t").expect("an id") + 1..][..3];
        a.push(raw(TOOLS, id, line.to_owned()));
    }
    // Prompts.
    a.push(request(
        PROMPTS,
        "p0",
        "prompts/get",
        json!({"name": "secret_prompt"}),
    ));
    a.push(raw(PROMPTS, "p1", r#"{"jsonrpc":"2.0","id":"p1","method":"prompts/get","params":{"name":"greet","name":"secret_prompt"}}"#.into()));
    a.push(raw(PROMPTS, "p2", r#"{"jsonrpc":"2.0","id":"p2","method":"prompts/get","params":{"name":"secret\u005fprompt"}}"#.into()));
    let complete = |name: &str| json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "a", "value": ""}});
    a.push(request(
        PROMPTS,
        "p3",
        "completion/complete",
        complete("secret_prompt"),
    ));
    a.push(raw(PROMPTS, "p4", r#"{"jsonrpc":"2.0","id":"p4","method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet","name":"secret_prompt"},"argument":{"name":"a","value":""}}}"#.into()));
    // URIs: every spelling, every method that names one, and templates.
    for (i, uri) in HIDDEN_URIS.iter().enumerate() {
        let method = [
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe",
        ][i % 3];
        a.push(request(URIS, &format!("u{i}"), method, json!({"uri": uri})));
    }
    for (i, uri) in [
        "file:///logs/{name}",
        "FILE:///logs/{name}",
        "file:///x/../logs/{name}",
    ]
    .iter()
    .enumerate()
    {
        let params = json!({"ref": {"type": "ref/resource", "uri": uri}, "argument": {"name": "name", "value": ""}});
        a.push(request(
            URIS,
            &format!("u{}", 20 + i),
            "completion/complete",
            params,
        ));
    }
    a.push(raw(URIS, "u30", r#"{"jsonrpc":"2.0","id":"u30","method":"resources/read","params":{"uri":"file:///srv/readme.txt","uri":"file:///etc/passwd"}}"#.into()));
    a.push(raw(URIS, "u31", r#"{"jsonrpc":"2.0","id":"u31","method":"resources/read","params":{"uri":"file:\/\/\/etc\/passwd"}}"#.into()));
    a.push(request(
        URIS,
        "u32",
        "resources/read",
        json!({"uri": "file:///logs/x"}),
    ));
    // Methods the client may not call.
    a.push(request(
        METHODS,
        "m0",
        "logging/setLevel",
        json!({"level": "debug"}),
    ));
    a.push(raw(
        METHODS,
        "m1",
        r#"{"jsonrpc":"2.0","id":"m1","method":"logging\/setLevel","params":{"level":"debug"}}"#
            .into(),
    ));
    a.push(raw(METHODS, "m2", r#"{"jsonrpc":"2.0","id":"m2","method":"ping","method":"logging/setLevel","params":{"level":"debug"}}"#.into()));
    a.push(raw(METHODS, "m3", r#"{"jsonrpc":"2.0","id":"m3","method":"logging/set\u004cevel","params":{"level":"debug"}}"#.into()));
    // Server to client requests, alone and in a batch, spelled oddly.
    for (i, method) in ["sampling/createMessage", "roots/list"].iter().enumerate() {
        let params = json!({"name": "ask", "arguments": {"method": method, "params": {}}});
        a.push(request(SERVER, &format!("s{i}"), "tools/call", params));
    }
    a.push(server_says(SERVER, "s2", vec![
        json!(r#"{"jsonrpc":"2.0","id":"x1","method":"sampling\/createMessage","params":{}}"#),
        json!(r#"{"jsonrpc":"2.0","id":"x2","method":"ping","method":"roots/list"}"#),
        json!([{"jsonrpc": "2.0", "id": "x3", "method": "sampling/createMessage", "params": {}},
               {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "ok"}}]),
    ]));
    // 2026-07-28: requests embedded in results.
    let sampling =
        json!({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}});
    let elicit = json!({"method": "elicitation/create", "params": {"message": "who?"}});
    for (i, method) in ["tools/call", "prompts/get", "resources/read"]
        .iter()
        .enumerate()
    {
        let reply = json!({"resultType": "input_required", "requestState": "s",
            "inputRequests": {"llm": sampling, "ask": elicit}});
        let params =
            json!({"name": "echo", "uri": "file:///srv/readme.txt", "fixtureReply": reply});
        a.push(request(SHAPES, &format!("e{i}"), method, params));
    }
    a.push(scripted(
        SHAPES,
        "e3",
        "tools/call",
        json!({"resultType": "input_required", "inputRequests": {"llm": sampling}}),
    ));
    a.push(scripted(
        SHAPES,
        "e4",
        "tools/call",
        json!({"resultType": "input_required", "inputRequests": [sampling]}),
    ));
    a.push(scripted(SHAPES, "e5", "tools/call", json!({"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}, "n": {"params": {}}, "ask": elicit}})));
    a.push(scripted(SHAPES, "e6", "tasks/get", json!({"resultType": "complete", "taskId": "t1", "status": "input_required", "inputRequests": {"llm": sampling}})));
    a.push(server_says(SHAPES, "e7", vec![
        json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {"taskId": "t1", "status": "input_required", "inputRequests": {"llm": sampling, "ask": elicit}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {"taskId": "t1", "status": "input_required", "inputRequests": "sampling/createMessage"}}),
        json!(r#"{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t1","status":"input_required","inputRequests":{"a":{"method":"elicitation/create","method":"sampling/createMessage"}}}}"#),
    ]));
    a.push(raw(SHAPES, "e8", r#"{"jsonrpc":"2.0","id":"e8","method":"tools/call","params":{"name":"echo","fixtureReply":{"resultType":"input_required","inputRequests":{"a":{"method":"sampling\/createMessage"}},"requestState":"s"}}}"#.into()));
    // Task results and other text that must be redacted.
    let secret_text = json!({"content": [{"type": "text", "text": format!("key {}", super::oracle::SECRET)}], "structuredContent": {"k": super::oracle::SECRET}});
    a.push(scripted(TASKS, "k0", "tasks/get", json!({"resultType": "complete", "taskId": "t1", "status": "completed", "result": secret_text})));
    a.push(scripted(TASKS, "k1", "tasks/result", secret_text.clone()));
    a.push(scripted(TASKS, "k2", "tools/call", secret_text.clone()));
    a.push(server_says(TASKS, "k3", vec![
        json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {"taskId": "t1", "status": "completed", "result": secret_text}}),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": {"leak": super::oracle::SECRET}}}),
    ]));
    a.push(request(
        TASKS,
        "k4",
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": super::oracle::SECRET}}),
    ));
    // Listings and updates the server sends with hidden items in them.
    let tools = json!({"tools": [{"name": "echo"}, {"name": "crash"}, {"name": "env_dump"}], "ttlMs": 1000, "cacheScope": "public"});
    a.push(scripted(LISTS, "l0", "tools/list", tools));
    let resources: Vec<Value> = HIDDEN_URIS
        .iter()
        .map(|u| json!({"uri": u, "name": "x"}))
        .collect();
    a.push(scripted(
        LISTS,
        "l1",
        "resources/list",
        json!({"resources": resources}),
    ));
    a.push(scripted(LISTS, "l2", "resources/templates/list", json!({"resourceTemplates": [{"uriTemplate": "FILE:///logs/{name}"}, {"uriTemplate": "file:///srv/{name}"}]})));
    a.push(scripted(LISTS, "l3", "server/discover", json!({"tools": [{"name": "garbage"}], "prompts": [{"name": "secret_prompt"}], "resources": resources})));
    a.push(scripted(
        LISTS,
        "l4",
        "prompts/list",
        json!({"prompts": [{"name": "secret_prompt"}, {"name": "greet"}]}),
    ));
    let updates = HIDDEN_URIS
        .iter()
        .map(|u| json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": u}}))
        .collect();
    a.push(server_says(LISTS, "l5", updates));
    // Batches mixing allowed and denied entries, and ids that collide.
    a.push(Attempt {
        class: ENVELOPE,
        line: json!([
            {"jsonrpc": "2.0", "id": "b0", "method": "tools/call", "params": {"name": "echo"}},
            {"jsonrpc": "2.0", "id": "b1", "method": "tools/call", "params": {"name": "crash"}},
            {"jsonrpc": "2.0", "id": "b2", "method": "resources/read", "params": {"uri": "FILE:///etc/passwd"}},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        ])
        .to_string(),
        answer: Answer::Batch,
    });
    a.push(Attempt {
        class: ENVELOPE,
        line: r#"[{"jsonrpc":"2.0","id":"b3","method":"tools/call","params":{"name":"env"}},{"jsonrpc":"2.0","id":"b3","method":"tools/call","params":{"name":"echo","name":"garbage"}}]"#.into(),
        answer: Answer::Batch,
    });
    a.push(request(
        ENVELOPE,
        "1",
        "tools/call",
        json!({"name": "crash"}),
    ));
    a.push(request(
        ENVELOPE,
        "1",
        "tools/call",
        json!({"name": "echo"}),
    ));
    a
}
