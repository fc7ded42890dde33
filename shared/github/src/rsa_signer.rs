//! RS256 with RustCrypto's `rsa` crate (RSASSA-PKCS1-v1_5, SHA-256), for
//! the hosts without WebCrypto: the Spin component and the native tests.
//! Behind the `rsa` feature, so the worker, which signs with WebCrypto,
//! links none of it.
//!
//! Since 0.10 the crate's private-key operation is constant-time
//! (crypto-bigint's Montgomery exponentiation); the signature is checked
//! against the public key before it is returned. It is unblinded: the
//! core takes no RNG (the crate's `getrandom` feature is off), and the
//! signature is deterministic (docs/testing.md#advisories).

use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::DecodePrivateKey as _;
use rsa::sha2::Sha256;
use rsa::signature::{SignatureEncoding as _, Signer as _};

use crate::credentials_error::CredentialsError;
use crate::signer::{PrivateKeyDer, Rs256Signer};

/// RS256 with the `rsa` crate. The key is loaded per signature, which is
/// rare (installation tokens are cached for an hour).
#[derive(Debug, Clone, Copy, Default)]
pub struct RsaSigner;

impl Rs256Signer for RsaSigner {
    async fn sign_rs256(&self, key: &PrivateKeyDer, message: &[u8]) -> Result<Vec<u8>, CredentialsError> {
        // The structure was checked when `key` was read; what the crate
        // refuses here is the key's values (parts that do not belong
        // together, unbalanced primes).
        let key = rsa::PrivateKey::from_pkcs8_der(key.pkcs8()).map_err(|_| CredentialsError::InvalidPrivateKey {
            reason: "refused by the rsa crate: its parts do not belong together, or its primes are unbalanced",
        })?;
        let signature = SigningKey::<Sha256>::new(key)
            .try_sign(message)
            .map_err(|error| CredentialsError::Signing { reason: error.to_string() })?;
        Ok(signature.to_vec())
    }
}
