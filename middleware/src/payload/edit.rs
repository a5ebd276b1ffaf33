//! Changing a payload: one member, the items of a list, or the whole value.
//! What a layer did not change stays the sender's text.

use super::object::{self, find, Slot};
use super::{list, value, Item, Object, Payload, Repr, Text, Unreadable};
use serde_json::Value;

// === impl Payload ===

impl Payload {
    /// The whole value, to be changed in place; from then on the payload is
    /// written from it.
    pub fn value_mut(&mut self) -> Result<&mut Value, Unreadable> {
        self.settle();
        if !matches!(self.repr, Repr::Value(_)) {
            let value = value::parse(&self.to_bytes()).map_err(Unreadable::json)?;
            self.repr = Repr::Value(Box::new(value));
        }
        match &mut self.repr {
            Repr::Value(v) => Ok(v),
            Repr::Text(_) | Repr::Object(_) => unreachable!("just made a value"),
        }
    }

    /// Sets the member `name` of an object (added at the end when there is
    /// none); the other members stay as they are. `Err` when this is not an
    /// object.
    pub fn set_member(&mut self, name: &str, value: Value) -> Result<(), Unreadable> {
        let o = self.object()?;
        o.changed = true;
        object::set(&mut o.members, o.text.as_bytes(), name, value);
        Ok(())
    }

    /// Edits the items of the array member `key` of an object (`tools`,
    /// `prompts`, …) one by one; an item is kept when `edit` returns true.
    /// The items are read one level deep, the rest of the payload not at
    /// all. Nothing happens when there is no such member. `Err`, with
    /// nothing done, when this is not an object or `key` is not an array.
    pub fn edit_items(
        &mut self,
        key: &str,
        mut edit: impl FnMut(&mut Item<'_>) -> bool,
    ) -> Result<(), Unreadable> {
        let o = self.object()?;
        let text = o.text.as_bytes();
        let Some(n) = find(&o.members, text, key) else {
            return Ok(());
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
        o.changed |= changed || entries.len() != before;
        Ok(())
    }

    /// Moves a value read whole into the representation, for a change.
    fn settle(&mut self) {
        if let Some(Ok(value)) = self.whole.take() {
            self.repr = Repr::Value(value);
        }
    }

    /// The payload read one level deep, as an object, for a change. Keys
    /// that are not plain are settled first: the value is read whole and
    /// written anew, so from then on it says plainly what was read.
    fn object(&mut self) -> Result<&mut Object, Unreadable> {
        self.settle();
        if let Repr::Text(text) = &self.repr {
            let read = object::members(text.as_bytes(), 0);
            if !read.map_err(|_| Unreadable::not_an_object())?.plain {
                let value = value::parse(text.as_bytes()).map_err(Unreadable::json)?;
                self.repr = Repr::Value(Box::new(value));
            }
        }
        let mut changed = false;
        if let Repr::Value(value) = &self.repr {
            // Built or changed as a whole: its text, read as received text is.
            let text = serde_json::to_vec(value).expect("a Value always serializes");
            self.repr = Repr::Text(Text::written(text));
            changed = true;
        }
        if let Repr::Text(text) = &self.repr {
            let read = object::members(text.as_bytes(), 0);
            let members = read.map_err(|_| Unreadable::not_an_object())?.members;
            let text = text.clone();
            self.repr = Repr::Object(Box::new(Object {
                text,
                members,
                changed,
            }));
        }
        match &mut self.repr {
            Repr::Object(o) => Ok(o),
            Repr::Text(_) | Repr::Value(_) => unreachable!("just read one level deep"),
        }
    }
}
