//! What a 2026-07-28 server puts inside a result, where a layer that only
//! looked at messages would miss it:
//!
//! - **input requests**: a `tools/call`, `prompts/get` or `resources/read`
//!   result with `"resultType": "input_required"` (multi round-trip
//!   requests), a `tasks/get` result and a `notifications/tasks` for a
//!   task waiting on input, each carry server→client requests
//!   (`sampling/createMessage`, `elicitation/create`, `roots/list`) in an
//!   `inputRequests` map. Each is judged as the same request sent on its
//!   own would be ([`InputRequests`]).
//! - **cache hints**: `ttlMs` and `cacheScope` on listings and reads. A
//!   result a layer edited is one policy's view, not the server's, so a
//!   `"public"` scope would let a shared cache hand it to other callers:
//!   [`mark_private`].
//!
//! A task's inlined `result` is the result of the call that made it; the
//! rewrite layer redacts it like the call's own (see `rewrite`).

use crate::message::{method, Payload, Unreadable};
use serde_json::Value;

/// The member holding embedded server→client requests.
pub const INPUT_REQUESTS: &str = "inputRequests";
/// The member holding the client's answers to them, on a retry or a
/// `tasks/update`.
pub const INPUT_RESPONSES: &str = "inputResponses";

/// Whether the answer to `method` may carry `inputRequests`: the three
/// requests the multi round-trip flow is defined for, and `tasks/get`.
/// (Only these are read for them: a client looks nowhere else, and a
/// 10 MB answer to anything else is not searched.)
pub fn may_ask_for_input(method: &str) -> bool {
    matches!(
        method,
        method::TOOLS_CALL | method::PROMPTS_GET | method::RESOURCES_READ | method::TASKS_GET
    )
}

/// The embedded requests of a result or notification, by key, with the
/// method each names (`None` when it names none that can be read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputRequests(pub Vec<(String, Option<String>)>);

impl InputRequests {
    /// The `inputRequests` of `payload`. `Ok(None)` when there is none;
    /// `Err` when there is one that is not an object, or the payload
    /// cannot be read.
    pub fn of(payload: &Payload) -> Result<Option<Self>, Unreadable> {
        let Some(requests) = payload.member(INPUT_REQUESTS)? else {
            return Ok(None);
        };
        let Value::Object(requests) = requests else {
            return Err(Unreadable::new(format!(
                "{INPUT_REQUESTS} is not an object"
            )));
        };
        let method = |request: &Value| request.get("method")?.as_str().map(str::to_owned);
        let read = requests
            .iter()
            .map(|(key, request)| (key.clone(), method(request)));
        Ok(Some(Self(read.collect())))
    }

    /// The methods, for logs and audit lines; `?` for one that cannot be
    /// read.
    pub fn methods(&self) -> impl Iterator<Item = &str> {
        self.0
            .iter()
            .map(|(_, method)| method.as_deref().unwrap_or("?"))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Removes the embedded requests named by `keys` from `payload`'s
/// `inputRequests`; the other members stay as they were.
pub fn remove_input_requests(payload: &mut Payload, keys: &[&str]) -> Result<(), Unreadable> {
    let Some(Value::Object(mut requests)) = payload.member(INPUT_REQUESTS)? else {
        return Err(Unreadable::new(format!(
            "{INPUT_REQUESTS} is not an object"
        )));
    };
    requests.retain(|key, _| !keys.contains(&key.as_str()));
    payload.set_member(INPUT_REQUESTS, Value::Object(requests))
}

/// Whether a result says it is a multi round-trip request's interim
/// answer (`"resultType": "input_required"`).
pub fn is_input_required(result: &Payload) -> bool {
    matches!(result.member("resultType"), Ok(Some(t)) if t == "input_required")
}

/// Marks a result a layer edited as `"cacheScope": "private"` when the
/// server gave it a scope of another value (`ttlMs` is kept: the edited
/// view is as fresh as the server's). A result without hints gets none.
pub fn mark_private(result: &mut Payload) -> Result<(), Unreadable> {
    match result.member("cacheScope")? {
        Some(Value::String(scope)) if scope == "private" => Ok(()),
        Some(_) => result.set_member("cacheScope", Value::from("private")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_requests_are_read_with_their_methods() {
        let result = Payload::from(json!({"resultType": "input_required", "inputRequests": {
            "a": {"method": "sampling/createMessage", "params": {}},
            "b": {"method": 7}, "c": "nonsense"}}));
        let read = InputRequests::of(&result)
            .expect("readable")
            .expect("there");
        assert_eq!(
            read.0,
            [
                ("a".to_owned(), Some("sampling/createMessage".to_owned())),
                ("b".to_owned(), None),
                ("c".to_owned(), None)
            ]
        );
        assert!(is_input_required(&result));
        let none = Payload::from(json!({"content": []}));
        assert_eq!(InputRequests::of(&none).expect("readable"), None);
        let bad = Payload::from(json!({"inputRequests": ["sampling/createMessage"]}));
        assert!(InputRequests::of(&bad).is_err());
    }

    #[test]
    fn removing_keeps_the_rest_of_the_result() {
        let mut result = Payload::from(json!({"resultType": "input_required", "inputRequests": {
            "a": {"method": "sampling/createMessage"}, "b": {"method": "roots/list"}},
            "requestState": "s"}));
        remove_input_requests(&mut result, &["a"]).expect("an object");
        assert_eq!(
            result.to_value().expect("readable"),
            json!({"resultType": "input_required", "inputRequests": {"b": {"method": "roots/list"}},
                "requestState": "s"})
        );
    }

    #[test]
    fn only_a_scope_given_is_made_private() {
        for (scope, expected) in [
            (
                json!({"tools": [], "ttlMs": 5, "cacheScope": "public"}),
                json!({"tools": [], "ttlMs": 5, "cacheScope": "private"}),
            ),
            (
                json!({"tools": [], "cacheScope": "private"}),
                json!({"tools": [], "cacheScope": "private"}),
            ),
            (json!({"tools": []}), json!({"tools": []})),
            (
                json!({"tools": [], "cacheScope": 1}),
                json!({"tools": [], "cacheScope": "private"}),
            ),
        ] {
            let mut result = Payload::from(scope);
            mark_private(&mut result).expect("an object");
            assert_eq!(result.to_value().expect("readable"), expected);
        }
    }
}
