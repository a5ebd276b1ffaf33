//! A POST's body, taken in within bounds: all of it within `body_timeout`
//! (a body trickled a byte a minute must not hold a connection, and a
//! session's slot, for good), no more than `max_message_bytes`, and a big
//! one only with room in the process's budget of bytes in flight (shared
//! with every session's servers). What breaks a bound is answered at once.

use super::body::{rpc_error, status, Reply};
use super::Front;
use crate::relay::Read;
use crate::transport::budget::Reserved;
use crate::transport::codec::SHARED_LINE_BYTES;
use http_body_util::BodyExt;
use hyper::body::Incoming as HttpBody;
use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};
use mcp_chain_middleware::ErrorCode;
use std::time::Duration;

/// How long a body waits for room in the budget before it is refused: a
/// client is better told to come back than kept waiting with its body.
const BUDGET_WAIT: Duration = Duration::from_secs(2);

/// Why a body was not taken.
enum Refused {
    TooLarge,
    Unreadable,
    OverBudget(String),
}

/// The body as one read, or the answer that refuses it.
pub(super) async fn take(front: &Front, body: HttpBody) -> Result<Read, Box<Response<Reply>>> {
    let mut reserved = None;
    let collected = tokio::time::timeout(
        front.settings.body_timeout,
        collect(front, body, &mut reserved),
    );
    let refused = match collected.await {
        Ok(Ok(bytes)) => return Ok(Read::from_vec_held(bytes, &front.budget, reserved)),
        Err(_) => status(
            StatusCode::REQUEST_TIMEOUT,
            "the request body did not arrive in time",
        ),
        Ok(Err(Refused::TooLarge)) => status(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the message is over proxy.max_message_bytes",
        ),
        Ok(Err(Refused::Unreadable)) => status(
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        ),
        Ok(Err(Refused::OverBudget(why))) => {
            let mut answer = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::OVER_BUDGET,
                &why,
            );
            answer
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("5"));
            answer
        }
    };
    Err(Box::new(refused))
}

async fn collect(
    front: &Front,
    mut body: HttpBody,
    reserved: &mut Option<Reserved>,
) -> Result<Vec<u8>, Refused> {
    let cap = front.config.max_message_bytes;
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| Refused::Unreadable)?.into_data() else {
            continue;
        };
        let len = bytes.len() + data.len();
        if len > cap {
            return Err(Refused::TooLarge);
        }
        if len >= SHARED_LINE_BYTES {
            front
                .budget
                .reserve(reserved, len, BUDGET_WAIT)
                .await
                .map_err(|why| Refused::OverBudget(why.to_string()))?;
        }
        bytes.extend_from_slice(&data);
    }
    Ok(bytes)
}
