//! The GitHub App JSON Web Token: RS256 over `{iat, exp, iss}`, signed with
//! the App's private key (PKCS#1 or PKCS#8 PEM) through the host's
//! [`Rs256Signer`].
//!
//! `iat` is 60 s in the past (clock drift) and `exp` 9 minutes ahead (GitHub
//! refuses more than 10). A token is signed about once an hour per
//! installation (installation tokens are cached).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::credentials_error::CredentialsError;
use crate::signer::{PrivateKeyDer, Rs256Signer};
use agent_zero_ports::Secret;

/// Seconds `iat` is backdated.
pub const JWT_BACKDATE_SECS: u64 = 60;
/// Seconds until `exp`.
pub const JWT_LIFETIME_SECS: u64 = 9 * 60;

/// An App's identity: its id (or client id) and private key.
pub struct AppKey {
    issuer: String,
    key: PrivateKeyDer,
}

impl AppKey {
    /// From `GITHUB_APP_ID` and the PEM private key GitHub issued (PKCS#1
    /// `RSA PRIVATE KEY`, or PKCS#8 `PRIVATE KEY`). A key pasted into an
    /// environment variable with literal `\n` sequences is accepted.
    pub fn from_pem(app_id: &str, pem: &str) -> Result<Self, CredentialsError> {
        let issuer = app_id.trim();
        if issuer.is_empty()
            || issuer.len() > 64
            || !issuer.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(CredentialsError::InvalidAppId);
        }
        let pem = pem.trim();
        let unescaped;
        let pem = if !pem.contains('\n') && pem.contains("\\n") {
            unescaped = pem.replace("\\n", "\n");
            unescaped.as_str()
        } else {
            pem
        };
        Ok(Self { issuer: issuer.to_owned(), key: PrivateKeyDer::from_pem(pem)? })
    }

    /// The `iss` claim.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// A JWT valid from `now - 60 s` to `now + 9 min`.
    pub async fn jwt<S: Rs256Signer>(&self, signer: &S, now_ms: u64) -> Result<Secret, CredentialsError> {
        let now = now_ms / 1000;
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
        // A numeric App id goes out as a number, a client id as a string.
        let issuer = match self.issuer.parse::<u64>() {
            Ok(id) => serde_json::Value::from(id),
            Err(_) => serde_json::Value::from(self.issuer.as_str()),
        };
        let claims = serde_json::json!({
            "iat": now.saturating_sub(JWT_BACKDATE_SECS),
            "exp": now + JWT_LIFETIME_SECS,
            "iss": issuer,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signing_input = format!("{header}.{claims}");
        let signature = signer.sign_rs256(&self.key, signing_input.as_bytes()).await?;
        Ok(Secret::new(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))))
    }
}

impl std::fmt::Debug for AppKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppKey").field("issuer", &self.issuer).field("key", &"[redacted]").finish()
    }
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::block_on;
    use serde_json::{Value, json};

    use super::*;

    const PKCS1: &str = include_str!("../tests/data/test-app-key.pkcs1.pem");

    /// Signs every message with the same bytes: the claims are the test.
    struct FixedSigner;

    impl Rs256Signer for FixedSigner {
        async fn sign_rs256(&self, _key: &PrivateKeyDer, _message: &[u8]) -> Result<Vec<u8>, CredentialsError> {
            Ok(b"signature".to_vec())
        }
    }

    fn parts(app_id: &str, now_ms: u64) -> (Value, Value, Vec<u8>) {
        let jwt = block_on(AppKey::from_pem(app_id, PKCS1).unwrap().jwt(&FixedSigner, now_ms)).unwrap();
        let parts: Vec<Vec<u8>> = jwt.expose().split('.').map(|part| URL_SAFE_NO_PAD.decode(part).unwrap()).collect();
        let [header, claims, signature] = &parts[..] else { panic!("three parts: {parts:?}") };
        (serde_json::from_slice(header).unwrap(), serde_json::from_slice(claims).unwrap(), signature.clone())
    }

    /// GitHub's "Generating a JSON Web Token (JWT) for a GitHub App": RS256;
    /// `iat` 60 s in the past against clock drift; `exp` no more than 10
    /// minutes into the future; `iss` the App's client id or application id.
    #[test]
    fn claims_are_the_ones_github_documents() {
        let now = 1_700_000_000;
        let (header, claims, signature) = parts("12345", now * 1000 + 999);
        assert_eq!(header, json!({"alg": "RS256", "typ": "JWT"}));
        assert_eq!(signature, b"signature");
        assert_eq!(claims, json!({"iat": now - 60, "exp": now + 540, "iss": 12345}));
        let (iat, exp) = (claims["iat"].as_u64().unwrap(), claims["exp"].as_u64().unwrap());
        assert_eq!(now - iat, JWT_BACKDATE_SECS);
        assert!(exp - now <= 10 * 60, "exp at most 10 minutes ahead");
        assert!(exp - iat <= 10 * 60, "GitHub refuses a longer lifetime");
        // A client id is sent as it is, a string.
        let (_, claims, _) = parts("Iv23liAbCdEf", now * 1000);
        assert_eq!(claims["iss"], "Iv23liAbCdEf");
    }

    #[test]
    fn app_ids_that_are_not_ids_are_refused() {
        for id in ["", " ", "12 34", "id/with/slash", &"9".repeat(65)] {
            assert_eq!(AppKey::from_pem(id, PKCS1).unwrap_err(), CredentialsError::InvalidAppId, "{id:?}");
        }
    }
}
