//! The tools' schemas, and what a check finds. A schema is compiled the
//! first time a call needs it, and kept while the listings repeat it: a
//! client that lists a thousand tools every minute and calls three pays
//! for three compilations, once.

use super::budget;
use crate::payload::Payload;
use jsonschema::Validator;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// At most this many errors are reported for one check.
const MAX_ERRORS: usize = 20;

/// One tool's schemas as listed, compiled when first needed. `Err` holds
/// why a schema cannot be used.
#[derive(Debug)]
pub(super) struct Tool {
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    input: OnceLock<Result<Compiled, Unusable>>,
    output: OnceLock<Option<Result<Compiled, Unusable>>>,
}

/// Why a tool's schema cannot be used (a call is then refused).
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("the tool lists no inputSchema")]
    Missing,
    #[error(transparent)]
    Schema(Box<jsonschema::ValidationError<'static>>),
}

/// A compiled schema, and whether it can have each of its errors listed
/// within bounds (see [`fans_out`]).
#[derive(Debug)]
struct Compiled {
    validator: Validator,
    every_error: bool,
}

/// Every tool the listings named, by name, and the last listing pages
/// learned as they came (a page that comes again as it was teaches
/// nothing, and is not read again).
#[derive(Debug, Default)]
pub(super) struct Schemas {
    tools: Mutex<HashMap<String, Arc<Tool>>>,
    pages: Mutex<Vec<Vec<u8>>>,
}

/// Pages remembered as they came.
const PAGES_KEPT: usize = 8;

/// What is wrong with an instance: a message, and `data.errors`.
#[derive(Debug)]
pub(super) struct Invalid {
    pub(super) message: String,
    pub(super) errors: Value,
    /// The check ran out of its budget: nothing is known of the instance.
    pub(super) over_budget: bool,
    /// Where in the schema the first error was found (`/properties/path/type`):
    /// the schema's words, never the arguments', for the decision's record.
    pub(super) schema_pointer: Option<Box<str>>,
}

impl Invalid {
    pub(super) fn unusable(message: String) -> Self {
        Self {
            message,
            errors: json!([]),
            over_budget: false,
            schema_pointer: None,
        }
    }
}

impl Schemas {
    pub(super) fn get(&self, name: &str) -> Option<Arc<Tool>> {
        self.tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// Learns the tools of a `tools/list` result; `false` when it cannot
    /// be read.
    pub(super) fn learn(&self, result: &Payload) -> bool {
        let text = result.text().map(|t| t.as_bytes());
        if let Some(text) = text {
            let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
            if pages.iter().any(|page| page.as_slice() == text) {
                return true;
            }
        }
        let Ok(Some(Value::Array(tools))) = result.member("tools") else {
            return false;
        };
        if let Some(text) = text {
            let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
            if pages.len() == PAGES_KEPT {
                pages.remove(0);
            }
            pages.push(text.to_vec());
        }
        let mut known = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        for mut tool in tools {
            let Some(Value::String(name)) = tool.get_mut("name").map(Value::take) else {
                continue;
            };
            let input_schema = tool.get_mut("inputSchema").map(Value::take);
            let output_schema = tool.get_mut("outputSchema").map(Value::take);
            // The same schemas as before keep what was compiled of them.
            let same = known.get(&name).is_some_and(|t| {
                t.input_schema == input_schema && t.output_schema == output_schema
            });
            if !same {
                let tool = Tool {
                    input_schema,
                    output_schema,
                    input: OnceLock::new(),
                    output: OnceLock::new(),
                };
                known.insert(name, Arc::new(tool));
            }
        }
        true
    }
}

fn compile(schema: &Value) -> Result<Compiled, Unusable> {
    Ok(Compiled {
        validator: budget::compile(schema).map_err(|e| Unusable::Schema(Box::new(e)))?,
        every_error: !fans_out(schema),
    })
}

/// Keywords that judge one part of an instance by several subschemas (or
/// by one reached from elsewhere).
const IN_PLACE: [&str; 11] = [
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "dependentSchemas",
    "dependencies",
    "contains",
];

/// Whether `schema` judges a part of the instance more than once. Listing
/// every error judges every subschema to the end, past the first failure
/// and past the budget; that is bounded by the schema's size times the
/// instance's only when nothing is judged twice. Other schemas report
/// their first error.
fn fans_out(schema: &Value) -> bool {
    match schema {
        Value::Object(members) => members.iter().any(|(key, value)| {
            IN_PLACE.contains(&key.as_str())
                || (!matches!(key.as_str(), "enum" | "const" | "default" | "examples")
                    && fans_out(value))
        }),
        Value::Array(items) => items.iter().any(fans_out),
        _ => false,
    }
}

impl Tool {
    /// Checks a call's arguments within `steps`.
    pub(super) fn check_input(
        &self,
        name: &str,
        arguments: &Value,
        steps: u64,
    ) -> Result<(), Invalid> {
        let input = self.input.get_or_init(|| match &self.input_schema {
            Some(schema) => compile(schema),
            None => Err(Unusable::Missing),
        });
        match input {
            Ok(compiled) => check(compiled, arguments, steps, &format!("the arguments of {name} do not fit its inputSchema")),
            Err(why) => Err(Invalid::unusable(format!("the inputSchema of {name} cannot be used ({why}); the call is refused rather than passed unchecked"))),
        }
    }

    /// Checks a result's `structuredContent` within `steps`, when the
    /// tool has an `outputSchema`.
    pub(super) fn check_output(
        &self,
        name: &str,
        structured: &Value,
        steps: u64,
    ) -> Result<(), Invalid> {
        let output = self
            .output
            .get_or_init(|| self.output_schema.as_ref().map(compile));
        match output {
            None => Ok(()),
            Some(Ok(compiled)) => check(
                compiled,
                structured,
                steps,
                &format!("the structuredContent of {name} does not fit its outputSchema"),
            ),
            Some(Err(why)) => Err(Invalid::unusable(format!(
                "the outputSchema of {name} cannot be used ({why})"
            ))),
        }
    }
}

/// The verdict on `instance`, found within `steps` (each pass its own).
fn check(compiled: &Compiled, instance: &Value, steps: u64, message: &str) -> Result<(), Invalid> {
    let validator = &compiled.validator;
    let over_budget = || {
        Invalid {
        message: format!("{message}: the check ran out of its budget of {steps} steps (the schema asks for more work than validate.max_check_steps allows); the call is refused rather than passed unchecked"),
        errors: json!([]),
        over_budget: true,
        schema_pointer: None,
    }
    };
    match budget::within(steps, || validator.is_valid(instance)) {
        None => return Err(over_budget()),
        Some(true) => return Ok(()),
        Some(false) => {}
    }
    let schema_pointer = std::cell::Cell::new(None);
    let describe = |e: jsonschema::ValidationError<'_>| {
        let first = schema_pointer.take();
        schema_pointer.set(first.or_else(|| Some(e.schema_path().as_str().into())));
        json!({"pointer": e.instance_path().to_string(), "message": e.to_string()})
    };
    let errors = budget::within(steps, || match compiled.every_error {
        true => validator
            .iter_errors(instance)
            .take(MAX_ERRORS)
            .map(describe)
            .collect(),
        false => validator
            .validate(instance)
            .err()
            .map(describe)
            .into_iter()
            .collect(),
    });
    let Some(errors) = errors else {
        return Err(over_budget());
    };
    Err(Invalid {
        message: message.to_owned(),
        errors: Value::Array(errors),
        over_budget: false,
        schema_pointer: schema_pointer.take(),
    })
}
