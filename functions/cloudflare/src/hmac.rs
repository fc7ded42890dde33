//! The webhook signature's HMAC-SHA256 through WebCrypto
//! (`crypto.subtle.verify`: native in workerd, and constant-time), faster
//! than the wasm `sha2` at every payload size, by 1.3x at 28 KiB to 4.5x at
//! 2.5 MiB (tests/bench/hmac, in node's V8; indicative). The
//! key is imported once per isolate (secrets are fixed for its life); if
//! WebCrypto fails, the check falls back to the `hmac` crate.

use std::cell::RefCell;

use worker::js_sys::{Array, Object, Reflect, Uint8Array};
use worker::wasm_bindgen::{JsCast as _, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::{CryptoKey, SubtleCrypto, WorkerGlobalScope};

thread_local! {
    /// The imported key and the secret it was imported from.
    static KEY: RefCell<Option<(Vec<u8>, CryptoKey)>> = const { RefCell::new(None) };
}

/// Whether `mac` is HMAC-SHA256(`key`, `body`).
pub(crate) async fn matches(key: &[u8], body: &[u8], mac: &[u8; 32]) -> bool {
    match verify(key, body, mac).await {
        Ok(matched) => matched,
        Err(step) => {
            // One JSON line like every other (no request id reaches this port).
            let message = format!("crypto.subtle HMAC failed at {step}; verifying with the hmac crate");
            let line = serde_json::json!({ "agent_zero": "host", "request_id": "", "step": "hmac", "outcome": "fallback", "duration_ms": 0, "message": message });
            worker::console_log!("{line}");
            agent_zero_github::signature::matches(key, body, mac)
        }
    }
}

/// The key imported from `key` by an earlier check in this isolate, if
/// any; with `None`, whichever key was imported (intake's webhook secret:
/// the only key this module is given).
pub(crate) fn cached_key(key: Option<&[u8]>) -> Option<CryptoKey> {
    KEY.with_borrow(|cached| cached.as_ref().filter(|(k, _)| key.is_none_or(|key| k == key)).map(|(_, c)| c.clone()))
}

async fn verify(key: &[u8], body: &[u8], mac: &[u8; 32]) -> Result<bool, &'static str> {
    let subtle =
        worker::js_sys::global().unchecked_into::<WorkerGlobalScope>().crypto().map_err(|_| "crypto")?.subtle();
    let crypto_key = match cached_key(Some(key)) {
        Some(crypto_key) => crypto_key,
        None => {
            let crypto_key = import(&subtle, key).await?;
            KEY.set(Some((key.to_vec(), crypto_key.clone())));
            crypto_key
        }
    };
    let promise =
        subtle.verify_with_str_and_u8_array_and_u8_array("HMAC", &crypto_key, mac, body).map_err(|_| "verify")?;
    Ok(JsFuture::from(promise).await.map_err(|_| "verify")?.is_truthy())
}

/// `importKey("raw", key, {name: "HMAC", hash: "SHA-256"}, false, ["sign", "verify"])`.
async fn import(subtle: &SubtleCrypto, key: &[u8]) -> Result<CryptoKey, &'static str> {
    let algorithm = Object::new();
    Reflect::set(&algorithm, &"name".into(), &"HMAC".into()).map_err(|_| "algorithm")?;
    Reflect::set(&algorithm, &"hash".into(), &"SHA-256".into()).map_err(|_| "algorithm")?;
    // `sign` too: the entry module signs webhook bodies whose signature it does not verify itself (intake.rs).
    let usages = Array::of2(&JsValue::from_str("sign"), &JsValue::from_str("verify"));
    let promise = subtle
        .import_key_with_object("raw", &Uint8Array::from(key), &algorithm, false, &usages)
        .map_err(|_| "importKey")?;
    Ok(JsFuture::from(promise).await.map_err(|_| "importKey")?.unchecked_into())
}
