//! The edits themselves, on requests going out and answers coming back.
//! Kept apart from the `Service` plumbing so each can be read on its own.

use super::layer::Rules;
use super::names::{check_name, Names};
use super::redact::Redactor;
use crate::embedded::{mark_private, INPUT_RESPONSES};
use crate::message::{method, ErrorCode, ErrorObject, Message, Request};
use crate::payload::{Item, Payload, Unreadable};
use crate::target::REF_PROMPT;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The name this layer gives in `data.layer`.
const LAYER: &str = "rewrite";

/// What to do to the answer of a request, decided when it went out.
#[derive(Debug, Clone, Default)]
pub(super) struct Post {
    /// The rules for a call whose tool some rule spares (`except_tools`);
    /// `None`: every rule.
    spared: Option<Arc<Redactor>>,
    /// Rename in the tool and/or prompt arrays of a list result.
    listing: Option<Listing>,
    /// Redact the text in the result (tool, resource, prompt content).
    content: bool,
    /// Redact an error answer (message, data and the rest).
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
        self.listing.is_none() && !self.content && !self.error
    }
}

// === impl Rules ===

impl Rules {
    /// Edits a client request on its way out. `Err` is the answer when the
    /// client named a tool or prompt this layer never shows (boxed: it is
    /// the rare path, and a `Message` is large).
    pub(super) fn request(&self, req: &mut Request) -> Result<Post, Box<Message>> {
        let redact = !self.redactor.is_empty();
        if self.redact_arguments {
            self.input_responses(req)?;
        }
        let mut post = Post {
            error: redact,
            ..Post::default()
        };
        match req.method.as_str() {
            method::TOOLS_CALL => {
                post.spared = self.call(req, &self.tools, "tool")?.map(Arc::new);
                post.content = redact;
            }
            method::PROMPTS_GET => {
                self.call(req, &self.prompts, "prompt")?;
                post.content = redact;
            }
            method::COMPLETION_COMPLETE => self.completion(req)?,
            method::RESOURCES_READ | method::TASKS_RESULT | method::TASKS_GET => {
                post.content = redact
            }
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
    /// Only the members changed are written anew; the rest of the params
    /// stay the sender's text. The rules for this call when some rule
    /// spares its tool.
    fn call(
        &self,
        req: &mut Request,
        names: &Names,
        kind: &str,
    ) -> Result<Option<Redactor>, Box<Message>> {
        let spares = kind == "tool" && self.redactor.spares_some();
        if names.is_identity() && !self.redact_arguments && !spares {
            return Ok(None);
        }
        let id = &req.id;
        let Some(params) = req.params.as_mut() else {
            return Err(unreadable(id, &Unreadable::new("params missing")));
        };
        let name = match params.str_member("name") {
            Ok(Some(name)) => name.into_owned(),
            Ok(None) => return Err(unreadable(id, &Unreadable::new("params.name missing"))),
            Err(e) => return Err(unreadable(id, &e)),
        };
        let Some(upstream) = names.upstream_name(&name) else {
            return Err(unknown(id.clone(), kind, &name));
        };
        let item = names.item(upstream);
        let spared = match spares {
            true => self.redactor.for_tool(&[&name, upstream]),
            false => None,
        };
        if upstream != name {
            crate::decided!("rewrite", "renamed", kind, count = 1);
            let upstream = Value::from(upstream);
            params
                .set_member("name", upstream)
                .map_err(|e| unreadable(id, &e))?;
        }
        let has_args = item.is_some_and(|i| !i.arguments.is_empty() || !i.defaults.is_empty());
        if !(has_args || self.redact_arguments) {
            return Ok(spared);
        }
        let read = params.member("arguments").map_err(|e| unreadable(id, &e))?;
        let mut args = match read {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args) => args,
        };
        if let (Some(item), Value::Object(args)) = (item, &mut args) {
            for (k, v) in &item.arguments {
                args.insert(k.clone(), v.clone());
            }
            for (k, v) in &item.defaults {
                args.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        if self.redact_arguments {
            spared
                .as_ref()
                .unwrap_or(&self.redactor)
                .all_strings(&mut args);
        }
        params
            .set_member("arguments", args)
            .map_err(|e| unreadable(id, &e))?;
        Ok(spared)
    }

    /// The client's answers to a server's embedded requests (on a retry or
    /// a `tasks/update`) are arguments too: redacted like them.
    fn input_responses(&self, req: &mut Request) -> Result<(), Box<Message>> {
        let id = &req.id;
        let Some(params) = req.params.as_mut() else {
            return Ok(());
        };
        let read = params
            .member(INPUT_RESPONSES)
            .map_err(|e| unreadable(id, &e))?;
        let Some(mut responses) = read else {
            return Ok(());
        };
        if self.redactor.all_strings(&mut responses) {
            params
                .set_member(INPUT_RESPONSES, responses)
                .map_err(|e| unreadable(id, &e))?;
        }
        Ok(())
    }

    /// `completion/complete` for a prompt's argument names the prompt too.
    fn completion(&self, req: &mut Request) -> Result<(), Box<Message>> {
        if self.prompts.is_identity() {
            return Ok(());
        }
        let id = &req.id;
        let Some(params) = req.params.as_mut() else {
            return Err(unreadable(id, &Unreadable::new("params missing")));
        };
        let mut r = match params.member("ref") {
            Ok(Some(r)) => r,
            Ok(None) => return Err(unreadable(id, &Unreadable::new("params.ref missing"))),
            Err(e) => return Err(unreadable(id, &e)),
        };
        match r.get("type").and_then(Value::as_str) {
            Some(REF_PROMPT) => {}
            Some(_) => return Ok(()),
            None => {
                let e = Unreadable::new("params.ref.type is not a string");
                return Err(unreadable(id, &e));
            }
        }
        let Some(Value::String(name)) = r.get_mut("name") else {
            let e = Unreadable::new("params.ref.name is not a string");
            return Err(unreadable(id, &e));
        };
        let Some(upstream) = self.prompts.upstream_name(name) else {
            return Err(unknown(id.clone(), "prompt", name));
        };
        if name == upstream {
            return Ok(());
        }
        *name = upstream.to_owned();
        params.set_member("ref", r).map_err(|e| unreadable(id, &e))
    }

    /// Edits the answer to a request, as `post` says.
    pub(super) fn answer(&self, post: Post, answer: &mut Message) {
        let redactor = post.spared.as_deref().unwrap_or(&self.redactor);
        match answer {
            Message::Response(resp) => {
                let mut edited = Ok(false);
                if let Some(listing) = post.listing {
                    edited = self.listing(listing, &mut resp.result);
                }
                if post.content {
                    edited = edited.and_then(|listed| {
                        let redacted = resp.result.edit_value(|v| redactor.content(v))?;
                        Ok(listed | redacted)
                    });
                }
                // An edited result is this chain's view, not the server's.
                if let Ok(true) = edited {
                    edited = mark_private(&mut resp.result).map(|()| true);
                }
                // What cannot be read cannot be renamed or redacted: the
                // client gets an error, not the server's text unedited.
                if let Err(e) = edited {
                    tracing::warn!(layer = LAYER, error = %e, "refused an answer it cannot read");
                    *answer = *unreadable(&resp.id, &e);
                }
            }
            // All of an error: its message, its `data` (servers put the
            // failing input and its output there) and any member beside.
            Message::Error(e) if post.error => {
                let error = &mut e.error;
                redactor.string(&mut error.message);
                if let Some(data) = error.data.as_mut() {
                    redactor.all_strings(data);
                }
                for value in error.extra.values_mut() {
                    redactor.all_strings(value);
                }
            }
            _ => {}
        }
    }

    /// Renames in a list result; true when an item changed.
    fn listing(&self, listing: Listing, result: &mut Payload) -> Result<bool, Unreadable> {
        let mut changed = false;
        if matches!(listing, Listing::Tools | Listing::Discover) {
            changed |= result.edit_items("tools", |item| rename_item(&self.tools, item, "tool"))?;
        }
        if matches!(listing, Listing::Prompts | Listing::Discover) {
            changed |=
                result.edit_items("prompts", |item| rename_item(&self.prompts, item, "prompt"))?;
        }
        if changed {
            crate::decided!("rewrite", "renamed", kind = "listing");
        }
        Ok(changed)
    }

    /// Edits a message from the server on its way to the client: log
    /// messages are redacted like results, and a task notification's
    /// inlined result like the call's. False when the message must not go
    /// on: one that cannot be read cannot be redacted.
    pub(super) fn server_message(&self, msg: &mut Message) -> bool {
        if self.redactor.is_empty() {
            return true;
        }
        let Message::Notification(note) = msg else {
            return true;
        };
        let log = note.method == method::NOTIFICATION_MESSAGE;
        if !(log || note.method == method::NOTIFICATION_TASKS) {
            return true;
        }
        let Some(params) = note.params.as_mut() else {
            return true;
        };
        match params.value_mut() {
            Ok(params) => {
                match params.get_mut("data") {
                    Some(data) if log => self.redactor.all_strings(data),
                    _ => self.redactor.content(params),
                };
                true
            }
            Err(e) => {
                tracing::warn!(layer = LAYER, error = %e, "dropped a log message it cannot read");
                false
            }
        }
    }
}

/// Renames one item of a list and applies its settings. False (drop it)
/// when a rename of another item has taken its name.
fn rename_item(names: &Names, item: &mut Item<'_>, kind: &str) -> bool {
    // Read while the name is borrowed from the item; changed after.
    let (client, settings) = {
        // A nameless item cannot be renamed; the filter, when there is
        // one, judges it.
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
        item.set("name", client.into());
    }
    if let Some(settings) = settings {
        if let Some(description) = &settings.description {
            item.set("description", description.clone().into());
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

/// The answer to a request this layer must edit but cannot read: refused
/// (-32602), never passed unedited.
fn unreadable(id: &crate::RequestId, e: &Unreadable) -> Box<Message> {
    let message = format!("cannot read the request: {e}");
    let error = ErrorObject::refusal(ErrorCode::INVALID_PARAMS, LAYER, "unreadable", &message);
    Box::new(Message::error(Some(id.clone()), error))
}

/// The answer to a call by a name this layer does not show: the same as a
/// server's for a missing tool or prompt.
fn unknown(id: crate::RequestId, kind: &str, name: &str) -> Box<Message> {
    let error = ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Unknown {kind}: {name}"))
        .with_data(json!({"layer": LAYER, "reason": "unknown_name"}));
    Box::new(Message::error(Some(id), error))
}
