//! RS256 for the GitHub App JWT through WebCrypto (`crypto.subtle`, native
//! in workerd), so the worker links no RSA implementation of its own.

use agent_zero_github::{CredentialsError, PrivateKeyDer, Rs256Signer};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use worker::js_sys::{Array, Object, Reflect, Uint8Array};
use worker::wasm_bindgen::{JsCast as _, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::web_sys::{CryptoKey, WorkerGlobalScope};

/// The WebCrypto algorithm name of RS256.
const RSASSA_PKCS1_V1_5: &str = "RSASSA-PKCS1-v1_5";

/// `crypto.subtle.importKey("pkcs8", …)` then `sign("RSASSA-PKCS1-v1_5", …)`.
/// The key is imported per signature, which is rare (installation tokens
/// are cached for an hour), and not extractable.
pub(crate) struct WebCryptoSigner;

impl Rs256Signer for WebCryptoSigner {
    async fn sign_rs256(&self, key: &PrivateKeyDer, message: &[u8]) -> Result<Vec<u8>, CredentialsError> {
        let subtle = worker::js_sys::global()
            .unchecked_into::<WorkerGlobalScope>()
            .crypto()
            .map_err(|e| failed("crypto", &e))?
            .subtle();
        let algorithm = Object::new();
        Reflect::set(&algorithm, &"name".into(), &RSASSA_PKCS1_V1_5.into()).map_err(|e| failed("algorithm", &e))?;
        Reflect::set(&algorithm, &"hash".into(), &"SHA-256".into()).map_err(|e| failed("algorithm", &e))?;
        let der = Uint8Array::from(key.pkcs8());
        let usages = Array::of1(&"sign".into());
        let import = subtle
            .import_key_with_object("pkcs8", &der, &algorithm, false, &usages)
            .map_err(|e| failed("importKey", &e))?;
        let crypto_key: CryptoKey = JsFuture::from(import).await.map_err(|e| failed("importKey", &e))?.unchecked_into();
        let sign = subtle
            .sign_with_str_and_u8_array(RSASSA_PKCS1_V1_5, &crypto_key, message)
            .map_err(|e| failed("sign", &e))?;
        let signature = JsFuture::from(sign).await.map_err(|e| failed("sign", &e))?;
        Ok(Uint8Array::new(&signature).to_vec())
    }
}

/// WebCrypto's error (its name and message: never the key) for `step`.
fn webcrypto_error(step: &str, error: &JsValue) -> String {
    let text = error
        .dyn_ref::<worker::js_sys::Error>()
        .map(|e| format!("{}: {}", String::from(e.name()), String::from(e.message())))
        .unwrap_or_else(|| "unknown error".to_owned());
    format!("crypto.subtle {step}: {text}")
}

/// [`webcrypto_error`] as the credentials' signing error.
fn failed(step: &str, error: &JsValue) -> CredentialsError {
    CredentialsError::Signing { reason: webcrypto_error(step, error) }
}

/// Ed25519 for evidence receipts through WebCrypto (`crypto.subtle`'s
/// `Ed25519`, native in workerd): the seed is wrapped into its PKCS#8
/// (RFC 8410) and imported, the public key is read from the key's JWK
/// export (`x`), and the message signed. Imported per call (receipt reads
/// are rare); the key never leaves the isolate.
pub(crate) async fn ed25519(seed: &[u8; 32], message: Option<&[u8]>) -> Result<agent_zero_app::Ed25519, String> {
    const ED25519: &str = "Ed25519";
    let failed = webcrypto_error;
    let subtle = worker::js_sys::global()
        .unchecked_into::<WorkerGlobalScope>()
        .crypto()
        .map_err(|e| failed("crypto", &e))?
        .subtle();
    let mut pkcs8 = agent_zero_app::ED25519_PKCS8_PREFIX.to_vec();
    pkcs8.extend_from_slice(seed);
    let der = Uint8Array::from(pkcs8.as_slice());
    let usages = Array::of1(&"sign".into());
    // Extractable, so its JWK gives the public key; it lives for this call only.
    let import =
        subtle.import_key_with_str("pkcs8", &der, ED25519, true, &usages).map_err(|e| failed("importKey", &e))?;
    let key: CryptoKey = JsFuture::from(import).await.map_err(|e| failed("importKey", &e))?.unchecked_into();
    let export = subtle.export_key("jwk", &key).map_err(|e| failed("exportKey", &e))?;
    let jwk = JsFuture::from(export).await.map_err(|e| failed("exportKey", &e))?;
    let x =
        Reflect::get(&jwk, &"x".into()).ok().and_then(|x| x.as_string()).ok_or("crypto.subtle exportKey: no `x`")?;
    let public_key = URL_SAFE_NO_PAD
        .decode(&x)
        .ok()
        .and_then(|k| <[u8; 32]>::try_from(k).ok())
        .ok_or("crypto.subtle exportKey: `x` is not a 32-byte key")?;
    let signature = match message {
        None => None,
        Some(message) => {
            let sign = subtle.sign_with_str_and_u8_array(ED25519, &key, message).map_err(|e| failed("sign", &e))?;
            let signature = JsFuture::from(sign).await.map_err(|e| failed("sign", &e))?;
            let bytes = Uint8Array::new(&signature).to_vec();
            Some(<[u8; 64]>::try_from(bytes).map_err(|_| "crypto.subtle sign: not a 64-byte signature")?)
        }
    };
    Ok(agent_zero_app::Ed25519 { public_key, signature })
}
