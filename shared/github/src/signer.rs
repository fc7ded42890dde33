//! The RS256 signing port (RSASSA-PKCS1-v1_5 with SHA-256, JWS `RS256`)
//! the GitHub App JWT is signed through, and the App's private key as the
//! PKCS#8 DER every implementation takes.
//!
//! Each host brings its own signer: the worker signs with WebCrypto
//! (`crypto.subtle`, native in workerd); Spin and the host tests with
//! [`RsaSigner`](crate::RsaSigner) (the `rsa` feature: RustCrypto's `rsa`
//! crate). No key arithmetic here: the PEM and DER are read by RustCrypto's
//! `pkcs1` and `pkcs8` decoders, a PKCS#1 key is wrapped into a PKCS#8
//! `PrivateKeyInfo` with their types, and the key's structure is checked
//! so a bad key is refused when the deployment's variables are read, not
//! at the first signature.

use pkcs1::RsaPrivateKeyRef;
use pkcs1::der::asn1::OctetStringRef;
use pkcs1::der::pem::{self, PemLabel as _};
use pkcs1::der::{Decode as _, Encode as _};
use pkcs8::PrivateKeyInfoRef;

use crate::credentials_error::CredentialsError;

/// Signs with RSASSA-PKCS1-v1_5 / SHA-256.
pub trait Rs256Signer {
    /// The signature of `message` under `key` (as many bytes as the modulus).
    async fn sign_rs256(&self, key: &PrivateKeyDer, message: &[u8]) -> Result<Vec<u8>, CredentialsError>;
}

impl<S: Rs256Signer + ?Sized> Rs256Signer for &S {
    async fn sign_rs256(&self, key: &PrivateKeyDer, message: &[u8]) -> Result<Vec<u8>, CredentialsError> {
        (**self).sign_rs256(key, message).await
    }
}

/// An RSA private key as PKCS#8 `PrivateKeyInfo` DER (what WebCrypto's
/// `importKey("pkcs8", …)` takes), checked to hold a two-prime
/// `RSAPrivateKey`.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKeyDer(Vec<u8>);

const NOT_PEM: &str = "expected a PEM `RSA PRIVATE KEY` or `PRIVATE KEY` block";
const NOT_PKCS1: &str = "not a valid PKCS#1 RSA private key";
const NOT_PKCS8: &str = "not a valid PKCS#8 RSA private key";

impl PrivateKeyDer {
    /// From the PEM GitHub issued (PKCS#1 `RSA PRIVATE KEY`) or its PKCS#8
    /// form (`PRIVATE KEY`).
    pub fn from_pem(pem: &str) -> Result<Self, CredentialsError> {
        let invalid = |reason| CredentialsError::InvalidPrivateKey { reason };
        // Lines of any one width (RFC 7468 writes 64; a key re-wrapped by a
        // tool or pasted as one line reads too).
        let mut decoder = pem::Decoder::new_detect_wrap(pem.trim().as_bytes()).map_err(|_| invalid(NOT_PEM))?;
        let label = decoder.type_label();
        let mut der = Vec::new();
        decoder.decode_to_end(&mut der).map_err(|_| invalid(NOT_PEM))?;
        let der = der.as_slice();
        if label == RsaPrivateKeyRef::PEM_LABEL {
            rsa_private_key(der).ok_or(invalid(NOT_PKCS1))?;
            let info =
                PrivateKeyInfoRef::new(pkcs1::ALGORITHM_ID, OctetStringRef::new(der).map_err(|_| invalid(NOT_PKCS1))?);
            Ok(Self(info.to_der().map_err(|_| invalid(NOT_PKCS1))?))
        } else if label == PrivateKeyInfoRef::PEM_LABEL {
            let info = PrivateKeyInfoRef::from_der(der).map_err(|_| invalid(NOT_PKCS8))?;
            if info.algorithm.oid != pkcs1::ALGORITHM_OID {
                return Err(invalid(NOT_PKCS8));
            }
            rsa_private_key(info.private_key.as_bytes()).ok_or(invalid(NOT_PKCS8))?;
            Ok(Self(der.to_vec()))
        } else {
            Err(invalid(NOT_PEM))
        }
    }

    /// The PKCS#8 DER bytes.
    pub fn pkcs8(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for PrivateKeyDer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKeyDer([redacted])")
    }
}

/// A two-prime `RSAPrivateKey` (as GitHub issues), with nothing after it.
fn rsa_private_key(der: &[u8]) -> Option<RsaPrivateKeyRef<'_>> {
    RsaPrivateKeyRef::from_der(der).ok().filter(|key| key.version() == pkcs1::Version::TwoPrime)
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    const PKCS1: &str = include_str!("../tests/data/test-app-key.pkcs1.pem");
    const PKCS8: &str = include_str!("../tests/data/test-app-key.pkcs8.pem");

    #[test]
    fn pkcs1_is_wrapped_into_the_same_pkcs8_as_openssl_writes() {
        let wrapped = PrivateKeyDer::from_pem(PKCS1).unwrap();
        let pkcs8 = PrivateKeyDer::from_pem(PKCS8).unwrap();
        assert_eq!(wrapped, pkcs8);
        let (_, pkcs1) = pem::decode_vec(PKCS1.as_bytes()).unwrap();
        let info = PrivateKeyInfoRef::from_der(wrapped.pkcs8()).unwrap();
        assert_eq!(info.private_key.as_bytes(), pkcs1);
        assert_eq!(format!("{wrapped:?}"), "PrivateKeyDer([redacted])");
    }

    #[test]
    fn any_one_line_width_reads() {
        let (_, der) = pem::decode_vec(PKCS1.as_bytes()).unwrap();
        let body = STANDARD.encode(&der);
        let wrapped = |width: usize| {
            let lines: Vec<&str> = body.as_bytes().chunks(width).map(|l| std::str::from_utf8(l).unwrap()).collect();
            format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n", lines.join("\n"))
        };
        let expected = PrivateKeyDer::from_pem(PKCS1).unwrap();
        for width in [64, 76, body.len()] {
            assert_eq!(PrivateKeyDer::from_pem(&wrapped(width)).unwrap(), expected, "{width}");
            assert_eq!(PrivateKeyDer::from_pem(&wrapped(width).replace('\n', "\r\n")).unwrap(), expected, "{width}");
        }
    }

    #[test]
    fn malformed_keys_are_refused_with_a_reason() {
        let reason = |pem: &str| match PrivateKeyDer::from_pem(pem) {
            Err(CredentialsError::InvalidPrivateKey { reason }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason("not a key"), NOT_PEM);
        assert_eq!(reason("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"), NOT_PEM);
        assert_eq!(reason(&PKCS1[..PKCS1.len() / 2]), NOT_PEM);
        // Valid base64, truncated DER.
        let (_, der) = pem::decode_vec(PKCS1.as_bytes()).unwrap();
        let short = pem::encode_string("RSA PRIVATE KEY", pem::LineEnding::LF, &der[..der.len() - 3]).unwrap();
        assert_eq!(reason(&short), NOT_PKCS1);
        // A PKCS#1 body under the PKCS#8 label, and a PKCS#8 body under the PKCS#1 label.
        assert_eq!(reason(&PKCS1.replace("RSA PRIVATE KEY", "PRIVATE KEY")), NOT_PKCS8);
        assert_eq!(reason(&PKCS8.replace("PRIVATE KEY", "RSA PRIVATE KEY")), NOT_PKCS1);
    }
}
