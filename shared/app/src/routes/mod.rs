//! Route handlers. Each takes the invocation context and the request and
//! returns a response; errors use [`crate::ApiError`].

mod health;

use crate::router::{Matched, RouteId};
use crate::{Config, Host, Invocation};

/// Everything a handler may use.
pub(crate) struct Context<'a, H: Host> {
    pub(crate) host: &'a H,
    pub(crate) config: &'a Config,
    pub(crate) invocation: &'a Invocation,
}

pub(crate) async fn dispatch<H: Host>(
    context: &Context<'_, H>,
    route: Matched,
    request: http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let head = request.method() == http::Method::HEAD;
    let mut response = match route.id {
        RouteId::Health => health::get(context).await,
    };
    if head {
        response.body_mut().clear();
    }
    response
}
