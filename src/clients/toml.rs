//! Codex's config (`~/.codex/config.toml`), edited as text as the JSON
//! files are: each `[mcp_servers.NAME]` table found with its place
//! (toml_edit keeps every item's span), and a wrapped table written as its
//! header and its `key = value` lines, the keys it does not change copied
//! as they were. Only tables of their own are wrapped; a server written
//! inline (`mcp_servers = { … }`) is a shape left as it is.

use super::json::Entry;
use serde_json::Value;

/// The server tables of `text`, in order; an error names the line.
pub(super) fn entries(text: &str) -> Result<Vec<Entry>, String> {
    let doc = toml_edit::ImDocument::parse(text).map_err(|e| {
        let line = e
            .span()
            .map_or(0, |s| text[..s.start].matches('\n').count() + 1);
        format!("line {line}: {}", e.message())
    })?;
    let Some(servers) = doc.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_table() else {
        return Err("\"mcp_servers\" is not a table".into());
    };
    let mut found = Vec::new();
    for (name, item) in servers.iter() {
        let Some(table) = item.as_table() else {
            continue;
        };
        // The table's span: its header line, then its own keys.
        let (Some(span), false) = (table.span(), table.is_implicit()) else {
            continue;
        };
        let head_end = text[span.clone()]
            .find('\n')
            .map_or(span.end, |n| span.start + n);
        let head = span.start..head_end;
        let mut members = Vec::new();
        let mut end = head.end;
        for (key, value) in table.iter() {
            if value.is_table() {
                continue; // a table of its own ([mcp_servers.NAME.env]) stays where it is
            }
            let Some(value_at) = value.span() else {
                continue;
            };
            end = end.max(value_at.end);
            members.push((key.to_owned(), text[value_at].to_owned()));
        }
        let value: Value = toml::from_str::<toml::Value>(&text[head.start..end])
            .ok()
            .and_then(|v| v.get("mcp_servers")?.get(name).cloned())
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or(Value::Null);
        found.push(Entry::of_toml(
            name,
            head.start..end,
            text[head.clone()].to_owned(),
            members,
            value,
        ));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::json::splice;
    use crate::clients::Client;

    const CODEX: &str = "model = \"o3\"\n\n# files\n[mcp_servers.files]\ncommand = \"npx\" # the runner\nargs = [\"-y\", \"@modelcontextprotocol/server-filesystem\"]\nenv_vars = [\"HOME\"]\n\n[mcp_servers.files.env]\nDEBUG = \"1\"\n\n[mcp_servers.figma]\nurl = \"https://mcp.figma.com/mcp\"\nbearer_token_env_var = \"FIGMA_TOKEN\"\nhttp_headers = { \"X-Region\" = \"us\" }\n";

    #[test]
    fn a_server_table_is_found_with_its_place_and_wrapped_in_its_own_order() {
        let found = entries(CODEX).expect("reads");
        let names: Vec<&str> = found.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["files", "figma"]);
        let files = &found[0];
        assert!(CODEX[files.at.clone()].starts_with("[mcp_servers.files]\ncommand"));
        assert!(CODEX[files.at.clone()].ends_with("env_vars = [\"HOME\"]"));
        let args = vec!["--".to_owned(), "npx".to_owned()];
        let wrapped = files.wrapped(Client::Codex, "/bin/mcp-chain", &args, &Default::default());
        let text = splice(CODEX, &files.at, &wrapped);
        let value: toml::Value = toml::from_str(&text).expect("still TOML");
        let files = &value["mcp_servers"]["files"];
        assert_eq!(files["command"].as_str(), Some("/bin/mcp-chain"));
        assert_eq!(files["env_vars"][0].as_str(), Some("HOME"));
        assert_eq!(
            files["env"]["DEBUG"].as_str(),
            Some("1"),
            "its own table stays"
        );
        assert!(text.starts_with("model = \"o3\"\n\n# files\n[mcp_servers.files]\n"));
        assert_eq!(found[1].value["bearer_token_env_var"], "FIGMA_TOKEN");
    }

    #[test]
    fn a_malformed_file_names_its_line() {
        let e = entries("[mcp_servers.a]\ncommand = \"x\"\nargs = [\n").unwrap_err();
        assert!(e.starts_with("line "), "{e}");
    }
}
