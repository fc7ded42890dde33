//! Routes: approvals (being written).

use super::{Context, not_implemented};
use crate::Host;

pub(super) async fn decide<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>, id: &str) -> http::Response<Vec<u8>> {
    let _ = (context, request, id);
    not_implemented("approvals::decide")
}
