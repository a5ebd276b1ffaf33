//! A listing a layer asks the server for itself (every page), when it must
//! judge a request about an item before the client listed any: `validate`
//! needs the tool's schema, `pin` its fingerprint. Asked through the layers
//! inside the asking one, so what they hide stays hidden.

use crate::payload::Payload;
use crate::{BoxError, Direction, Envelope, Message, RequestId};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use tower::{Service, ServiceExt};

/// Pages of a listing read at most.
const MAX_PAGES: usize = 100;

/// Asks for `method` (`tools/list`, …), every page, and hands each
/// page's result to `page` (to read, or to judge in place), which says
/// whether it could read it. Request
/// ids are `mcp-chain-<layer>-<n>`, numbered by `asked`. Stops at a page
/// that is no answer or cannot be read (with a warning): the caller finds
/// what it needed missing and refuses.
pub(crate) async fn ask_all<S>(
    inner: S,
    layer: &str,
    method: &str,
    asked: &AtomicU64,
    mut page: impl FnMut(&mut Payload) -> bool,
) -> Result<(), BoxError>
where
    S: Service<Envelope, Response = Option<Message>, Error = BoxError> + Clone,
{
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let n = asked.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("mcp-chain-{layer}-{n}"));
        let params = cursor.take().map(|c| json!({"cursor": c}));
        let request = Message::request(id, method, params);
        let answer = inner
            .clone()
            .oneshot(Envelope::new(Direction::ToServer, request))
            .await?;
        let Some(Message::Response(mut listing)) = answer else {
            tracing::warn!(layer, method, "the server did not answer the listing");
            return Ok(());
        };
        let next = match listing.result.member("nextCursor") {
            Ok(Some(next)) if !next.is_null() => Some(next),
            _ => None,
        };
        if !page(&mut listing.result) {
            tracing::warn!(layer, method, "the server's listing cannot be read");
            return Ok(());
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(()),
        }
    }
    Ok(())
}
