//! The tools' schemas, compiled once per listing, and what a check finds.

use crate::message::Payload;
use jsonschema::Validator;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// At most this many errors are reported for one check.
const MAX_ERRORS: usize = 20;

/// One tool's compiled schemas. `Err` holds why a schema cannot be used.
#[derive(Debug)]
pub(super) struct Tool {
    input: Result<Validator, String>,
    output: Option<Result<Validator, String>>,
}

/// Every tool the listings named, by name.
#[derive(Debug, Default)]
pub(super) struct Schemas(Mutex<HashMap<String, Arc<Tool>>>);

/// What is wrong with an instance: a message, and `data.errors`.
#[derive(Debug)]
pub(super) struct Invalid {
    pub(super) message: String,
    pub(super) errors: Value,
}

impl Schemas {
    pub(super) fn get(&self, name: &str) -> Option<Arc<Tool>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// Learns the tools of a `tools/list` result; `false` when it cannot
    /// be read.
    pub(super) fn learn(&self, result: &Payload) -> bool {
        let Ok(Some(Value::Array(tools))) = result.member("tools") else {
            return false;
        };
        let learned: Vec<(String, Arc<Tool>)> = tools
            .iter()
            .filter_map(|tool| {
                let name = tool.get("name")?.as_str()?.to_owned();
                let input = match tool.get("inputSchema") {
                    Some(schema) => compile(schema),
                    None => Err("the tool lists no inputSchema".to_owned()),
                };
                let output = tool.get("outputSchema").map(compile);
                Some((name, Arc::new(Tool { input, output })))
            })
            .collect();
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(learned);
        true
    }
}

fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| e.to_string())
}

impl Tool {
    /// Checks a call's arguments.
    pub(super) fn check_input(&self, name: &str, arguments: &Value) -> Result<(), Invalid> {
        match &self.input {
            Ok(validator) => check(validator, arguments, &format!("the arguments of {name} do not fit its inputSchema")),
            Err(why) => Err(Invalid {
                message: format!("the inputSchema of {name} cannot be used ({why}); the call is refused rather than passed unchecked"),
                errors: json!([]),
            }),
        }
    }

    /// Checks a result's `structuredContent`, when the tool has an
    /// `outputSchema`.
    pub(super) fn check_output(&self, name: &str, structured: &Value) -> Result<(), Invalid> {
        match &self.output {
            None => Ok(()),
            Some(Ok(validator)) => check(
                validator,
                structured,
                &format!("the structuredContent of {name} does not fit its outputSchema"),
            ),
            Some(Err(why)) => Err(Invalid {
                message: format!("the outputSchema of {name} cannot be used ({why})"),
                errors: json!([]),
            }),
        }
    }
}

fn check(validator: &Validator, instance: &Value, message: &str) -> Result<(), Invalid> {
    let errors: Vec<Value> = validator
        .iter_errors(instance)
        .take(MAX_ERRORS)
        .map(|e| json!({"pointer": e.instance_path().to_string(), "message": e.to_string()}))
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    Err(Invalid {
        message: message.to_owned(),
        errors: Value::Array(errors),
    })
}
