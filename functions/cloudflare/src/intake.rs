//! Webhook intake with the I/O in the entry module (`entry.mjs`): for
//! `POST /webhooks/github` the entry awaits `request.arrayBuffer()` and
//! `crypto.subtle.sign` (the body's HMAC-SHA256) itself, natively, and the
//! wasm side answers in ONE synchronous call, [`webhook_answer`]. Each
//! promise awaited through wasm-bindgen costs closures, a microtask and
//! externref slots, and every call across the boundary runs the glue's
//! termination check: this path has none of the first and one of the second.
//!
//! The answer is `agent_zero_app`'s own, in the async path's order
//! (`body_limit`, `BoundedBody`, `webhook::signature`, the MAC compared in
//! constant time here, `webhook::answer_verified`, `refuse`), so it is what
//! [`crate::fetch`] answers. What this path does not take on is left to
//! [`crate::fetch`]: [`webhook_key`] is `undefined` until the async path
//! has imported the key (once per isolate), the entry sends a body of
//! unknown length or one declared over the limit there (refused before it
//! is read), and [`webhook_answer`] is `undefined` for a delivery that
//! needs storage (the entry then hands the request, with the body it read,
//! to the async path).

use agent_zero_app::{ApiError, BoundedBody, ErrorCode, webhook};
use worker::Env;
use worker::js_sys::{Array, Uint8Array};
use worker::wasm_bindgen::{self, JsValue, prelude::wasm_bindgen};
use worker::web_sys;

/// The route this path takes on (`agent_zero_app`'s router: exactly this).
const WEBHOOK_PATH: &str = "/webhooks/github";

/// `[key, limit]`: the webhook key as a `CryptoKey` (HMAC-SHA256, for
/// `sign`) and the body limit in bytes, or `undefined` until the async path
/// has imported the key. Both are fixed for the isolate's life (secrets and
/// vars change only with a deployment), so the entry asks until it has them.
#[wasm_bindgen(js_name = webhookKey)]
pub fn webhook_key(env: Env) -> Option<Array> {
    let limit = agent_zero_app::body_limit(&http::Method::POST, WEBHOOK_PATH, &crate::settings_of(&env)).ok()?;
    let key = crate::hmac::cached()?;
    Some(Array::of2(&key, &JsValue::from_f64(limit as f64)))
}

/// The answer to `POST /webhooks/github` whose body the entry read
/// (`body`, or the read's failure in `unreadable`) and signed (`computed`:
/// HMAC-SHA256 of the body under [`webhook_key`]'s key), or `undefined`
/// when it needs storage or is not this route: send it to `fetch`.
#[wasm_bindgen(js_name = webhookAnswer)]
pub fn webhook_answer(
    request: &web_sys::Request,
    env: Env,
    body: Option<Uint8Array>,
    computed: Option<Uint8Array>,
    unreadable: Option<String>,
) -> Option<web_sys::Response> {
    let settings = crate::settings_of(&env);
    let head = crate::head_of(request).ok()?;
    if head.method != http::Method::POST || head.uri.path() != WEBHOOK_PATH {
        return None;
    }
    // As `body::read`: the route's limit, then the bytes against it.
    let read = agent_zero_app::body_limit(&head.method, head.uri.path(), &settings)
        .and_then(|limit| BoundedBody::start(limit, &head.headers))
        .and_then(|mut bounded| match (body, unreadable) {
            (Some(body), None) => bounded.push(body.to_vec()).map(|()| bounded.into_bytes()),
            (_, why) => Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!("reading the request body: {}", why.unwrap_or_default()),
            )
            .with_field("body")),
        });
    let response = match read {
        Err(error) => agent_zero_app::refuse(&settings, &head, error),
        Ok(body) => {
            let request = http::Request::from_parts(head, body);
            match webhook::signature(&settings, &request) {
                webhook::SignatureCheck::Refused(refusal) => refusal,
                // The entry signed with the key imported from this secret
                // (or this isolate's key changed: let the async path verify).
                webhook::SignatureCheck::Verify(signature) if crate::hmac::cached_key(signature.key).is_none() => {
                    return None;
                }
                webhook::SignatureCheck::Verify(signature) => {
                    let matched = computed.is_some_and(|computed| same_mac(&computed.to_vec(), &signature.mac));
                    webhook::answer_verified(&settings, &request, matched)?
                }
            }
        }
    };
    crate::from_http(response).ok()
}

/// Whether `computed` is `expected`, in time that depends on neither.
fn same_mac(computed: &[u8], expected: &[u8; 32]) -> bool {
    computed.len() == expected.len()
        && std::hint::black_box(computed.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b))) == 0
}
