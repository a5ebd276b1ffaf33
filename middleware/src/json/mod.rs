//! The ground floor the message model (`message`) and its payloads
//! (`payload`) both stand on: reading JSON text as serde_json reads it,
//! with the checks serde_json skips for a value it passes over (depth, lone
//! surrogates) and without `Value`'s raw-value quirk (`value`); member
//! names and where a borrowed slice lies (`key`); writing JSON into a
//! buffer or a count (`out`). It imports neither floor above it.

pub(crate) mod key;
pub(crate) mod out;
pub(crate) mod value;

pub(crate) use out::{write_str, Count, Out};
