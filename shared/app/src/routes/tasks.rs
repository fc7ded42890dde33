//! Routes: tasks (being written).

use super::{Context, not_implemented};
use crate::Host;

pub(super) async fn list<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
    let _ = (context, request);
    not_implemented("tasks::list")
}

pub(super) async fn create<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
    let _ = (context, request);
    not_implemented("tasks::create")
}

pub(super) async fn get<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>, id: &str) -> http::Response<Vec<u8>> {
    let _ = (context, request, id);
    not_implemented("tasks::get")
}
