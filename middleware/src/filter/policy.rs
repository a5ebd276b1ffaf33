//! What the filter allows, and how a denial looks: exactly like the item or
//! method being missing, so a client learns nothing about what is hidden.

use crate::message::{method, ErrorCode, ErrorObject, Message, Payload, RequestId};
use crate::pattern::PatternList;
use crate::target::Target;
use serde_json::json;

/// The name this layer gives in `data.layer`.
pub(super) const LAYER: &str = "filter";
/// `data.reason` of every filter denial.
pub(super) const REASON: &str = "denied";

/// The compiled allow/deny lists, one per kind of item.
#[derive(Debug)]
pub(crate) struct Policy {
    pub(super) tools: PatternList,
    pub(super) resources: PatternList,
    pub(super) templates: PatternList,
    pub(super) prompts: PatternList,
    pub(super) methods: PatternList,
}

/// A list-bearing result and the arrays in it this filter prunes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Listing {
    Tools,
    Resources,
    Templates,
    Prompts,
    /// `server/discover` (2026-07-28) may carry any of the four arrays.
    Discover,
}

/// The array key and the item field each kind is judged by.
const TOOLS: (&str, &str) = ("tools", "name");
const RESOURCES: (&str, &str) = ("resources", "uri");
const TEMPLATES: (&str, &str) = ("resourceTemplates", "uriTemplate");
const PROMPTS: (&str, &str) = ("prompts", "name");

impl Listing {
    pub(super) fn of(method: &str) -> Option<Self> {
        Some(match method {
            method::TOOLS_LIST => Self::Tools,
            method::RESOURCES_LIST => Self::Resources,
            method::RESOURCES_TEMPLATES_LIST => Self::Templates,
            method::PROMPTS_LIST => Self::Prompts,
            method::SERVER_DISCOVER => Self::Discover,
            _ => return None,
        })
    }
}

// === impl Policy ===

impl Policy {
    pub(super) fn allows_method(&self, method: &str) -> bool {
        self.methods.allows(method)
    }

    pub(super) fn allows(&self, target: Target<'_>) -> bool {
        match target {
            Target::Tool(name) => self.tools.allows(name),
            Target::Resource(uri) => self.resources.allows(uri),
            Target::Prompt(name) => self.prompts.allows(name),
            Target::ResourceTemplate(uri) => self.allows_template(uri),
        }
    }

    fn allows_template(&self, uri_template: &str) -> bool {
        self.resources.allows(uri_template) && self.templates.allows(uri_template)
    }

    /// Whether a listing needs looking at at all (the common case of a
    /// filter that only names tools skips resources/list untouched).
    pub(super) fn prunes(&self, listing: Listing) -> bool {
        let tools = !self.tools.allows_all();
        let resources = !self.resources.allows_all();
        let templates = resources || !self.templates.allows_all();
        let prompts = !self.prompts.allows_all();
        match listing {
            Listing::Tools => tools,
            Listing::Resources => resources,
            Listing::Templates => templates,
            Listing::Prompts => prompts,
            Listing::Discover => tools || templates || prompts,
        }
    }

    /// Removes hidden items from a list result in place. Everything else in
    /// the result (`nextCursor`, `_meta`, unknown fields) is left as it is:
    /// each page is filtered on its own and keeps its cursor.
    pub(super) fn prune(&self, listing: Listing, result: &mut Payload) {
        match listing {
            Listing::Tools => self.prune_array(result, TOOLS, |n| self.tools.allows(n)),
            Listing::Resources => self.prune_array(result, RESOURCES, |u| self.resources.allows(u)),
            Listing::Templates => self.prune_array(result, TEMPLATES, |u| self.allows_template(u)),
            Listing::Prompts => self.prune_array(result, PROMPTS, |n| self.prompts.allows(n)),
            Listing::Discover => {
                for kind in [
                    Listing::Tools,
                    Listing::Resources,
                    Listing::Templates,
                    Listing::Prompts,
                ] {
                    self.prune(kind, result);
                }
            }
        }
    }

    fn prune_array(
        &self,
        result: &mut Payload,
        (key, field): (&str, &str),
        keep: impl Fn(&str) -> bool,
    ) {
        // An item without the field is judged by the empty string: kept by a
        // deny list, dropped by an allow list that does not match "".
        if !result.retain_items(key, field, |value| keep(value.unwrap_or_default())) {
            result.edit_items(key, |item| {
                keep(&item.str_member(field).unwrap_or_default())
            });
        }
    }
}

/// The answer to a request for a hidden item or method, shaped like the
/// server's own answer for a missing one (DESIGN.md, Errors).
pub(super) fn denial(id: RequestId, method: &str, target: Option<Target<'_>>) -> Message {
    let (code, message, detail) = match target {
        None => (
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
            None,
        ),
        Some(Target::Tool(name)) => (
            ErrorCode::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
            None,
        ),
        Some(Target::Prompt(name)) => (
            ErrorCode::INVALID_PARAMS,
            format!("Unknown prompt: {name}"),
            None,
        ),
        // The specification's example for an unknown resource carries the
        // uri in `data`; keep that, next to `layer` and `reason`.
        Some(Target::Resource(uri)) => (
            ErrorCode::RESOURCE_NOT_FOUND,
            format!("Resource not found: {uri}"),
            Some(("uri", uri)),
        ),
        Some(Target::ResourceTemplate(uri)) => (
            ErrorCode::INVALID_PARAMS,
            format!("Resource template not found: {uri}"),
            Some(("uri", uri)),
        ),
    };
    let mut data = json!({"layer": LAYER, "reason": REASON});
    if let (Some((key, value)), Some(map)) = (detail, data.as_object_mut()) {
        map.insert(key.into(), value.into());
    }
    Message::error(Some(id), ErrorObject::new(code, message).with_data(data))
}
