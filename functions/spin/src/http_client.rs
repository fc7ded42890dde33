//! The outbound HTTP port over `wasi:http/outgoing-handler`. Destinations
//! must be listed in `allowed_outbound_hosts` in `spin.toml`.
//!
//! `spin_sdk::http::send` passes no request options, so a call could wait
//! as long as the peer likes. This adapter calls the handler itself and
//! hands a request's [`RequestTimeout`] to the host as `wasi:http`
//! `request-options` (connect, first-byte and between-bytes timeouts); the
//! host enforces them, so no guest timer has to race the response.

use std::task::Poll;

use agent_zero_ports::{BoundedResponseBody, HttpClient, HttpError, RequestTimeout, ResponseLimit};
use futures::{SinkExt, StreamExt};
use spin_sdk::http::{Fields, Method, OutgoingRequest, Scheme};
use spin_sdk::wit::wasi::http0_2_0::outgoing_handler;
use spin_sdk::wit::wasi::http0_2_0::types::{ErrorCode, IncomingResponse, RequestOptions};

/// Outbound HTTP through the Spin host.
pub(crate) struct SpinHttp;

impl HttpClient for SpinHttp {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let host = request.uri().host().unwrap_or_default().to_owned();
        let timeout = RequestTimeout::of(&request);
        let limit = ResponseLimit::of(&request);
        let (outgoing, body) = outgoing_request(request)?;
        let mut sink = outgoing.take_body();
        let options = timeout.map(|ms| {
            let options = RequestOptions::new();
            let nanos = Some(ms.saturating_mul(1_000_000));
            // Each setter fails only when the host does not support that
            // timeout; the others still bound the call.
            let _ = options.set_connect_timeout(nanos);
            let _ = options.set_first_byte_timeout(nanos);
            let _ = options.set_between_bytes_timeout(nanos);
            options
        });
        let pending = outgoing_handler::handle(outgoing, options);
        sink.send(body).await.map_err(|e| HttpError::Transport(format!("writing the request body: {e}")))?;
        drop(sink);
        let response = match pending {
            Ok(future) => incoming_response(future).await,
            Err(code) => Err(code),
        }
        .map_err(|code| error(code, &host, timeout))?;
        let mut builder = http::Response::builder().status(response.status());
        for (name, value) in response.headers().entries() {
            builder = builder.header(name, value);
        }
        let headers = builder.headers_ref().cloned().unwrap_or_default();
        let mut body = BoundedResponseBody::new(limit, &headers)?;
        // Read chunk by chunk; an early return drops the stream, which
        // finishes the incoming body without reading the rest.
        let mut stream = response.take_body_stream();
        while let Some(chunk) = stream.next().await {
            body.push(&chunk.map_err(|e| read_error(&e.to_debug_string(), timeout))?)?;
        }
        drop(stream);
        builder.body(body.into_bytes()).map_err(|e| HttpError::Transport(e.to_string()))
    }
}

/// The `wasi:http` request of `request`, and its body. spin-sdk's own
/// conversion (`TryIntoOutgoingRequest`) reports through `anyhow`, whose
/// error formatting links std's backtrace printer and a symbol demangler
/// into the component; this one names the part the host refused.
fn outgoing_request(request: http::Request<Vec<u8>>) -> Result<(OutgoingRequest, Vec<u8>), HttpError> {
    let (head, body) = request.into_parts();
    let refused = |what: &str| HttpError::Transport(format!("the host refused the request's {what}"));
    let headers: Vec<(String, Vec<u8>)> =
        head.headers.iter().map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_owned())).collect();
    let outgoing = OutgoingRequest::new(Fields::from_list(&headers).map_err(|_| refused("headers"))?);
    outgoing.set_method(&Method::from(head.method)).map_err(|()| refused("method"))?;
    let uri = &head.uri;
    outgoing.set_path_with_query(uri.path_and_query().map(|p| p.as_str())).map_err(|()| refused("path"))?;
    let scheme = uri.scheme().map(|scheme| match scheme.as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.to_owned()),
    });
    outgoing.set_scheme(scheme.as_ref()).map_err(|()| refused("scheme"))?;
    outgoing.set_authority(uri.authority().map(|a| a.as_str())).map_err(|()| refused("authority"))?;
    Ok((outgoing, body))
}

/// Waits for the host to produce the response head.
async fn incoming_response(
    future: spin_sdk::wit::wasi::http0_2_0::types::FutureIncomingResponse,
) -> Result<IncomingResponse, ErrorCode> {
    let mut token = None;
    std::future::poll_fn(|context| match future.get() {
        // `get` answers once: the outer result says whether it was taken.
        Some(Ok(result)) => Poll::Ready(result),
        Some(Err(())) => Poll::Ready(Err(ErrorCode::InternalError(Some("response already taken".into())))),
        None => {
            token = Some(spin_executor::CancelOnDropToken::from(spin_executor::push_waker_and_get_token(
                future.subscribe(),
                context.waker().clone(),
            )));
            Poll::Pending
        }
    })
    .await
}

/// A failure while reading the body: a timeout when the host says so.
fn read_error(message: &str, timeout: Option<u64>) -> HttpError {
    match timeout {
        Some(ms) if message.contains("timeout") || message.contains("Timeout") => HttpError::Timeout(ms),
        _ => HttpError::Transport(message.to_owned()),
    }
}

fn error(code: ErrorCode, host: &str, timeout: Option<u64>) -> HttpError {
    match (code, timeout) {
        (
            ErrorCode::ConnectionTimeout | ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout,
            Some(ms),
        ) => HttpError::Timeout(ms),
        (ErrorCode::HttpRequestDenied, _) => HttpError::NotAllowed(host.to_owned()),
        (code, _) => HttpError::Transport(format!("{code:?}")),
    }
}
