//! Routes: evidence (being written).

use super::{Context, not_implemented};
use crate::Host;

pub(super) async fn negotiated<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>, id: &str) -> http::Response<Vec<u8>> {
    let _ = (context, request, id);
    not_implemented("evidence::negotiated")
}

pub(super) async fn markdown<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>, id: &str) -> http::Response<Vec<u8>> {
    let _ = (context, request, id);
    not_implemented("evidence::markdown")
}

pub(super) async fn json<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>, id: &str) -> http::Response<Vec<u8>> {
    let _ = (context, request, id);
    not_implemented("evidence::json")
}

pub(super) async fn html<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>, id: &str) -> http::Response<Vec<u8>> {
    let _ = (context, request, id);
    not_implemented("evidence::html")
}

pub(super) async fn task_list_page<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
    let _ = (context, request);
    not_implemented("evidence::task_list_page")
}

pub(super) async fn task_page<H: Host>(context: &Context<'_, H>, request: &http::Request<Vec<u8>>, id: &str) -> http::Response<Vec<u8>> {
    let _ = (context, request, id);
    not_implemented("evidence::task_page")
}
