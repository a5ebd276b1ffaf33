//! What the bench's programs share: the load generator's OTLP sink and the
//! two HTTP fixtures read requests the same way.

pub mod http1;
