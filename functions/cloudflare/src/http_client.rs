//! The outbound HTTP port over the Workers `fetch` API.

use agent_zero_ports::{BoundedResponseBody, HttpClient, HttpError, RequestTimeout, ResponseLimit};
use futures::StreamExt;
use worker::wasm_bindgen::JsValue;
use worker::web_sys;
use worker::{AbortController, Delay, Fetch, Request};

/// A `Request` for `fetch` or a Durable Object stub, made with the
/// platform's `RequestInit` itself: workers-rs's own `RequestInit` carries
/// the `cf` properties and converts them on every request (their cache
/// rules sit in a `HashMap`), which we never set.
pub(crate) fn new_request(
    url: &str,
    method: &str,
    headers: Option<&web_sys::Headers>,
    body: Option<&JsValue>,
) -> Result<Request, String> {
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    if let Some(headers) = headers {
        init.set_headers(headers);
    }
    if let Some(body) = body {
        init.set_body(body);
    }
    // Redirects are answers, as on Spin's wasi:http: an archive link
    // (302 + Location) must reach the caller, not be downloaded here.
    init.set_redirect(web_sys::RequestRedirect::Manual);
    web_sys::Request::new_with_str_and_init(url, &init)
        .map(Request::from)
        .map_err(|e| worker::Error::from(e).to_string())
}

/// Outbound HTTP through `fetch`.
pub(crate) struct FetchClient;

impl HttpClient for FetchClient {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        let timeout = RequestTimeout::of(&request);
        let limit = ResponseLimit::of(&request);
        let (parts, body) = request.into_parts();
        let url = parts.uri.to_string();
        let transport = |e: JsValue| HttpError::Transport(worker::Error::from(e).to_string());
        let headers = web_sys::Headers::new().map_err(transport)?;
        for (name, value) in &parts.headers {
            let value = value.to_str().map_err(|_| HttpError::Transport(format!("header `{name}` is not text")))?;
            headers.append(name.as_str(), value).map_err(transport)?;
        }
        let body = (!body.is_empty()).then(|| JsValue::from(worker::js_sys::Uint8Array::from(body.as_slice())));
        let request =
            new_request(&url, parts.method.as_str(), Some(&headers), body.as_ref()).map_err(HttpError::Transport)?;

        let controller = AbortController::default();
        let signal = controller.signal();
        let fetch = Fetch::Request(request);
        let fetch = fetch.send_with_signal(&signal);
        let mut response = match timeout {
            Some(ms) => {
                let delay = Delay::from(std::time::Duration::from_millis(ms));
                futures_util_select(fetch, delay, ms, controller).await?
            }
            None => fetch.await.map_err(|e| HttpError::Transport(e.to_string()))?,
        };

        let mut builder = http::Response::builder().status(response.status_code());
        for (name, value) in response.headers().entries() {
            builder = builder.header(name, value);
        }
        let headers = builder.headers_ref().cloned().unwrap_or_default();
        let mut body = BoundedResponseBody::new(limit, &headers)?;
        // A fetch response without a body is not streamable; it has nothing to read.
        if let Ok(mut stream) = response.stream() {
            // Dropping the stream on an early return cancels the rest of the body.
            while let Some(chunk) = stream.next().await {
                body.push(&chunk.map_err(|e| HttpError::Transport(e.to_string()))?)?;
            }
        }
        builder.body(body.into_bytes()).map_err(|e| HttpError::Transport(e.to_string()))
    }
}

/// Races the fetch against a timer; aborts the fetch when the timer wins.
async fn futures_util_select(
    fetch: impl std::future::Future<Output = worker::Result<worker::Response>>,
    delay: Delay,
    ms: u64,
    controller: AbortController,
) -> Result<worker::Response, HttpError> {
    let mut fetch = std::pin::pin!(fetch);
    let mut delay = std::pin::pin!(delay);
    let mut controller = Some(controller);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(result) = fetch.as_mut().poll(cx) {
            return std::task::Poll::Ready(result.map_err(|e| HttpError::Transport(e.to_string())));
        }
        if delay.as_mut().poll(cx).is_ready() {
            if let Some(controller) = controller.take() {
                controller.abort();
            }
            return std::task::Poll::Ready(Err(HttpError::Timeout(ms)));
        }
        std::task::Poll::Pending
    })
    .await
}
