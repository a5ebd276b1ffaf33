//! A client's JSON config file, edited as text: the file is parsed with
//! the place of every value (jsonc-parser, which also reads VS Code's
//! comments and trailing commas), and a change replaces the text of one
//! server's entry and nothing else, so key order, unknown keys, comments
//! and formatting elsewhere are as they were. A wrapped entry keeps its
//! own members in their order, only `command` and `args` (or, for a
//! remote entry, its URL, transport and headers) written anew.

use super::render::{env_vars, inline, toml_inline, toml_key};
use super::Client;
use jsonc_parser::ast::{Object, Value as Node};
use jsonc_parser::{CollectOptions, ParseOptions};
use serde_json::{json, Map, Value};
use std::ops::Range;

use super::shape::HEADER_KEYS;
pub(super) use super::shape::{Shape, BEARER};

/// One server's entry in the file.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) name: String,
    /// Where its value (the object) is in the text.
    pub(super) at: Range<usize>,
    /// Its members, in order, each with the text of its value.
    members: Vec<(String, String)>,
    /// The value read.
    pub(super) value: Value,
    /// The indentation of the line the entry's name is on.
    indent: String,
    /// A TOML table's header (`[mcp_servers.NAME]`): the entry is written
    /// as TOML, `key = value` lines after it.
    head: Option<String>,
    /// For Codex's servers "object" (`WHOLE`), the stretch of the file
    /// its tables are in, or why they cannot be taken as one.
    stretch: Option<Result<super::toml::Stretch, String>>,
}

/// The server entries of `text`, in order; under `projects[project]` for
/// Claude Code's local scope; an error names the line.
pub(super) fn entries(
    text: &str,
    client: Client,
    project: Option<&str>,
) -> Result<Vec<Entry>, String> {
    let lenient = client.allows_comments();
    let options = ParseOptions {
        allow_comments: lenient,
        allow_trailing_commas: lenient,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options)
        .map_err(|e| format!("line {}: {}", e.line_display(), e.kind()))?;
    let Some(Node::Object(root)) = parsed.value else {
        return Err("the file is not a JSON object".to_owned());
    };
    let mut within = &root;
    if let Some(project) = project {
        let Some(projects) = root.get("projects") else {
            return Ok(Vec::new());
        };
        let Node::Object(projects) = &projects.value else {
            return Err("\"projects\" is not an object".to_owned());
        };
        let Some(this) = projects.get(project) else {
            return Ok(Vec::new());
        };
        let Node::Object(this) = &this.value else {
            return Err(format!("\"projects\".{} is not an object", json!(project)));
        };
        within = this;
    }
    let Some(servers) = within.get(client.servers_key()) else {
        return Ok(Vec::new());
    };
    let Node::Object(object) = &servers.value else {
        return Err(format!("\"{}\" is not an object", client.servers_key()));
    };
    let mut found: Vec<Entry> = object
        .properties
        .iter()
        .filter_map(|p| match &p.value {
            Node::Object(object) => Some(entry(text, p.name.as_str(), object, p.range.start)),
            _ => None,
        })
        .collect();
    // The servers object itself, last, under a name no entry can have:
    // what `wrap --gateway` replaces whole.
    found.push(entry(text, WHOLE, object, servers.range.start));
    Ok(found)
}

/// The name the servers object itself goes by among the entries.
pub(super) const WHOLE: &str = "";

fn entry(text: &str, name: &str, object: &Object<'_>, name_at: usize) -> Entry {
    let members = object
        .properties
        .iter()
        .map(|p| {
            let range = jsonc_parser::common::Ranged::range(&p.value);
            (
                p.name.as_str().to_owned(),
                text[range.start..range.end].to_owned(),
            )
        })
        .collect();
    let line_start = text[..name_at].rfind('\n').map_or(0, |n| n + 1);
    let indent: String = text[line_start..name_at]
        .chars()
        .take_while(|c| c.is_whitespace())
        .collect();
    Entry {
        name: name.to_owned(),
        at: object.range.start..object.range.end,
        members,
        value: Value::from(Node::Object(object.clone())),
        indent,
        head: None,
        stretch: None,
    }
}

impl Entry {
    /// A Codex table (see `toml.rs`).
    pub(super) fn of_toml(
        name: &str,
        at: Range<usize>,
        head: String,
        members: Vec<(String, String)>,
        value: Value,
    ) -> Self {
        Self {
            name: name.to_owned(),
            at,
            members,
            value,
            indent: String::new(),
            head: Some(head),
            stretch: None,
        }
    }

    /// Codex's servers "object": the stretch of the file its tables are in.
    pub(super) fn of_stretch(
        name: &str,
        at: Range<usize>,
        stretch: Result<super::toml::Stretch, String>,
    ) -> Self {
        Self {
            name: name.to_owned(),
            at,
            members: Vec::new(),
            value: Value::Null,
            indent: String::new(),
            head: None,
            stretch: Some(stretch),
        }
    }

    /// The entry with `value` read for it (a Codex server with its sub-tables).
    pub(super) fn with_value(&self, value: Value) -> Self {
        Self {
            value,
            ..self.clone()
        }
    }

    /// Why the servers cannot be taken as one, if they cannot.
    pub(super) fn scattered(&self) -> Option<&str> {
        match &self.stretch {
            Some(Err(why)) => Some(why),
            _ => None,
        }
    }

    /// The entry's text once wrapped: the same members in the same order,
    /// `command` and `args` set (a remote entry's URL, transport and
    /// headers taken out, its headers into `env`); `type` is `stdio` where
    /// the entry has one.
    pub(super) fn wrapped(
        &self,
        client: Client,
        command: &str,
        args: &[String],
        env: &Map<String, Value>,
    ) -> String {
        let remote: Vec<&str> = client.url_keys().iter().map(|(k, _)| *k).collect();
        let toml = self.head.is_some();
        let inline = |v: &Value| match toml {
            true => toml_inline(v),
            false => inline(v),
        };
        let mut out: Vec<(String, String)> = Vec::new();
        let put = |out: &mut Vec<(String, String)>, key: &str, value: String| match out
            .iter_mut()
            .find(|(k, _)| k == key)
        {
            Some(slot) => slot.1 = value,
            None => out.push((key.to_owned(), value)),
        };
        let is_remote = matches!(self.shape(client), Ok(Shape::Remote { .. }));
        for (key, text) in &self.members {
            match key.as_str() {
                "command" => put(&mut out, "command", inline(&json!(command))),
                "args" => put(&mut out, "args", inline(&json!(args))),
                "env" if !env.is_empty() => {
                    put(&mut out, "env", inline(&Value::Object(env.clone())))
                }
                "type" => put(&mut out, "type", inline(&json!("stdio"))),
                k if is_remote && HEADER_KEYS.contains(&k) => {}
                "env_vars" if is_remote => put(
                    &mut out,
                    "env_vars",
                    inline(&env_vars(&self.value, args, env)),
                ),
                k if is_remote && remote.contains(&k) => {
                    put(&mut out, "command", inline(&json!(command)));
                    put(&mut out, "args", inline(&json!(args)));
                }
                _ => put(&mut out, key, text.clone()),
            }
        }
        if !out.iter().any(|(k, _)| k == "args") {
            let at = out
                .iter()
                .position(|(k, _)| k == "command")
                .map_or(0, |n| n + 1);
            out.insert(at, ("args".into(), inline(&json!(args))));
        }
        if !env.is_empty() && !out.iter().any(|(k, _)| k == "env") {
            out.push(("env".into(), inline(&Value::Object(env.clone()))));
        }
        // Codex passes a server only the variables its entry lists.
        let passed = env_vars(&self.value, args, env);
        if toml
            && is_remote
            && passed.as_array().is_some_and(|v| !v.is_empty())
            && !out.iter().any(|(k, _)| k == "env_vars")
        {
            out.push(("env_vars".into(), inline(&passed)));
        }
        if client.typed() && !out.iter().any(|(k, _)| k == "type") {
            out.insert(0, ("type".into(), inline(&json!("stdio"))));
        }
        if let Some(head) = &self.head {
            let lines: Vec<String> = out
                .iter()
                .map(|(k, v)| format!("{} = {v}", toml_key(k)))
                .collect();
            return format!("{head}\n{}", lines.join("\n"));
        }
        let inner = format!("{}  ", self.indent);
        let members: Vec<String> = out
            .iter()
            .map(|(k, v)| format!("{inner}{}: {v}", json!(k)))
            .collect();
        format!("{{\n{}\n{}}}", members.join(",\n"), self.indent)
    }

    /// The members of the servers object (`WHOLE`), each server's entry
    /// read from it, by name.
    pub(super) fn members(&self) -> Box<dyn Iterator<Item = Entry> + '_> {
        if let Some(stretch) = &self.stretch {
            return match stretch {
                Ok(stretch) => Box::new(stretch.servers()),
                Err(_) => Box::new(std::iter::empty()),
            };
        }
        Box::new(self.members.iter().filter_map(|(name, text)| {
            let value: Value = serde_json::from_str(text).ok()?;
            value.is_object().then(|| Entry {
                name: name.clone(),
                at: 0..0,
                members: Vec::new(),
                value,
                indent: String::new(),
                head: None,
                stretch: None,
            })
        }))
    }

    /// The servers object's text with `dropped` taken out and `added`
    /// (name, value) put at the end; the other members as they were.
    pub(super) fn replaced(&self, dropped: &[String], added: (&str, &Value)) -> String {
        if let Some(Ok(stretch)) = &self.stretch {
            return stretch.replaced(dropped, added);
        }
        let inner = format!("{}  ", self.indent);
        let mut members: Vec<String> = self
            .members
            .iter()
            .filter(|(name, _)| !dropped.contains(name))
            .map(|(name, text)| format!("{inner}{}: {text}", json!(name)))
            .collect();
        members.push(format!("{inner}{}: {}", json!(added.0), inline(added.1)));
        format!("{{\n{}\n{}}}", members.join(",\n"), self.indent)
    }

    /// The environment the entry passes its server.
    pub(super) fn env(&self) -> Map<String, Value> {
        self.value
            .get("env")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }
}

/// `text` with `at` replaced by `with`.
pub(super) fn splice(text: &str, at: &Range<usize>, with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..at.start]);
    out.push_str(with);
    out.push_str(&text[at.end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESKTOP: &str = "{\n  \"globalShortcut\": \"Ctrl+Space\",\n  \"mcpServers\": {\n    \"files\": {\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/a\"],\n      \"env\": {\"DEBUG\": \"1\"},\n      \"x-note\": 7\n    }\n  }\n}\n";

    #[test]
    fn an_entry_is_found_with_its_place_and_wrapped_in_its_own_order() {
        let found = entries(DESKTOP, Client::ClaudeDesktop, None).expect("reads");
        let [files, whole] = found.as_slice() else {
            panic!("{found:?}")
        };
        assert_eq!(files.name, "files");
        assert_eq!(whole.name, WHOLE, "and the servers object itself");
        assert!(DESKTOP[files.at.clone()].starts_with("{\n      \"command\""));
        let args = vec!["--".to_owned(), "npx".to_owned()];
        let wrapped = files.wrapped(Client::ClaudeDesktop, "/bin/mcp-chain", &args, &files.env());
        let text = splice(DESKTOP, &files.at, &wrapped);
        let value: Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(value["mcpServers"]["files"]["command"], "/bin/mcp-chain");
        assert_eq!(value["mcpServers"]["files"]["x-note"], 7);
        assert_eq!(value["globalShortcut"], "Ctrl+Space");
        let keys: Vec<_> = entries(&text, Client::ClaudeDesktop, None).unwrap()[0]
            .members
            .iter()
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(keys, ["command", "args", "env", "x-note"]);
    }

    #[test]
    fn a_malformed_file_names_its_line() {
        let broken = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n";
        let e = entries(broken, Client::ClaudeDesktop, None).unwrap_err();
        assert!(e.starts_with("line 3"), "{e}");
        // VS Code's files may hold comments and trailing commas.
        let commented = "{\n  // mine\n  \"servers\": {\"a\": {\"type\": \"stdio\", \"command\": \"x\",},},\n}\n";
        let found = entries(commented, Client::Vscode, None).unwrap();
        assert_eq!(found.len(), 2, "one server, and the object");
    }
}
