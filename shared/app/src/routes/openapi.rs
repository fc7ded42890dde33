//! Routes: openapi (being written).

use super::{Context, not_implemented};
use crate::Host;

pub(super) async fn document<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
    let _ = (context, request);
    not_implemented("openapi::document")
}

pub(super) async fn docs<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
    let _ = (context, request);
    not_implemented("openapi::docs")
}
