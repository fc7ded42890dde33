//! The request body, read up to its route's limit
//! (`agent_zero_app::body_limit`), never past it.
//!
//! - A declared `Content-Length` over the limit is refused before a byte is
//!   read; one within it bounds the single read of the whole body.
//! - Without one (chunked), the body's `ReadableStream` is read chunk by
//!   chunk and abandoned as soon as it passes the limit.
//!
//! A refused body is cancelled, so the runtime knows nobody will read it
//! (and `wrangler dev` does not drain it behind the worker's back).

use agent_zero_app::{ApiError, BoundedBody, ErrorCode, Settings};
use worker::js_sys::{Promise, Reflect, Uint8Array};
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::{self, ReadableStreamDefaultReader};

/// Reads the body of `request`, whose head is `head`.
pub(crate) async fn read(
    settings: &Settings,
    head: &http::request::Parts,
    request: &web_sys::Request,
) -> Result<Vec<u8>, ApiError> {
    let started = agent_zero_app::body_limit(&head.method, head.uri.path(), settings)
        .and_then(|limit| BoundedBody::start(limit, &head.headers));
    let Some(stream) = request.body() else { return started.map(BoundedBody::into_bytes) };
    let mut body = match started {
        Ok(body) => body,
        Err(error) => {
            cancel(stream.cancel()).await;
            return Err(error);
        }
    };
    if body.declared().is_some() {
        // One `ArrayBuffer`, copied once into wasm memory.
        let buffer = request.array_buffer().map_err(|e| unreadable(&describe(&e)))?;
        let buffer = JsFuture::from(buffer).await.map_err(|e| unreadable(&describe(&e)))?;
        body.push(Uint8Array::new(&buffer).to_vec())?;
        return Ok(body.into_bytes());
    }
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    while let Some(chunk) = next_chunk(&reader).await? {
        if let Err(error) = body.push(chunk) {
            cancel(reader.cancel()).await;
            return Err(error);
        }
    }
    Ok(body.into_bytes())
}

/// The next chunk of the stream, `None` at its end.
async fn next_chunk(reader: &ReadableStreamDefaultReader) -> Result<Option<Vec<u8>>, ApiError> {
    let result = JsFuture::from(reader.read()).await.map_err(|e| unreadable(&describe(&e)))?;
    let field = |name: &str| Reflect::get(&result, &JsValue::from_str(name)).map_err(|e| unreadable(&describe(&e)));
    if field("done")?.is_truthy() {
        return Ok(None);
    }
    let chunk: Uint8Array = field("value")?.dyn_into().map_err(|_| unreadable("a chunk that is not bytes"))?;
    Ok(Some(chunk.to_vec()))
}

/// Cancels a body nobody will read. Failing to is not the caller's problem:
/// the answer stands either way.
async fn cancel(promise: Promise) {
    let _ = JsFuture::from(promise).await;
}

fn describe(error: &JsValue) -> String {
    error
        .as_string()
        .or_else(|| error.dyn_ref::<worker::js_sys::Error>().map(|e| e.message().into()))
        .unwrap_or_default()
}

fn unreadable(why: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, format!("reading the request body: {why}")).with_field("body")
}
