//! A check's budget. The schemas come from the server, and JSON Schema
//! lets a few kilobytes ask for unbounded work: `anyOf` over `$ref`s
//! nested forty deep is 2^40 steps, and a check runs on the thread that
//! serves every other message. So each check has a budget of steps, and
//! one that runs out refuses the call (fail closed) instead of stalling
//! the proxy.
//!
//! A step is one visit of a subschema. Every subschema of a compiled
//! schema gets one more keyword, first in its object, that takes a step
//! from the check's budget and fails once there is none: a schema node is
//! judged keyword by keyword and stops at the first that fails, so past
//! the budget every node costs one step's work and the check unwinds
//! quickly, whatever the schema's shape. Regular expressions are bounded
//! apart (`compile`): a backtracking limit per match.

use jsonschema::paths::{LazyLocation, Location};
use jsonschema::{Keyword, PatternOptions, ValidationError, Validator};
use serde_json::{Map, Value};
use std::cell::Cell;

/// The keyword added to every subschema. A name no server's schema uses
/// (it is not a URI fragment or a JSON Schema keyword).
const STEP: &str = "mcp-chain budget step";

/// Steps a pattern match may backtrack before it counts as a failure.
const BACKTRACK_LIMIT: usize = 100_000;

/// Keywords whose values are data, not subschemas: never touched.
const DATA: [&str; 4] = ["enum", "const", "default", "examples"];
/// Keywords whose values are maps of names to subschemas: the map's keys
/// are names (a property called like the step keyword is still a property).
const MAPS: [&str; 7] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
    "dependentRequired",
];

thread_local! {
    /// The steps the check running on this thread has left; `None` when
    /// no check runs. A check is synchronous from start to end, so a
    /// thread's counter is exactly that check's.
    static LEFT: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Compiles `schema` with its budget keyword in every subschema.
pub(super) fn compile(schema: &Value) -> Result<Validator, ValidationError<'static>> {
    jsonschema::options()
        .with_keyword(STEP, |_, _, _| Ok(Box::new(Step)))
        .with_pattern_options(PatternOptions::fancy_regex().backtrack_limit(BACKTRACK_LIMIT))
        .build(&instrumented(schema))
}

/// Runs `check` with `steps` to spend. `None` when it ran out of them (its
/// verdict then means nothing).
pub(super) fn within<T>(steps: u64, check: impl FnOnce() -> T) -> Option<T> {
    let before = LEFT.replace(Some(steps));
    let verdict = check();
    let left = LEFT.replace(before);
    (left != Some(0)).then_some(verdict)
}

/// Takes a step; `false` when there is none left.
fn step() -> bool {
    LEFT.with(|left| match left.get() {
        None => true,
        Some(0) => false,
        Some(n) => {
            left.set(Some(n - 1));
            true
        }
    })
}

struct Step;

impl Keyword for Step {
    fn validate<'i>(
        &self,
        instance: &'i Value,
        location: &LazyLocation,
    ) -> Result<(), ValidationError<'i>> {
        if step() {
            return Ok(());
        }
        let message = "the check ran out of its budget of steps";
        Err(ValidationError::custom(
            Location::new(),
            location.into(),
            instance,
            message,
        ))
    }

    fn is_valid(&self, _instance: &Value) -> bool {
        step()
    }
}

/// `schema` with the step keyword first in every subschema object.
fn instrumented(schema: &Value) -> Value {
    match schema {
        Value::Object(members) => {
            let mut out = Map::with_capacity(members.len() + 1);
            out.insert(STEP.to_owned(), Value::Bool(true));
            for (key, value) in members {
                let value = match key.as_str() {
                    k if DATA.contains(&k) => value.clone(),
                    k if MAPS.contains(&k) => match value {
                        Value::Object(map) => Value::Object(
                            map.iter()
                                .map(|(name, sub)| (name.clone(), instrumented(sub)))
                                .collect(),
                        ),
                        other => instrumented(other),
                    },
                    _ => instrumented(value),
                };
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(instrumented).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// `anyOf` of two `$ref`s to the next level, `depth` levels, the last
    /// one never matching: 2^depth visits without a budget.
    pub(crate) fn exponential(depth: usize) -> Value {
        let mut defs = Map::new();
        for level in 0..depth {
            let next = json!({"$ref": format!("#/$defs/l{}", level + 1)});
            defs.insert(format!("l{level}"), json!({"anyOf": [next.clone(), next]}));
        }
        defs.insert(format!("l{depth}"), json!({"type": "string"}));
        json!({"$defs": defs, "$ref": "#/$defs/l0"})
    }

    #[test]
    fn a_schema_asking_for_unbounded_work_runs_out_of_its_budget() {
        let validator = compile(&exponential(40)).expect("compiles");
        assert_eq!(within(10_000, || validator.is_valid(&json!(1))), None);
        let small = compile(&exponential(3)).expect("compiles");
        assert_eq!(within(10_000, || small.is_valid(&json!(1))), Some(false));
        assert_eq!(within(10_000, || small.is_valid(&json!("a"))), Some(true));
    }

    #[test]
    fn the_step_keyword_changes_no_verdict() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"enum": [{"x": 1}]}, "b": {"const": {"y": 2}}},
            "required": ["a"],
            "additionalProperties": false,
            "$defs": {"n": {"type": "integer"}},
            "patternProperties": {"^c": {"$ref": "#/$defs/n"}}
        });
        let validator = compile(&schema).expect("compiles");
        let run = |v: Value| within(1000, || validator.is_valid(&v)).expect("within budget");
        assert!(run(json!({"a": {"x": 1}, "b": {"y": 2}, "c1": 3})));
        assert!(!run(json!({"a": {"x": 1}, "c1": "no"})));
        assert!(!run(json!({"a": {"x": 1, STEP: true}})));
        assert!(!run(json!({"a": {"x": 1}, "other": 1})));
        assert!(!run(json!({"b": {"y": 2}})));
    }

    #[test]
    fn a_catastrophic_pattern_is_cut_short() {
        let validator =
            compile(&json!({"type": "string", "pattern": "^(a+)+$"})).expect("compiles");
        let evil = Value::String(format!("{}!", "a".repeat(64)));
        // A match that backtracks past the limit is a failure, not a hang.
        assert_eq!(within(1000, || validator.is_valid(&evil)), Some(false));
    }
}
