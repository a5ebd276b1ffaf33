//! The tools' schemas, and what a check finds. A schema is compiled the
//! first time a call needs it, and kept while the listings repeat it: a
//! client that lists a thousand tools every minute and calls three pays
//! for three compilations, once.

use crate::message::Payload;
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
    input: OnceLock<Result<Validator, String>>,
    output: OnceLock<Option<Result<Validator, String>>>,
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

fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| e.to_string())
}

impl Tool {
    /// Checks a call's arguments.
    pub(super) fn check_input(&self, name: &str, arguments: &Value) -> Result<(), Invalid> {
        let input = self.input.get_or_init(|| match &self.input_schema {
            Some(schema) => compile(schema),
            None => Err("the tool lists no inputSchema".to_owned()),
        });
        match input {
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
        let output = self
            .output
            .get_or_init(|| self.output_schema.as_ref().map(compile));
        match output {
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
