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

use crate::message::method;
use crate::payload::{Payload, Unreadable};
use serde_json::{Map, Value};

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

/// The embedded requests of a result or notification, by key, read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputRequests(Map<String, Value>);

impl InputRequests {
    /// The `inputRequests` of `payload`. `Ok(None)` when there is none;
    /// `Err` when there is one that is not an object, or the payload
    /// cannot be read.
    pub fn of(payload: &Payload) -> Result<Option<Self>, Unreadable> {
        match payload.member(INPUT_REQUESTS)? {
            None => Ok(None),
            Some(Value::Object(requests)) => Ok(Some(Self(requests))),
            Some(_) => Err(Unreadable::new(format!(
                "{INPUT_REQUESTS} is not an object"
            ))),
        }
    }

    /// The method each request names, `?` for one that names none that
    /// can be read.
    pub fn methods(&self) -> impl Iterator<Item = &str> {
        self.0.values().map(|r| method_of(r).unwrap_or("?"))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Keeps the requests whose method (`None`: unreadable) `keep`
    /// allows, and writes what is left back into `payload` when any was
    /// removed; the rest of the payload stays as it was. The methods of
    /// the removed ones, `?` for an unreadable one.
    pub fn retain_in(
        mut self,
        payload: &mut Payload,
        keep: impl Fn(Option<&str>) -> bool,
    ) -> Result<Vec<String>, Unreadable> {
        let mut removed = Vec::new();
        self.0.retain(|_, request| {
            let method = method_of(request);
            let kept = keep(method);
            if !kept {
                removed.push(method.unwrap_or("?").to_owned());
            }
            kept
        });
        if !removed.is_empty() {
            payload.set_member(INPUT_REQUESTS, Value::Object(self.0))?;
        }
        Ok(removed)
    }
}

fn method_of(request: &Value) -> Option<&str> {
    request.get("method")?.as_str()
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
        let methods: Vec<_> = read.methods().collect();
        assert_eq!(methods, ["sampling/createMessage", "?", "?"]);
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
        let read = InputRequests::of(&result)
            .expect("readable")
            .expect("there");
        let removed = read
            .retain_in(&mut result, |m| m != Some("sampling/createMessage"))
            .expect("an object");
        assert_eq!(removed, ["sampling/createMessage"]);
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
