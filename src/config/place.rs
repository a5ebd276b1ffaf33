//! Where in the config file a layer's problem sits: the layer names the
//! key it is about (`tools.deny[0]`); this finds that key's value in the
//! `index`-th `[[middleware]]` table, so the message points at its own
//! line and column rather than at the table's.

use mcp_chain_middleware::config_error::Key;
use toml_edit::{ImDocument, Item};

/// The byte offset of the value at `path` in the `index`-th middleware
/// entry of `text`, or of the deepest part of the path that is there;
/// `None` when the entry itself cannot be found.
pub(super) fn of(text: &str, index: usize, path: &[Key]) -> Option<usize> {
    let doc = ImDocument::parse(text).ok()?;
    let entries = doc.as_table().get("middleware")?;
    let mut item: &Item = entries.get(index)?;
    let mut offset = item.span().map(|span| span.start);
    for key in path {
        let next = match key {
            Key::Name(name) => item.get(name.as_str()),
            Key::Index(i) => item.get(*i),
        };
        let Some(next) = next else { break };
        item = next;
        offset = item.span().map(|span| span.start).or(offset);
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_col(text: &str, offset: usize) -> (usize, usize) {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (line, col)
    }

    #[test]
    fn a_key_is_found_in_its_entry_inline_or_not() {
        let text = "[[middleware]]\ntype = \"log\"\n\n[[middleware]]\ntype = \"filter\"\ntools = { deny = [\"ok\", \"[unclosed\"] }\n[middleware.resources]\nallow = [\"file:///*\"]\n";
        let path = [Key::from("tools"), Key::from("deny"), Key::from(1)];
        assert_eq!(of(text, 1, &path).map(|o| line_col(text, o)), Some((6, 25)));
        let path = [Key::from("resources"), Key::from("allow"), Key::from(0)];
        assert_eq!(of(text, 1, &path).map(|o| line_col(text, o)), Some((8, 10)));
        // A key not written (a default): the deepest part that is.
        let path = [Key::from("tools"), Key::from("allow")];
        assert_eq!(of(text, 1, &path).map(|o| line_col(text, o)), Some((6, 9)));
        assert_eq!(of(text, 5, &path), None);
    }
}
