//! What the filter allows, and how a denial looks: exactly like the item or
//! method being missing, so a client learns nothing about what is hidden.

use crate::message::{method, ErrorCode, ErrorObject, Message, RequestId};
use crate::pattern::PatternList;
use crate::payload::{Payload, Unreadable};
use crate::target::{Kind, Target};
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

    /// Whether any method is denied: then the requests a server embeds in
    /// a result are judged too.
    pub(super) fn judges_methods(&self) -> bool {
        !self.methods.allows_all()
    }

    pub(super) fn allows(&self, target: &Target<'_>) -> bool {
        match target {
            Target::Tool(name) => self.tools.allows(name),
            Target::Resource(uri) => self.resources.allows(uri),
            Target::Prompt(name) => self.prompts.allows(name),
            Target::ResourceTemplate(uri) => self.allows_template(uri),
        }
    }

    /// Whether this policy hides any item of the kind a method names: then
    /// a request whose item cannot be read is refused, not passed.
    pub(super) fn judges(&self, kind: Kind) -> bool {
        match kind {
            Kind::Tool => !self.tools.allows_all(),
            Kind::Resource => !self.resources.allows_all(),
            Kind::Prompt => !self.prompts.allows_all(),
            Kind::Completion => {
                !(self.prompts.allows_all()
                    && self.resources.allows_all()
                    && self.templates.allows_all())
            }
        }
    }

    /// The rule that refused a request for `target` (its method's, when
    /// there is none), as configured: what a denial's decision records.
    pub(super) fn refusing_rule(&self, method: &str, target: Option<&Target<'_>>) -> String {
        let (kind, rule) = match target {
            None => ("methods", self.methods.refusing_rule(method)),
            Some(Target::Tool(name)) => ("tools", self.tools.refusing_rule(name)),
            Some(Target::Prompt(name)) => ("prompts", self.prompts.refusing_rule(name)),
            Some(Target::Resource(uri)) => ("resources", self.resources.refusing_rule(uri)),
            Some(Target::ResourceTemplate(uri)) => (
                "resource_templates",
                self.resources
                    .refusing_rule(uri)
                    .or_else(|| self.templates.refusing_rule(uri)),
            ),
        };
        format!("{kind}: {}", rule.as_deref().unwrap_or("unreadable"))
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
    /// each page is filtered on its own and keeps its cursor. `Ok(true)`
    /// when an item was removed. `Err` when the result cannot be read: it
    /// must not reach the client unfiltered.
    pub(super) fn prune(&self, listing: Listing, result: &mut Payload) -> Result<bool, Unreadable> {
        match listing {
            Listing::Tools => prune(result, TOOLS, &self.tools),
            Listing::Resources => prune(result, RESOURCES, &self.resources),
            Listing::Templates => {
                let all = self.resources.allows_all() && self.templates.allows_all();
                prune_judged(result, TEMPLATES, all, |u| self.allows_template(u))
            }
            Listing::Prompts => prune(result, PROMPTS, &self.prompts),
            Listing::Discover => [
                Listing::Tools,
                Listing::Resources,
                Listing::Templates,
                Listing::Prompts,
            ]
            .into_iter()
            .try_fold(false, |pruned, kind| Ok(self.prune(kind, result)? | pruned)),
        }
    }
}

fn prune(result: &mut Payload, kind: (&str, &str), list: &PatternList) -> Result<bool, Unreadable> {
    prune_judged(result, kind, list.allows_all(), |name: &str| {
        list.allows(name)
    })
}

/// Keeps the items of the list `key` whose `field` `keep` allows. An item
/// whose field cannot be read (not an object, no such member, not a
/// string) cannot be judged: it is dropped, unless nothing of its kind is
/// hidden (`allows_all`).
fn prune_judged(
    result: &mut Payload,
    (key, field): (&str, &str),
    allows_all: bool,
    keep: impl Fn(&str) -> bool,
) -> Result<bool, Unreadable> {
    result
        .edit_items(key, |item| match item.str_member(field) {
            Some(name) => keep(&name),
            None => allows_all,
        })
        .map_err(|e| Unreadable::new(format!("result: {e}")))
}

/// The answer to a request this filter must judge but cannot read: refused
/// (-32602), never passed unjudged.
pub(super) fn unreadable_request(id: RequestId, method: &str, e: &Unreadable) -> Message {
    let message = format!("cannot judge {method}: {e}");
    let error = ErrorObject::refusal(ErrorCode::INVALID_PARAMS, LAYER, "unreadable", &message);
    Message::error(Some(id), error)
}

/// What the client gets instead of a list result this filter cannot read
/// (-32603): hidden items must not reach it unfiltered.
pub(super) fn unreadable_result(id: RequestId, e: &Unreadable) -> Message {
    let message = format!("cannot filter the answer: {e}");
    let error = ErrorObject::refusal(ErrorCode::INTERNAL_ERROR, LAYER, "unreadable", &message);
    Message::error(Some(id), error)
}

/// The answer to a request for a hidden item or method, shaped like the
/// server's own answer for a missing one (docs/architecture.md, Errors).
pub(super) fn denial(id: RequestId, method: &str, target: Option<&Target<'_>>) -> Message {
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
        map.insert(key.into(), value.as_ref().into());
    }
    Message::error(Some(id), ErrorObject::new(code, message).with_data(data))
}
