//! How a wrapped entry's values are written: on one line, as people
//! write them, in JSON or in TOML; and the variables a Codex entry passes.

use serde_json::{json, Map, Value};

/// The variables a wrapped Codex entry must pass: those it listed, and
/// each `--header-env`/`--bearer-env` variable of `args` that `env` does
/// not set itself.
pub(super) fn env_vars(value: &Value, args: &[String], env: &Map<String, Value>) -> Value {
    let mut vars: Vec<Value> = value
        .get("env_vars")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for pair in args.windows(2) {
        let var = match pair[0].as_str() {
            "--header-env" => pair[1].split_once('=').map(|(_, v)| v),
            "--bearer-env" => Some(pair[1].as_str()),
            _ => None,
        };
        let listed = |v: &&str| vars.iter().any(|x| x == v) || env.contains_key(*v);
        if let Some(var) = var.filter(|v| !listed(v)) {
            vars.push(json!(var));
        }
    }
    Value::Array(vars)
}

/// A TOML key: bare when it may be, else quoted.
pub(super) fn toml_key(key: &str) -> String {
    match !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        true => key.to_owned(),
        false => json!(key).to_string(),
    }
}

/// A value on one line, as people write one: `["a", "b"]`, `{"K": "v"}`.
pub(super) fn inline(value: &Value) -> String {
    one_line(value, ": ", ("{", "}"))
}

/// A value as a TOML inline value (strings as JSON writes them: TOML's
/// basic strings read the same escapes): `{ "K" = "v" }`.
pub(super) fn toml_inline(value: &Value) -> String {
    one_line(value, " = ", ("{ ", " }"))
}

/// `value` on one line, its members joined to their keys by `join` and
/// enclosed in `braces`.
fn one_line(value: &Value, join: &str, braces: (&str, &str)) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| one_line(v, join, braces)).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}{join}{}", json!(k), one_line(v, join, braces)))
                .collect();
            format!("{}{}{}", braces.0, members.join(", "), braces.1)
        }
        other => other.to_string(),
    }
}
