//! `[servers.NAME] resources = "prefix"`: the server's resource URIs are
//! offered as `NAME+scheme://…`, so two servers may offer the same URI.
//! Its listings, reads, resource links and embedded resources in results,
//! and `notifications/resources/updated` carry the prefix toward the
//! client; what the client sends (reads, subscriptions, a completion's
//! `ref`) is routed by it and reaches the server without it. URIs inside
//! a tool's arguments are the client's text and pass as written.

use super::Hub;
use mcp_chain_middleware::payload::Payload;
use serde_json::Value;

impl Hub {
    /// The server `uri` names by its prefix, and the URI as that server
    /// wrote it.
    pub(super) fn prefixed_owner<'u>(&self, uri: &'u str) -> Option<(usize, &'u str)> {
        self.members.iter().enumerate().find_map(|(k, member)| {
            let rest = uri.strip_prefix(member.uri_prefix.as_deref()?)?;
            Some((k, rest))
        })
    }

    /// Server `k`'s URI prefix, if its resources are offered so.
    pub(super) fn uri_prefix(&self, k: usize) -> Option<&str> {
        self.members[k].uri_prefix.as_deref()
    }
}

/// [`outward`] on a payload (an answer of the server's, a notification's
/// params); one that cannot be read is left as it is.
pub(super) fn prefixed(payload: &mut Payload, prefix: &str) {
    if let Ok(mut value) = payload.to_value() {
        outward(prefix, &mut value);
        *payload = value.into();
    }
}

/// Prefixes the URI at `key` of `item`, if it is a string.
fn prefix_at(prefix: &str, item: &mut Value, key: &str) {
    if let Some(Value::String(uri)) = item.get_mut(key) {
        uri.insert_str(0, prefix);
    }
}

/// Prefixes the URIs a result or a notification carries: a read's
/// `contents`, a tool result's `content` (resource links, embedded
/// resources), a prompt's `messages`, a notification's `uri`.
pub(super) fn outward(prefix: &str, value: &mut Value) {
    prefix_at(prefix, value, "uri");
    if let Some(Value::Array(contents)) = value.get_mut("contents") {
        for item in contents {
            prefix_at(prefix, item, "uri");
        }
    }
    if let Some(Value::Array(content)) = value.get_mut("content") {
        content.iter_mut().for_each(|block| in_block(prefix, block));
    }
    if let Some(Value::Array(messages)) = value.get_mut("messages") {
        for message in messages {
            if let Some(block) = message.get_mut("content") {
                in_block(prefix, block);
            }
        }
    }
}

/// A content block: a resource link's `uri`, an embedded resource's.
fn in_block(prefix: &str, block: &mut Value) {
    match block.get("type").and_then(Value::as_str) {
        Some("resource_link") => prefix_at(prefix, block, "uri"),
        Some("resource") => {
            if let Some(resource) = block.get_mut("resource") {
                prefix_at(prefix, resource, "uri");
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::outward;
    use serde_json::json;

    #[test]
    fn every_uri_a_result_carries_gets_the_prefix() {
        let mut read = json!({"contents": [{"uri": "file:///a", "text": "x"}]});
        outward("files+", &mut read);
        assert_eq!(read["contents"][0]["uri"], "files+file:///a");
        let mut called = json!({"content": [
            {"type": "text", "text": "file:///not-a-uri-field"},
            {"type": "resource_link", "uri": "file:///b", "name": "b"},
            {"type": "resource", "resource": {"uri": "file:///c", "text": "c"}},
        ]});
        outward("files+", &mut called);
        assert_eq!(called["content"][0]["text"], "file:///not-a-uri-field");
        assert_eq!(called["content"][1]["uri"], "files+file:///b");
        assert_eq!(called["content"][2]["resource"]["uri"], "files+file:///c");
        let mut prompt = json!({"messages": [{"role": "user", "content": {"type": "resource", "resource": {"uri": "db://t"}}}]});
        outward("db+", &mut prompt);
        assert_eq!(
            prompt["messages"][0]["content"]["resource"]["uri"],
            "db+db://t"
        );
        let mut updated = json!({"uri": "file:///a"});
        outward("files+", &mut updated);
        assert_eq!(updated["uri"], "files+file:///a");
    }
}
