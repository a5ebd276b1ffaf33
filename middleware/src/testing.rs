//! What the layers' tests share: a request sent through a service and its
//! answer read back as JSON.

use crate::{BoxError, Direction, Envelope, Message};
use serde_json::Value;
use tower::{Service, ServiceExt};

/// `message` sent from the client through `svc`; its answer, as JSON.
pub(crate) async fn send<S>(svc: &mut S, message: Message) -> Value
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError>,
{
    let env = Envelope::new(Direction::ToServer, message);
    let out = svc
        .ready()
        .await
        .expect("ready")
        .call(env)
        .await
        .expect("answered");
    out.expect("an answer").to_value()
}

/// A fixed-seed generator (xorshift) for tests that read many generated
/// inputs: each call a number below `n`, the same sequence every run.
pub(crate) fn numbers(seed: u64) -> impl FnMut(usize) -> usize {
    let mut seed = seed;
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}
