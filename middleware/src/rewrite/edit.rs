//! The edits themselves, on requests going out and answers coming back.
//! Kept apart from the `Service` plumbing so each can be read on its own.

use super::layer::Rules;
use super::names::{check_name, check_prefixed, Names};
use crate::message::{method, ErrorCode, ErrorObject, Item, Message, Payload, Request};
use crate::target::REF_PROMPT;
use serde_json::{json, Map, Value};

/// The name this layer gives in `data.layer`.
const LAYER: &str = "rewrite";

/// What to do to the answer of a request, decided when it went out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Post {
    /// Rename in the tool and/or prompt arrays of a list result.
    listing: Option<Listing>,
    /// Redact the text in the result (tool, resource, prompt content).
    content: bool,
    /// Redact an error answer's message.
    error: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    Tools,
    Prompts,
    /// `server/discover` (2026-07-28) may carry both arrays.
    Discover,
}

impl Post {
    pub(super) fn is_nothing(&self) -> bool {
        *self == Self::default()
    }
}

// === impl Rules ===

impl Rules {
    /// Edits a client request on its way out. `Err` is the answer when the
    /// client named a tool or prompt this layer never shows (boxed: it is
    /// the rare path, and a `Message` is large).
    pub(super) fn request(&self, req: &mut Request) -> Result<Post, Box<Message>> {
        let redact = !self.redactor.is_empty();
        let mut post = Post {
            error: redact,
            ..Post::default()
        };
        match req.method.as_str() {
            method::TOOLS_CALL => {
                self.call(req, &self.tools, "tool")?;
                post.content = redact;
            }
            method::PROMPTS_GET => {
                self.call(req, &self.prompts, "prompt")?;
                post.content = redact;
            }
            method::COMPLETION_COMPLETE => self.completion(req)?,
            method::RESOURCES_READ | method::TASKS_RESULT => post.content = redact,
            method::TOOLS_LIST if !self.tools.is_identity() => post.listing = Some(Listing::Tools),
            method::PROMPTS_LIST if !self.prompts.is_identity() => {
                post.listing = Some(Listing::Prompts)
            }
            method::SERVER_DISCOVER
                if !(self.tools.is_identity() && self.prompts.is_identity()) =>
            {
                post.listing = Some(Listing::Discover)
            }
            _ => {}
        }
        Ok(post)
    }

    /// `tools/call` or `prompts/get`: the name back to the upstream one, then
    /// overrides, defaults and (when configured) redaction of the arguments.
    fn call(&self, req: &mut Request, names: &Names, kind: &str) -> Result<(), Box<Message>> {
        let Some(params) = req.params.as_mut() else {
            return Ok(());
        };
        // Read, and when only the name changes, replaced, in the sender's
        // bytes: the arguments stay as they were sent.
        let Some(name) = params.str_member("name") else {
            return Ok(());
        };
        let Some(upstream) = names.upstream_name(name) else {
            return Err(unknown(req.id.clone(), kind, name));
        };
        let item = names.item(upstream);
        let renamed = (upstream != name).then(|| upstream.to_owned());
        if let Some(upstream) = renamed {
            params.set_str_member("name", &upstream);
        }
        let has_args = item.is_some_and(|i| !i.arguments.is_empty() || !i.defaults.is_empty());
        if !(has_args || self.redact_arguments) {
            return Ok(());
        }
        let Value::Object(params) = &mut **params else {
            return Ok(());
        };
        let args = params
            .entry("arguments")
            .or_insert_with(|| Value::Object(Map::new()));
        if args.is_null() && has_args {
            *args = Value::Object(Map::new());
        }
        if let (Some(item), Value::Object(args)) = (item, &mut *args) {
            for (k, v) in &item.arguments {
                args.insert(k.clone(), v.clone());
            }
            for (k, v) in &item.defaults {
                args.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        if self.redact_arguments {
            self.redactor.all_strings(args);
        }
        Ok(())
    }

    /// `completion/complete` for a prompt's argument names the prompt too.
    fn completion(&self, req: &mut Request) -> Result<(), Box<Message>> {
        let r = req.params.as_deref_mut().and_then(|p| p.get_mut("ref"));
        let Some(Value::Object(r)) = r else {
            return Ok(());
        };
        if r.get("type").and_then(Value::as_str) != Some(REF_PROMPT) {
            return Ok(());
        }
        let Some(Value::String(name)) = r.get_mut("name") else {
            return Ok(());
        };
        match self.prompts.upstream_name(name).map(str::to_owned) {
            Some(upstream) => {
                if *name != upstream {
                    *name = upstream;
                }
                Ok(())
            }
            None => Err(unknown(req.id.clone(), "prompt", name)),
        }
    }

    /// Edits the answer to a request, as `post` says.
    pub(super) fn answer(&self, post: Post, answer: &mut Message) {
        match answer {
            Message::Response(resp) => {
                if let Some(listing) = post.listing {
                    self.listing(listing, &mut resp.result);
                }
                if post.content {
                    self.redactor.content(&mut resp.result);
                }
            }
            Message::Error(e) if post.error => self.redactor.string(&mut e.error.message),
            _ => {}
        }
    }

    fn listing(&self, listing: Listing, result: &mut Payload) {
        if matches!(listing, Listing::Tools | Listing::Discover) {
            rename_items(result, "tools", &self.tools, "tool");
        }
        if matches!(listing, Listing::Prompts | Listing::Discover) {
            rename_items(result, "prompts", &self.prompts, "prompt");
        }
    }

    /// Edits a message from the server on its way to the client: log
    /// messages are redacted like results.
    pub(super) fn server_message(&self, msg: &mut Message) {
        if self.redactor.is_empty() {
            return;
        }
        if let Message::Notification(note) = msg {
            if note.method == method::NOTIFICATION_MESSAGE {
                if let Some(data) = note.params.as_deref_mut().and_then(|p| p.get_mut("data")) {
                    self.redactor.all_strings(data);
                }
            }
        }
    }
}

/// Renames the items of the list `key` (`tools`, `prompts`). With only a
/// prefix configured, the names are spliced into the text as it stands;
/// otherwise (or when the list is not plain enough for that) each item is
/// read, renamed and given its settings in turn.
fn rename_items(result: &mut Payload, key: &str, names: &Names, kind: &str) {
    if let Some(prefix) = names.only_prefix() {
        let prefixed = result.prefix_items(key, "name", prefix, |upstream| {
            if let Err(e) = check_prefixed(prefix, upstream) {
                tracing::warn!(layer = LAYER, kind, name = %upstream, "produced name: {e}");
            }
        });
        if prefixed {
            return;
        }
    }
    result.edit_items(key, |item| rename_item(names, item, kind));
}

/// Renames one item of a list and applies its settings. False (drop it)
/// when a rename of another item has taken its name.
fn rename_item(names: &Names, item: &mut Item<'_>, kind: &str) -> bool {
    // Read while the name is borrowed from the item; changed after.
    let (client, settings) = {
        let Some(upstream) = item.str_member("name") else {
            return true;
        };
        let client = names.client_name(&upstream);
        if names.shadowed(&upstream, &client) {
            tracing::warn!(layer = LAYER, kind, name = %upstream,
                "hidden: a renamed {kind} already has this name");
            return false;
        }
        let renamed = (client != upstream).then(|| {
            if let Err(e) = check_name(&client) {
                // Only a prefix on an upstream name can get here: renames
                // were checked at load time.
                tracing::warn!(layer = LAYER, kind, name = %upstream, "produced name: {e}");
            }
            client.into_owned()
        });
        (renamed, names.item(&upstream))
    };
    if let Some(client) = client {
        item.insert("name", client.into());
    }
    if let Some(settings) = settings {
        if let Some(description) = &settings.description {
            item.insert("description", description.clone().into());
        }
        if kind == "tool" {
            hide_in_schema(
                item.get_mut("inputSchema"),
                &settings.arguments,
                &settings.defaults,
            );
        } else {
            hide_in_prompt(
                item.get_mut("arguments"),
                &settings.arguments,
                &settings.defaults,
            );
        }
    }
    true
}

/// An overridden argument is not the client's to give: drop it from the
/// tool's `inputSchema`; a defaulted one is no longer required.
fn hide_in_schema(
    schema: Option<&mut Value>,
    set: &Map<String, Value>,
    defaults: &Map<String, Value>,
) {
    let Some(Value::Object(schema)) = schema else {
        return;
    };
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.retain(|k, _| !set.contains_key(k));
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|k| {
            !k.as_str()
                .is_some_and(|k| set.contains_key(k) || defaults.contains_key(k))
        });
    }
}

/// The same for a prompt's `arguments` array.
fn hide_in_prompt(
    args: Option<&mut Value>,
    set: &Map<String, Value>,
    defaults: &Map<String, Value>,
) {
    let Some(Value::Array(args)) = args else {
        return;
    };
    let name = |a: &Value| a.get("name").and_then(Value::as_str).map(str::to_owned);
    args.retain(|a| !name(a).is_some_and(|n| set.contains_key(&n)));
    for a in args.iter_mut() {
        if name(a).is_some_and(|n| defaults.contains_key(&n)) {
            if let Some(obj) = a.as_object_mut() {
                obj.insert("required".into(), false.into());
            }
        }
    }
}

/// The answer to a call by a name this layer does not show: the same as a
/// server's for a missing tool or prompt.
fn unknown(id: crate::RequestId, kind: &str, name: &str) -> Box<Message> {
    let error = ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Unknown {kind}: {name}"))
        .with_data(json!({"layer": LAYER, "reason": "unknown_name"}));
    Box::new(Message::error(Some(id), error))
}
