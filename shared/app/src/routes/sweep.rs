//! Routes: sweep (being written).

use super::{Context, not_implemented};
use crate::Host;

pub(super) async fn post<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
    let _ = (context, request);
    not_implemented("sweep::post")
}
