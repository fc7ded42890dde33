//! Evidence receipts (docs/receipts.md):
//!
//! - `GET /.well-known/agent-zero/keys`: the deployment's receipt keys as a
//!   JSON Web Key Set (RFC 7517/8037: `kty` `OKP`, `crv` `Ed25519`), each
//!   with its `status`, `active` or `retired`. Public: no token.
//! - `GET /api/v1/tasks/{id}/receipt`: the signed receipt of a concluded
//!   task's evidence, with the evidence routes' access.
//!
//! A receipt is produced on read, from the stored log, and never stored:
//! Ed25519 is deterministic, so the same log and key give the same bytes at
//! every read, and nothing is written at conclusion (no KV write on a free
//! plan's 1,000 a day, no receipt to lose or to go stale at a rotation).

use agent_zero_engine::receipt::{self, ALGORITHM};
use agent_zero_engine::{StoreError, TaskError};
use agent_zero_evidence::render_json;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::RouteContext;
use super::evidence::{DATA_CSP, api_error, evidence_cache, respond};
use crate::error::{ApiError, ErrorCode};
use crate::receipt_keys::{ActiveKey, KEY};
use crate::{Host, auth};

/// The JWK of one Ed25519 public key.
fn jwk(id: &str, public_key: &[u8; 32], status: &str) -> Value {
    json!({
        "kty": "OKP",
        "crv": ALGORITHM,
        "alg": "EdDSA",
        "use": "sig",
        "kid": id,
        "x": URL_SAFE_NO_PAD.encode(public_key),
        "status": status,
    })
}

/// The host's signer failed: 503 naming the key's variable (never the key).
fn signer_failed(reason: &str) -> ApiError {
    ApiError::new(ErrorCode::NotConfigured, format!("{KEY} cannot sign: {reason}")).with_field(KEY)
}

pub(super) async fn keys<H: Host>(
    context: &RouteContext<'_, H>,
    _request: &http::Request<Vec<u8>>,
) -> http::Response<Vec<u8>> {
    let result = async {
        let keys = context.settings.receipt_keys()?;
        let mut set = Vec::with_capacity(keys.retired.len() + 1);
        if let Some(active) = &keys.active {
            let public_key = context.host.ed25519(&active.seed, None).await.map_err(|e| signer_failed(&e))?.public_key;
            set.push(jwk(&active.id, &public_key, "active"));
        }
        set.extend(keys.retired.iter().map(|key| jwk(&key.id, &key.public_key, "retired")));
        Ok::<_, ApiError>(json!({ "keys": set }))
    };
    match result.await {
        Ok(body) => {
            let body = serde_json::to_string_pretty(&body).unwrap_or_default() + "\n";
            let mut response =
                respond(StatusCode::OK, "application/json; charset=utf-8", body, "public, max-age=300", DATA_CSP);
            // Public keys: any page may read them to verify a receipt.
            response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
            response
        }
        Err(error) => api_error(error),
    }
}

pub(super) async fn receipt<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> http::Response<Vec<u8>> {
    match signed(context, request, id).await {
        Ok((body, cache)) => respond(StatusCode::OK, "application/json; charset=utf-8", body, cache, DATA_CSP),
        Err(error) => api_error(error),
    }
}

/// The receipt of task `id`'s last conclusion, pretty-printed, and its
/// cache policy (the evidence's).
async fn signed<H: Host>(
    context: &RouteContext<'_, H>,
    request: &http::Request<Vec<u8>>,
    id: &str,
) -> Result<(String, &'static str), ApiError> {
    auth::authorize_read(context.settings, request.headers())?;
    let Some(ActiveKey { id: key_id, seed }) = &context.settings.receipt_keys()?.active else {
        return Err(ApiError::new(ErrorCode::NotConfigured, format!("receipts are not configured: {KEY} is not set"))
            .with_field(KEY));
    };
    let entries = match agent_zero_engine::log::read_log(context.host.kv(), id).await {
        Ok(Some(entries)) => entries,
        Ok(None) => {
            return Err(ApiError::new(ErrorCode::NotFound, format!("task `{id}` does not exist")).with_field("id"));
        }
        Err(e @ TaskError::InvalidTaskId(_)) => {
            return Err(ApiError::new(ErrorCode::InvalidRequest, e.to_string()).with_field("id"));
        }
        Err(e @ TaskError::Store(StoreError::Kv(_))) => {
            return Err(ApiError::new(ErrorCode::StorageUnavailable, e.to_string()));
        }
        Err(e) => return Err(ApiError::new(ErrorCode::Internal, e.to_string())),
    };
    let Some((_, bundle)) = receipt::last_conclusion(&entries) else {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "task `{id}` has not concluded: a receipt exists once the task is completed, failed or needs a human"
            ),
        ));
    };
    let cache = evidence_cache(bundle);
    let secrets = auth::Secrets::of(context.settings);
    // The bytes `evidence.json` serves (its options' link does not reach JSON).
    let evidence = render_json(bundle, &secrets.options());
    let internal = |e: receipt::ReceiptError| ApiError::new(ErrorCode::Internal, e.to_string());
    let mut claims = receipt::claims(&entries, &evidence, auth::secrets(context.settings)).map_err(internal)?;
    let object = claims.as_object_mut().ok_or_else(|| ApiError::new(ErrorCode::Internal, "claims"))?;
    object.insert("keyId".into(), Value::String(key_id.clone()));
    object.insert("algorithm".into(), Value::String(ALGORITHM.into()));
    let message = receipt::canonical(&claims).map_err(internal)?;
    let signature = context
        .host
        .ed25519(seed, Some(message.as_bytes()))
        .await
        .map_err(|e| signer_failed(&e))?
        .signature
        .ok_or_else(|| signer_failed("no signature"))?;
    if let Some(object) = claims.as_object_mut() {
        object.insert("signature".into(), Value::String(URL_SAFE_NO_PAD.encode(signature)));
    }
    Ok((serde_json::to_string_pretty(&claims).unwrap_or_default() + "\n", cache))
}
