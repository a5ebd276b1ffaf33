//! Notes a layer leaves for the audit line of the request it is answering:
//! what it decided that the answer alone does not say (the size a result
//! had before `limit` cut it, the fields of a tool that drifted from its
//! pin, how the user answered `approve`).
//!
//! The audit layer opens a place for them around the answer it waits for
//! ([`collect`]); the layers inside it, while they work out that answer,
//! add to it ([`add`]). Every layer's answer is a future polled by the one
//! outside it, within one task, so the place is a task-local: no layer
//! needs to know whether an audit is there, and without one a note costs a
//! lookup that finds nothing. A note made in a layer's `call` (before the
//! request is passed on) is not seen: layers note what they learn from the
//! answer, or while they hold the request.

use serde_json::{Map, Value};
use std::cell::RefCell;
use std::future::Future;

tokio::task_local! {
    static NOTES: RefCell<Option<Map<String, Value>>>;
}

/// Adds `value` under `layer` to the notes of the request being answered,
/// when an audit layer outside this one is collecting them. A second note
/// of the same layer replaces the first.
pub fn add(layer: &str, value: Value) {
    let _ = NOTES.try_with(|notes| {
        notes
            .borrow_mut()
            .get_or_insert_with(Map::new)
            .insert(layer.to_owned(), value);
    });
}

/// Runs `answer` with a place for notes; its output and what the layers
/// inside noted, by layer name (`None` when nothing was).
pub async fn collect<F: Future>(answer: F) -> (F::Output, Option<Map<String, Value>>) {
    let mut scoped = std::pin::pin!(NOTES.scope(RefCell::new(None), answer));
    let output = (&mut scoped).await;
    let notes = scoped.as_mut().take_value().and_then(RefCell::into_inner);
    (output, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn notes_made_while_answering_are_collected() {
        let (out, notes) = collect(async {
            tokio::task::yield_now().await;
            add("limit", json!({"size": 10}));
            add("pin", json!(1));
            add("pin", json!(2));
            7
        })
        .await;
        assert_eq!(out, 7);
        assert_eq!(
            Value::Object(notes.expect("noted")),
            json!({"limit": {"size": 10}, "pin": 2})
        );
    }

    #[tokio::test]
    async fn nothing_noted_is_none_and_a_note_without_audit_goes_nowhere() {
        let (_, notes) = collect(async {}).await;
        assert!(notes.is_none());
        add("limit", json!(1)); // no place open: ignored, no panic
    }

    #[tokio::test]
    async fn an_inner_collection_keeps_its_own_notes() {
        let (_, outer) = collect(async {
            let (_, inner) = collect(async { add("approve", json!("inner")) }).await;
            assert_eq!(inner.expect("inner noted")["approve"], "inner");
            add("limit", json!("outer"));
        })
        .await;
        assert_eq!(
            Value::Object(outer.expect("outer noted")),
            json!({"limit": "outer"})
        );
    }
}
