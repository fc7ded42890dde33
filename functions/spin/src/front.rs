//! The `front` role: the HTTP component (`agent-zero` in `spin.toml`).
//! It converts spin-sdk's request into the core's, calls
//! `agent_zero_app::handle`, answers, then hands the ticks the request
//! enqueued to the tick component ([`crate::TICKS_URL`]). The role boundary
//! is this module's one `#[cfg(feature = "front")]` in `lib.rs`.

use agent_zero_app::{ApiError, BoundedBody, ErrorCode, Settings};

use crate::{SpinHost, hand_off_ticks, invocation, ports, read_settings, read_to, respond};

/// Converts spin-sdk's incoming request into the core's request, or into
/// the answer to a request refused before its body was read (over the
/// route's limit, see `agent_zero_app::body_limit`).
async fn to_http(
    settings: &Settings,
    request: spin_sdk::http::IncomingRequest,
) -> Result<http::Request<Vec<u8>>, http::Response<Vec<u8>>> {
    let mut builder = http::Request::builder()
        .method(request.method().to_string().as_str())
        .uri(request.path_with_query().unwrap_or_else(|| "/".into()));
    for (name, value) in request.headers().entries() {
        builder = builder.header(name, value);
    }
    let (head, ()) = builder
        .body(())
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, format!("request conversion: {e}")).into_response())?
        .into_parts();
    match read_body(settings, &head, request).await {
        Ok(body) => Ok(http::Request::from_parts(head, body)),
        Err(error) => Err(agent_zero_app::refuse(settings, &head, error)),
    }
}

/// Reads the request's body up to the route's limit (`read_to`).
async fn read_body(
    settings: &Settings,
    head: &http::request::Parts,
    request: spin_sdk::http::IncomingRequest,
) -> Result<Vec<u8>, ApiError> {
    let limit = agent_zero_app::body_limit(&head.method, head.uri.path(), settings)?;
    read_to(BoundedBody::start(limit, &head.headers)?, request).await
}

/// The component's `wasi:http/incoming-handler` export. The only place
/// unsafe code is allowed: the glue spin-sdk's macro generates.
#[allow(unsafe_code)]
mod entry {
    use super::*;

    /// Answers the request, then hands the ticks it enqueued to the tick
    /// component.
    #[spin_sdk::http_component]
    async fn handle(request: spin_sdk::http::IncomingRequest, out: spin_sdk::http::ResponseOutparam) {
        use agent_zero_ports::Clock as _;
        let settings = read_settings();
        let host = SpinHost::new(&settings);
        let invocation = invocation();
        let method = http::Method::from_bytes(request.method().to_string().as_bytes()).unwrap_or_default();
        let path = request.path_with_query().unwrap_or_else(|| "/".into());
        let path = path.split(['?', '#']).next().unwrap_or("/").to_owned();
        let mut response = match to_http(&settings, request).await {
            Ok(request) => agent_zero_app::handle(&host, &settings, &invocation, request).await,
            Err(refusal) => refusal,
        };
        agent_zero_app::log_line::stamp(&mut response, &invocation.request_id);
        let duration = ports::SystemClock.now_ms().saturating_sub(invocation.now_ms);
        let line = agent_zero_app::log_line::request_line(&settings, &invocation, &method, &path, &response, duration);
        respond(&settings, &invocation.request_id, response, out).await;
        // After the answer, as the other lines: stdout, which Spin captures.
        println!("{line}");
        hand_off_ticks(&host, &settings, &invocation.request_id).await;
    }
}
