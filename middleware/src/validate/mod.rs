//! `validate`: a tool's arguments are checked against the `inputSchema` the
//! server listed for it, before the server sees them. A call whose
//! arguments do not fit is answered with -32602 and the validation errors
//! (where, and why) in `data`; the server never sees it.
//!
//! ```toml
//! [[middleware]]
//! type = "validate"
//! output = true        # also check structuredContent against outputSchema
//! ```
//!
//! The schemas come from the `tools/list` answers the chain relays, as they
//! stand at this layer's place in it (after the layers inside it renamed
//! anything). Each is compiled when a call first needs it, and kept while
//! the listings repeat it unchanged: never once per call. A call that
//! comes before any listing has named its tool makes the layer ask for the
//! listing itself, once (all pages), through the layers inside it.
//!
//! A guard fails closed: a call whose tool has no schema the layer could
//! learn (unknown after the listing), whose schema cannot be compiled (bad
//! JSON Schema, a `$ref` to somewhere else: nothing is fetched), or whose
//! name or arguments cannot be read, is refused, never passed unchecked.
//!
//! With `output = true`, a result's `structuredContent` is checked against
//! the tool's `outputSchema`; one that does not fit is replaced by -32603
//! with the errors, since the client would act on what the schema promised.
//! A result with `isError` is passed as it is (its content need not fit).

mod budget;
mod config;
mod schemas;
mod service;

pub use config::ValidateConfig;
pub use service::{Validate, ValidateLayer};

#[cfg(test)]
mod tests;
