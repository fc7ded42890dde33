//! Webhook intake with the I/O in the entry module (`entry.mjs`): for
//! `POST /webhooks/github` the entry awaits `request.arrayBuffer()` and
//! the body's HMAC-SHA256 in `crypto.subtle` itself, natively, and the
//! wasm side answers in ONE synchronous call, [`webhook_answer`]. Each
//! promise awaited through wasm-bindgen costs closures, a microtask and
//! externref slots, and every call across the boundary runs the glue's
//! termination check: this path has none of the first and one of the second.
//!
//! The call carries what intake reads and no more: the request headers
//! named by [`webhook::HEADERS`] as one string (the entry reads each with
//! `headers.get`), rather than all of them converted; the body stays a JS
//! `Uint8Array` until its MAC matched, so a wrong signature copies none of
//! it into wasm memory; and the answer comes back as status, headers and
//! body for the entry to build the `Response` from, rather than an init
//! object built through JSON. A delivery answered through the async path
//! is converted in full there.
//!
//! The answer is `agent_zero_app`'s own, in the async path's order
//! (`body_limit`, `BoundedBody`, `webhook::signature`, the MAC compared in
//! constant time here, `webhook::mismatched` or `webhook::answer_verified`,
//! `refuse`), so it is what
//! [`super::fetch`] answers. What this path does not take on is left to
//! [`super::fetch`]: [`webhook_key`] is `undefined` until the async path
//! has imported the key (once per isolate), the entry sends a body of
//! unknown length or one declared over the limit there (refused before it
//! is read), and [`webhook_answer`] is `undefined` for a delivery that
//! needs storage (the entry then hands the request, with the body it read,
//! to the async path).
//!
//! The entry gives one answer without the call: for an
//! `X-Hub-Signature-256` that is exactly `sha256=` and 64 hex digits (a
//! strict subset of what the signature's parser accepts), past the checks
//! that precede the comparison here (the key exists only once the async
//! path passed the settings' checks; a `Content-Length` within the limit;
//! the body read within it), it asks `crypto.subtle.verify` and, when the
//! MAC is wrong, answers `mismatch`, which is what this call would answer:
//! a refusal, never an acceptance. When the MAC is right, that claimed MAC
//! is the `computed` it passes. The e2e case
//! `webhook_answers_alike_with_and_without_content_length` holds the
//! answers equal to the async path's for such values and others.

use agent_zero_app::{ApiError, BoundedBody, ErrorCode, webhook};
use worker::Env;
use worker::js_sys::{Array, Promise, Uint8Array};
use worker::wasm_bindgen::{self, JsValue, prelude::wasm_bindgen};

/// The route this path takes on (`agent_zero_app`'s router: exactly this,
/// under the base path).
const WEBHOOK_PATH: &str = "/webhooks/github";

/// `[key, limit, headers, mismatch, path]`: the webhook key as a `CryptoKey`
/// (HMAC-SHA256, for `sign`), the body limit in bytes, the names of the
/// request headers intake reads ([`webhook::HEADERS`]) and the answer to a
/// MAC that does not match ([`webhook::mismatched`], which has no inputs),
/// as [`webhook_answer`] gives answers, and the path it takes on
/// (`AGENT_ZERO_BASE_PATH` + `/webhooks/github`); or `undefined` until the async
/// path has imported the key. All are fixed for the isolate's life
/// (secrets and vars change only with a deployment), so the entry asks
/// until it has them.
#[wasm_bindgen(js_name = webhookKey)]
pub fn webhook_key(env: Env) -> Option<Array> {
    let settings = crate::settings_of(&env);
    let path = webhook_path(&settings)?;
    let limit = agent_zero_app::body_limit(&http::Method::POST, &path, &settings).ok()?;
    let key = crate::hmac::cached_key(None)?;
    let names: Array = webhook::HEADERS.iter().map(|name| JsValue::from_str(name)).collect();
    let mismatch = answer_of(webhook::mismatched());
    Some(Array::of5(&key, &JsValue::from_f64(limit as f64), &names, &mismatch, &JsValue::from_str(&path)))
}

/// The path intake takes on under the base path; `None` when the base path
/// is malformed (the async path answers 503 naming it).
fn webhook_path(settings: &agent_zero_app::Settings) -> Option<String> {
    settings.base_path().ok().map(|base| format!("{base}{WEBHOOK_PATH}"))
}

/// The answer to `POST /webhooks/github` whose body the entry read
/// (`body`, or the read's failure in `unreadable`) and signed (`computed`:
/// HMAC-SHA256 of the body under [`webhook_key`]'s key, signed or verified
/// by the entry; `undefined` when it has none): `null` when the
/// MAC does not match (answer [`webhook_key`]'s `mismatch`), otherwise
/// `[status, headers, body]` (`headers`: names and values, each followed
/// by a line feed; `body`: text or bytes, or `undefined` for none), or a
/// [`Verified`] delivery that needs storage: give it to [`webhook_act`];
/// or `undefined` for what the async path takes on (send it to `fetch`). `headers` is the request's
/// [`webhook::HEADERS`] that it has, in the same form. The body is copied
/// into wasm memory only once its MAC matched.
#[wasm_bindgen(js_name = webhookAnswer)]
pub fn webhook_answer(
    env: Env,
    headers: &str,
    body: Option<Uint8Array>,
    computed: Option<Uint8Array>,
    unreadable: Option<String>,
) -> Option<JsValue> {
    let settings = crate::settings_of(&env);
    let head = head_of(&webhook_path(&settings)?, headers)?;
    // As `body::read`: the route's limit, then the bytes against it.
    let read = agent_zero_app::body_limit(&head.method, head.uri.path(), &settings)
        .and_then(|limit| BoundedBody::start(limit, &head.headers))
        .and_then(|bounded| match (body, unreadable) {
            (Some(body), None) => bounded.admit(body.length() as usize).map(|()| (bounded, body)),
            (_, why) => Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!("reading the request body: {}", why.unwrap_or_default()),
            )
            .with_field("body")),
        });
    let response = match read {
        Err(error) => agent_zero_app::refuse(&settings, &head, error),
        Ok((mut bounded, body)) => match webhook::signature(&settings, &head.headers, body.length() as usize) {
            webhook::SignatureCheck::Refused(refusal) => refusal,
            // The entry signed with the key imported from this secret
            // (or this isolate's key changed: let the async path verify).
            webhook::SignatureCheck::Verify(signature) if crate::hmac::cached_key(Some(signature.key)).is_none() => {
                return None;
            }
            webhook::SignatureCheck::Verify(signature) => {
                let mut mac = [0u8; 32];
                let matched = computed.is_some_and(|computed| {
                    computed.length() as usize == mac.len() && {
                        computed.copy_to(&mut mac);
                        same_mac(&mac, &signature.mac)
                    }
                });
                if !matched {
                    // The entry answers `webhook::mismatched()`, asked once.
                    return Some(JsValue::NULL);
                }
                bounded.push(body.to_vec()).ok()?;
                let request = http::Request::from_parts(head, bounded.into_bytes());
                match webhook::answer_verified(&settings, request, true) {
                    webhook::Checked::Answered(response) => response,
                    webhook::Checked::Acted(acted) => return Some(Verified { acted }.into()),
                }
            }
        },
    };
    // Answered here: the request's id and line, as `super::fetch` gives them.
    let mut response = response;
    let invocation = super::invocation();
    let path = webhook_path(&settings)?;
    super::log_request(&settings, &invocation, "POST", &path, &mut response);
    Some(answer_of(response).into())
}

/// A delivery [`webhook_answer`] verified and parsed and found acted on:
/// the entry hands it straight to [`webhook_act`], in the same turn.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Verified {
    acted: webhook::Acted,
}

/// The answer to a delivery [`webhook_answer`] verified (`[status, headers,
/// body]`, as it gives answers): intake's storage half
/// ([`agent_zero_app::act_on`]), without checking or parsing it again.
#[wasm_bindgen(js_name = webhookAct)]
pub fn webhook_act(env: Env, verified: Verified) -> Promise {
    worker::wasm_bindgen_futures::future_to_promise(async move {
        let settings = crate::settings_of(&env);
        let invocation = super::invocation();
        let host = crate::CloudflareHost::new(&env);
        let mut response = agent_zero_app::act_on(&host, &settings, &invocation, verified.acted).await;
        if let Some(path) = webhook_path(&settings) {
            super::log_request(&settings, &invocation, "POST", &path, &mut response);
        }
        Ok(answer_of(response).into())
    })
}

/// `POST path` (intake's) with `headers` (see [`webhook_answer`]), or
/// `None` for a name intake does not read or a value `http` refuses (the
/// async path converts the request itself).
fn head_of(path: &str, headers: &str) -> Option<http::request::Parts> {
    let mut head = http::Request::post(path).body(()).ok()?.into_parts().0;
    let mut fields = headers.split_terminator('\n');
    while let Some(name) = fields.next() {
        let name = webhook::HEADERS.iter().find(|known| **known == name)?;
        let value = http::HeaderValue::from_str(fields.next()?).ok()?;
        head.headers.append(http::HeaderName::from_static(name), value);
    }
    Some(head)
}

/// `[status, headers, body]` for the entry to build the `Response` from,
/// as [`super::from_http`] builds it (a header whose value is not visible
/// ASCII is left out). The body is text when it is UTF-8 and the answer
/// names its `Content-Type` (so the `Response` adds none), else bytes: a
/// text body is the cheaper one for workerd to take (measured).
fn answer_of(response: http::Response<Vec<u8>>) -> Array {
    let (parts, body) = response.into_parts();
    let mut headers = String::new();
    for (name, value) in &parts.headers {
        if let Ok(value) = value.to_str() {
            for field in [name.as_str(), value] {
                headers.push_str(field);
                headers.push('\n');
            }
        }
    }
    let typed = parts.headers.get(http::header::CONTENT_TYPE).is_some_and(|value| value.to_str().is_ok());
    let body = match String::from_utf8(body) {
        Ok(text) if text.is_empty() => JsValue::UNDEFINED,
        Ok(text) if typed => JsValue::from_str(&text),
        Ok(text) => Uint8Array::from(text.as_bytes()).into(),
        Err(bytes) => Uint8Array::from(bytes.as_bytes()).into(),
    };
    Array::of3(&JsValue::from_f64(f64::from(parts.status.as_u16())), &JsValue::from_str(&headers), &body)
}

/// Whether `computed` is `expected`, in time that depends on neither.
fn same_mac(computed: &[u8; 32], expected: &[u8; 32]) -> bool {
    use subtle::ConstantTimeEq as _;
    bool::from(computed.ct_eq(expected))
}
