//! Who may call: personal/installation tokens on the REST routes, and the
//! App's RS256 JWT on `/app/...`, checked the way GitHub checks them.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::PublicKey;
use rsa::pkcs1::DecodeRsaPublicKey as _;
use rsa::pkcs1v15::{Signature, VerifyingKey};
use rsa::pkcs8::DecodePublicKey as _;
use rsa::sha2::Sha256;
use rsa::signature::Verifier as _;
use serde_json::Value;

use crate::record::RecordedCall;

/// GitHub refuses an `exp` more than 10 minutes after `iat`.
const MAX_JWT_LIFETIME_SECS: i64 = 600;

/// A registered GitHub App: its id and, optionally, its public key.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub(crate) id: String,
    pub(crate) key: Option<PublicKey>,
}

/// Parses a PEM public key (SPKI `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY`).
pub(crate) fn public_key(pem: &str) -> Result<PublicKey, String> {
    PublicKey::from_public_key_pem(pem.trim())
        .or_else(|_| PublicKey::from_pkcs1_pem(pem.trim()))
        .map_err(|e| format!("not an RSA public key PEM: {e}"))
}

/// The claims of an App JWT whose RS256 signature verifies under
/// `public_key_pem` (SPKI or PKCS#1): what a test asserts a host signed,
/// whatever signed it.
pub fn verified_jwt_claims(jwt: &str, public_key_pem: &str) -> Result<Value, String> {
    let key = public_key(public_key_pem)?;
    let [header, claims, signature] = jwt.trim().split('.').collect::<Vec<_>>()[..] else {
        return Err(format!("not three dot-separated parts: {jwt}"));
    };
    let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|e| format!("not base64url: {e}"));
    let header: Value = serde_json::from_slice(&decode(header)?).map_err(|e| format!("header: {e}"))?;
    if header["alg"] != "RS256" {
        return Err(format!("alg is not RS256: {header}"));
    }
    let signature = Signature::try_from(decode(signature)?.as_slice()).map_err(|e| format!("signature: {e}"))?;
    let signing_input = &jwt.trim()[..jwt.trim().rfind('.').unwrap_or(0)];
    VerifyingKey::<Sha256>::new(key)
        .verify(signing_input.as_bytes(), &signature)
        .map_err(|e| format!("does not verify under the public key: {e}"))?;
    serde_json::from_slice(&decode(claims)?).map_err(|e| format!("claims: {e}"))
}

/// The credential in `Authorization: Bearer X` or `Authorization: token X`.
pub(crate) fn credential(call: &RecordedCall) -> Option<&str> {
    let value = call.header("authorization")?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token"))
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// Checks an App JWT; `Ok` is its issuer (`iss`, the App id or client id),
/// `Err` GitHub's 401 message.
pub(crate) fn check_jwt(call: &RecordedCall, app: Option<&App>, now: u64) -> Result<String, &'static str> {
    const UNDECODABLE: &str = "A JSON web token could not be decoded";
    let bearer = call
        .header("authorization")
        .and_then(|v| v.trim().strip_prefix("Bearer "))
        .ok_or("A JSON web token could not be decoded")?;
    let parts: Vec<&str> = bearer.trim().split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err(UNDECODABLE);
    };
    let decode = |part: &str| -> Result<Value, &'static str> {
        let bytes = URL_SAFE_NO_PAD.decode(part).map_err(|_| UNDECODABLE)?;
        serde_json::from_slice(&bytes).map_err(|_| UNDECODABLE)
    };
    let header = decode(header)?;
    let claims = decode(claims)?;
    if header["alg"] != "RS256" {
        return Err(UNDECODABLE);
    }
    let (Some(iat), Some(exp)) = (claims["iat"].as_i64(), claims["exp"].as_i64()) else {
        return Err("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued");
    };
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    if exp <= now {
        return Err(
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
        );
    }
    if exp - iat > MAX_JWT_LIFETIME_SECS || iat > now + 60 {
        return Err("'Expiration time' claim ('exp') is too far in the future");
    }
    let issuer = match &claims["iss"] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err("'Issuer' claim ('iss') must be an Integer"),
    };
    let Some(app) = app else { return Ok(issuer) };
    if issuer != app.id {
        return Err("Integration not found");
    }
    if let Some(key) = &app.key {
        let signature_bytes = URL_SAFE_NO_PAD.decode(signature).map_err(|_| UNDECODABLE)?;
        let signature = Signature::try_from(signature_bytes.as_slice()).map_err(|_| UNDECODABLE)?;
        let signing_input = &bearer.trim()[..bearer.trim().rfind('.').unwrap_or(0)];
        VerifyingKey::<Sha256>::new(key.clone())
            .verify(signing_input.as_bytes(), &signature)
            .map_err(|_| UNDECODABLE)?;
    }
    Ok(issuer)
}
