//! A merged listing page, as text: each part's array of items, read from
//! the part as it now stands (names set where they stand), and the
//! 2026-07-28 caching hints the page carries.

use mcp_chain_middleware::payload::Payload;

/// Appends the items of the array `array` of a listing to `page`, as the
/// part now stands, after a comma when the page holds items already
/// (`first` says whether it does, and is kept up to date). `None`, with
/// nothing written, when the part is not an object or `array` is not an
/// array (a missing one is empty).
pub(super) fn add_items(
    part: &Payload,
    array: &str,
    page: &mut Vec<u8>,
    first: &mut bool,
) -> Option<()> {
    let start = page.len();
    if !*first {
        page.push(b',');
    }
    let items = page.len();
    match part.write_items(array, page) {
        Ok(true) if page.len() > items => *first = false,
        Ok(_) => page.truncate(start),
        Err(_) => {
            page.truncate(start);
            return None;
        }
    }
    Some(())
}

/// 2026-07-28 caching hints (`ttlMs`, `cacheScope`): a merged page is as
/// fresh as its stalest part, and public only when every part is (a part
/// without hints: 0 and private, as the specification reads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hints {
    ttl_ms: u64,
    public: bool,
}

impl Default for Hints {
    fn default() -> Self {
        Self {
            ttl_ms: u64::MAX,
            public: true,
        }
    }
}

impl Hints {
    /// A part's hints (none: 0 and private).
    pub(super) fn of(part: &Payload) -> Self {
        Self {
            ttl_ms: part
                .member("ttlMs")
                .ok()
                .flatten()
                .and_then(|t| t.as_u64())
                .unwrap_or(0),
            public: part
                .str_member("cacheScope")
                .ok()
                .flatten()
                .is_some_and(|s| s == "public"),
        }
    }

    pub(super) fn add(&mut self, part: &Hints) {
        self.ttl_ms = self.ttl_ms.min(part.ttl_ms);
        self.public &= part.public;
    }

    pub(super) fn write(&self, page: &mut Vec<u8>) {
        let ttl = match self.ttl_ms {
            u64::MAX => 0, // no part: nothing to keep
            ttl => ttl,
        };
        let scope = if self.public { "public" } else { "private" };
        page.extend_from_slice(
            format!(",\"resultType\":\"complete\",\"ttlMs\":{ttl},\"cacheScope\":\"{scope}\"")
                .as_bytes(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{add_items, Hints};
    use mcp_chain_middleware::payload::Payload;
    use serde_json::json;

    fn items(page: serde_json::Value, array: &str) -> Option<String> {
        let mut buf = Vec::new();
        let mut first = true;
        let part = Payload::from(page);
        add_items(&part, array, &mut buf, &mut first).map(|()| String::from_utf8(buf).unwrap())
    }

    #[test]
    fn the_items_of_a_listing_are_found_as_text() {
        let page = json!({"nextCursor": "c", "tools": [{"name": "a__x"}, {"name": "a__y"}]});
        assert_eq!(
            items(page, "tools").as_deref(),
            Some(r#"{"name":"a__x"},{"name":"a__y"}"#)
        );
        assert_eq!(items(json!({"tools": []}), "tools").as_deref(), Some(""));
        assert_eq!(
            items(json!({"prompts": [1]}), "tools").as_deref(),
            Some(""),
            "none: empty"
        );
        assert_eq!(
            items(json!({"tools": {"a": 1}}), "tools"),
            None,
            "not an array"
        );
        assert_eq!(items(json!([1, 2]), "tools"), None, "not an object");
    }

    #[test]
    fn a_merged_page_is_as_cacheable_as_its_least_cacheable_part() {
        let a = Hints::of(&Payload::from(
            json!({"tools": [], "ttlMs": 60000, "cacheScope": "public"}),
        ));
        let b = Hints::of(&Payload::from(
            json!({"tools": [], "ttlMs": 5000, "cacheScope": "public"}),
        ));
        let bare = Hints::of(&Payload::from(json!({"tools": []})));
        let mut merged = Hints::default();
        merged.add(&a);
        merged.add(&b);
        assert_eq!(
            merged,
            Hints {
                ttl_ms: 5000,
                public: true
            }
        );
        merged.add(&bare);
        assert_eq!(
            merged,
            Hints {
                ttl_ms: 0,
                public: false
            }
        );
        let mut written = Vec::new();
        Hints::default().write(&mut written);
        assert_eq!(
            written,
            br#","resultType":"complete","ttlMs":0,"cacheScope":"public""#
        );
    }
}
