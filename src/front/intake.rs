//! A POST's body, taken in within bounds: all of it within `body_timeout`
//! (a body trickled a byte a minute must not hold a connection, and a
//! session's slot, for good), no more than `max_message_bytes`, and a big
//! one only with room in the process's budget of bytes in flight (shared
//! with every session's servers). What breaks a bound is answered at once.

use super::error::FrontError;
use super::Front;
use crate::peer::Read;
use crate::transport::budget::Reserved;
use crate::transport::codec::SHARED_LINE_BYTES;
use http_body_util::BodyExt;
use hyper::body::Incoming as Body;
use hyper::header::CONTENT_LENGTH;
use hyper::HeaderMap;
use std::time::Duration;

/// How long a body waits for room in the budget before it is refused: a
/// client is better told to come back than kept waiting with its body.
const BUDGET_WAIT: Duration = Duration::from_secs(2);

/// The body as one read, or why it is refused. A `Content-Length` over
/// the cap is refused before a byte is read.
pub(super) async fn take(
    front: &Front,
    headers: &HeaderMap,
    body: Body,
) -> Result<Read, FrontError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > front.config.max_message_bytes as u64) {
        return Err(FrontError::BodyTooLarge);
    }
    let mut reserved = None;
    let collected = tokio::time::timeout(
        front.settings.body_timeout,
        collect(front, body, &mut reserved),
    );
    match collected.await {
        Ok(Ok(bytes)) => Ok(Read::from_vec_held(bytes, &front.budget, reserved)),
        Ok(Err(refused)) => Err(refused),
        Err(_) => Err(FrontError::BodyTimeout),
    }
}

async fn collect(
    front: &Front,
    mut body: Body,
    reserved: &mut Option<Reserved>,
) -> Result<Vec<u8>, FrontError> {
    let cap = front.config.max_message_bytes;
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| FrontError::BodyUnreadable)?.into_data() else {
            continue;
        };
        let len = bytes.len() + data.len();
        if len > cap {
            return Err(FrontError::BodyTooLarge);
        }
        if len >= SHARED_LINE_BYTES {
            front
                .budget
                .reserve(reserved, len, BUDGET_WAIT)
                .await
                .map_err(|why| FrontError::OverBudget(why.to_string()))?;
        }
        bytes.extend_from_slice(&data);
    }
    Ok(bytes)
}
