//! The client side: framing and the stdio pipes.

pub(crate) mod codec;
pub(crate) mod queue;
pub(crate) mod stdio;
pub(crate) mod writer;
