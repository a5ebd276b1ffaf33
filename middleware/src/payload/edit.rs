//! Changing a payload: one member, the items of a list, or the whole value.
//! What a layer did not change stays the sender's text.

use super::object::{self, find, Slot};
use super::{list, Item, Look, Object, Payload, Repr, Text, Unreadable};
use crate::json::value;
use serde_json::Value;
use std::sync::OnceLock;

// === impl Payload ===

impl Payload {
    /// The whole value, to be changed in place; from then on the payload is
    /// written from it.
    pub fn value_mut(&mut self) -> Result<&mut Value, Unreadable> {
        self.settle();
        if !matches!(self.repr, Repr::Value(_)) {
            let (value, size) = self.read_whole()?;
            self.size_hint = size;
            self.repr = Repr::Value(Box::new(value));
        }
        match &mut self.repr {
            Repr::Value(v) => Ok(v),
            Repr::Text(_) | Repr::Object(_) => unreachable!("just made a value"),
        }
    }

    /// Lets `edit` change the whole value; the change is kept only when
    /// `edit` says it changed something (`Ok(true)`). Otherwise the
    /// payload stays as it was, the sender's text included: a 10 MB result
    /// a redaction found nothing in goes out as it came, not parsed, kept
    /// and written anew.
    pub fn edit_value(
        &mut self,
        edit: impl FnOnce(&mut Value) -> bool,
    ) -> Result<bool, Unreadable> {
        self.settle();
        if let Repr::Value(value) = &mut self.repr {
            return Ok(edit(value));
        }
        let (mut value, size) = self.read_whole()?;
        if !edit(&mut value) {
            return Ok(false);
        }
        self.size_hint = size;
        self.repr = Repr::Value(Box::new(value));
        Ok(true)
    }

    /// The whole value read from the payload's text, and that text's size.
    fn read_whole(&self) -> Result<(Value, usize), Unreadable> {
        let bytes = self.to_bytes();
        let value = value::parse(&bytes).map_err(Unreadable::json)?;
        Ok((value, bytes.len()))
    }

    /// Sets the member `name` of an object (added at the end when there is
    /// none); the other members stay as they are. `Err` when this is not an
    /// object.
    pub fn set_member(&mut self, name: &str, value: Value) -> Result<(), Unreadable> {
        let o = self.object(None)?;
        o.changed = true;
        object::set(&mut o.members, o.text.as_bytes(), name, value);
        Ok(())
    }

    /// Edits the items of the array member `key` of an object (`tools`,
    /// `prompts`, …) one by one; an item is kept when `edit` returns true.
    /// The items are read one level deep, the rest of the payload not at
    /// all. `Ok(true)` when an item was dropped or changed; nothing
    /// happens when there is no such member. `Err`, with nothing done, when
    /// this is not an object or `key` is not an array.
    pub fn edit_items(
        &mut self,
        key: &str,
        mut edit: impl FnMut(&mut Item<'_>) -> bool,
    ) -> Result<bool, Unreadable> {
        let o = self.object(Some(key))?;
        let text = o.text.as_bytes();
        let Some(n) = find(&o.members, text, key) else {
            return Ok(false);
        };
        let slot = &mut o.members[n].value;
        if let Slot::At(at) = slot {
            let entries = list::entries(text, at.clone())
                .map_err(|_| Unreadable::new(format!("\"{key}\" is not an array")))?;
            *slot = Slot::List(entries);
        }
        let Slot::List(entries) = slot else {
            // Set by a layer as a value: read it as text, like the rest.
            let text = object::written(&o.members, text);
            self.repr = Repr::Text(text);
            return self.edit_items(key, edit);
        };
        let before = entries.len();
        let mut changed = false;
        entries.retain_mut(|entry| {
            let mut item = Item::new(text, entry);
            let keep = edit(&mut item);
            changed |= item.is_changed();
            keep
        });
        let changed = changed || entries.len() != before;
        o.changed |= changed;
        Ok(changed)
    }

    /// Moves what a read found into the representation, for a change.
    fn settle(&mut self) {
        match self.look.take() {
            Some(Look::Whole(value)) => self.repr = Repr::Value(value),
            Some(Look::Members(members)) => {
                let text = self.take_text();
                self.repr = Repr::Object(Box::new(Object::new(text, members, false)))
            }
            Some(Look::Failed(_)) | None => {}
        }
    }

    /// The text, taken out of a payload that is still text (`repr` is left
    /// to be set by the caller).
    fn take_text(&mut self) -> Text {
        match std::mem::replace(&mut self.repr, Repr::Value(Box::default())) {
            Repr::Text(text) => text,
            _ => unreachable!("looked at only while it is text"),
        }
    }

    /// The payload read one level deep, as an object, for a change, with
    /// the member `list` (when not read yet) read as a list in the same
    /// pass. Keys that are not plain are settled first: the value is read
    /// whole and written anew, so from then on it says plainly what was
    /// read.
    fn object(&mut self, list: Option<&str>) -> Result<&mut Object, Unreadable> {
        self.settle();
        let mut changed = false;
        loop {
            match &self.repr {
                Repr::Object(_) => break,
                Repr::Value(value) => {
                    // Built or changed as a whole: its text, read as
                    // received text is.
                    let text = serde_json::to_vec(value).expect("a Value always serializes");
                    self.repr = Repr::Text(Text::written(text));
                    changed = true;
                }
                Repr::Text(text) => {
                    let bytes = text.as_bytes();
                    // With the list read in the same pass; if that fails (it
                    // is not a list, maybe only where a key written twice
                    // is not the last), read plainly: the last one is
                    // judged as a list below.
                    let read = object::members_with_list(bytes, 0, list)
                        .or_else(|_| object::members(bytes, 0))
                        .map_err(|e| unreadable(bytes, e))?;
                    self.repr = if read.plain {
                        let text = self.take_text();
                        Repr::Object(Box::new(Object::new(text, read.members, changed)))
                    } else {
                        let value = value::parse(bytes).map_err(Unreadable::json)?;
                        Repr::Value(Box::new(value))
                    };
                }
            }
        }
        match &mut self.repr {
            Repr::Object(o) => {
                // Whatever comes next may change it.
                o.written = OnceLock::new();
                Ok(o)
            }
            Repr::Text(_) | Repr::Value(_) => unreachable!("the loop ends on an object"),
        }
    }
}

/// Why a text could not be read one level deep.
fn unreadable(text: &[u8], e: serde_json::Error) -> Unreadable {
    match text.first() {
        Some(b'{') => Unreadable::json(e),
        _ => Unreadable::not_an_object(),
    }
}
