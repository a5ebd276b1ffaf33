//! Tasks behind the gateway: a task belongs to the server that created
//! it. The client sees each task id with its server's prefix before it
//! (`files__3f2a…`), in a `tools/call` answered with a task, in
//! `tasks/get` and `tasks/list` answers, in `notifications/tasks/status`
//! and in the `related-task` of a server's messages; `tasks/get`,
//! `tasks/result`, `tasks/cancel` and `tasks/update` are routed by that
//! prefix and reach the server with its own id (`client.rs`). A task id
//! of one server can never address another's.

use crate::gateway::names::Names;
use serde_json::Value;

/// Where a task id may stand in what a server sends.
const RELATED: &str = "io.modelcontextprotocol/related-task";

/// Whether `payload` may name a task: a task's state or a created task,
/// or a `related-task` in its `_meta` (read one level deep: a big tool
/// result is not parsed again for this). Every one of those keys holds
/// `task`: a payload that cannot spell it is passed over with one search.
pub(super) fn may_name_a_task(payload: &mcp_chain_middleware::payload::Payload) -> bool {
    if !payload.may_spell("task") {
        return false;
    }
    let has = |name: &str| matches!(payload.member(name), Ok(Some(_)));
    has("taskId")
        || has("task")
        || matches!(payload.member("_meta"), Ok(Some(meta)) if meta.get(RELATED).is_some())
}

/// `edit` applied to `payload` when it may name a task.
pub(super) fn edited(
    payload: &mut mcp_chain_middleware::payload::Payload,
    edit: impl FnOnce(&mut Value),
) {
    if !may_name_a_task(payload) {
        return;
    }
    if let Ok(mut value) = payload.to_value() {
        edit(&mut value);
        *payload = value.into();
    }
}

/// Server `k`'s task ids in `value` (a result, or a notification's or a
/// request's params) as the client sees them.
pub(super) fn outward(names: &Names, k: usize, value: &mut Value) {
    let rename = |id: &mut Value| {
        if let Some(text) = id.as_str() {
            *id = Value::String(names.task(k, text));
        }
    };
    // A task's state (tasks/get, notifications), or a created task.
    if let Some(id) = value.get_mut("taskId") {
        rename(id);
    }
    if let Some(id) = value.pointer_mut("/task/taskId") {
        rename(id);
    }
    if let Some(id) = value
        .get_mut("_meta")
        .and_then(|m| m.get_mut(RELATED))
        .and_then(|r| r.get_mut("taskId"))
    {
        rename(id);
    }
}

/// The client's `related-task` in an answer to server `k`'s question,
/// back to the server's own id (one of another server's is left as is:
/// it names nothing of `k`'s).
pub(super) fn inward(names: &Names, k: usize, value: &mut Value) {
    let Some(id) = value
        .get_mut("_meta")
        .and_then(|m| m.get_mut(RELATED))
        .and_then(|r| r.get_mut("taskId"))
    else {
        return;
    };
    let theirs = id.as_str().and_then(|text| names.split(text));
    if let Some((_, theirs)) = theirs.filter(|(owner, _)| *owner == k) {
        *id = Value::String(theirs.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_chain_middleware::servers::ServerNames;
    use serde_json::json;

    #[test]
    fn a_task_id_carries_its_server() {
        let servers = [("a".into(), "a".into()), ("b".into(), "b".into())];
        let names = Names::new(std::sync::Arc::new(ServerNames::new("__", &servers)));
        let mut created = json!({"task": {"taskId": "t1", "status": "working"}});
        outward(&names, 1, &mut created);
        assert_eq!(created["task"]["taskId"], "b__t1");
        let mut state = json!({"taskId": "t1", "_meta": {RELATED: {"taskId": "t1"}}});
        outward(&names, 0, &mut state);
        assert_eq!(state["taskId"], "a__t1");
        assert_eq!(state["_meta"][RELATED]["taskId"], "a__t1");
        let mut answer = json!({"_meta": {RELATED: {"taskId": "a__t1"}}});
        inward(&names, 1, &mut answer);
        assert_eq!(answer["_meta"][RELATED]["taskId"], "a__t1", "not b's task");
        inward(&names, 0, &mut answer);
        assert_eq!(answer["_meta"][RELATED]["taskId"], "t1");
    }

    /// A server's result as received (text, not yet read).
    fn received(result: &str) -> mcp_chain_middleware::payload::Payload {
        use mcp_chain_middleware::message::Incoming;
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
        match Incoming::parse(line.as_bytes()) {
            Ok(Incoming::Single(Ok(mcp_chain_middleware::Message::Response(r)))) => r.result,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn a_task_id_spelled_with_escapes_is_renamed_and_a_plain_result_left_as_sent() {
        let servers = [("a".into(), "a".into())];
        let names = Names::new(std::sync::Arc::new(ServerNames::new("__", &servers)));
        let rename = |payload: &mut mcp_chain_middleware::payload::Payload| {
            edited(payload, |v| outward(&names, 0, v))
        };
        let mut escaped = received(r#"{"\u0074askId":"t1","status":"working"}"#);
        rename(&mut escaped);
        assert_eq!(escaped.to_value().expect("json")["taskId"], "a__t1");
        let mut related =
            received(r#"{"_meta":{"io.modelcontextprotocol/related-\u0074ask":{"taskId":"t2"}}}"#);
        rename(&mut related);
        assert_eq!(
            related.to_value().expect("json")["_meta"][RELATED]["taskId"],
            "a__t2"
        );
        let mut plain = received(r#"{"content":[{"type":"text","text":"done"}]}"#);
        rename(&mut plain);
        assert!(
            plain.is_untouched(),
            "a result naming no task is written as sent"
        );
    }
}
