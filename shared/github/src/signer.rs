//! The RS256 signing port (RSASSA-PKCS1-v1_5 with SHA-256, JWS `RS256`)
//! the GitHub App JWT is signed through, and the App's private key as the
//! PKCS#8 DER every implementation takes.
//!
//! Each host brings its own signer: the worker signs with WebCrypto
//! (`crypto.subtle`, native in workerd); Spin and the host tests with
//! [`RsaSigner`], constant-time pure Rust (`rs256.rs`). Key parsing here
//! is pure: PEM to DER, PKCS#1 wrapped into PKCS#8, and a structural check
//! of the DER so a bad key is refused when the deployment's variables are
//! read, not at the first signature.

use crate::credentials::CredentialsError;
use crate::rs256;

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
/// `importKey("pkcs8", …)` takes), checked to hold an `RSAPrivateKey`.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKeyDer(Vec<u8>);

/// `SEQUENCE { OID 1.2.840.113549.1.1.1 (rsaEncryption), NULL }`.
const RSA_ALGORITHM: [u8; 15] =
    [0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];
const PKCS1_LABEL: &str = "RSA PRIVATE KEY";
const PKCS8_LABEL: &str = "PRIVATE KEY";

impl PrivateKeyDer {
    /// From the PEM GitHub issued (PKCS#1 `RSA PRIVATE KEY`) or its PKCS#8
    /// form (`PRIVATE KEY`).
    pub fn from_pem(pem: &str) -> Result<Self, CredentialsError> {
        let invalid = |reason| CredentialsError::InvalidPrivateKey { reason };
        let (label, der) = pem_block(pem).ok_or(invalid("expected a PEM `RSA PRIVATE KEY` or `PRIVATE KEY` block"))?;
        match label {
            PKCS1_LABEL => {
                rsa_private_key(&der).ok_or(invalid("not a valid PKCS#1 RSA private key"))?;
                Ok(Self::wrap_pkcs1(&der))
            }
            PKCS8_LABEL => {
                let inner = pkcs8_rsa_key(&der).ok_or(invalid("not a valid PKCS#8 RSA private key"))?;
                rsa_private_key(inner).ok_or(invalid("not a valid PKCS#8 RSA private key"))?;
                Ok(Self(der))
            }
            _ => Err(invalid("expected a PEM `RSA PRIVATE KEY` or `PRIVATE KEY` block")),
        }
    }

    /// `PrivateKeyInfo { version 0, rsaEncryption, OCTET STRING pkcs1 }`.
    fn wrap_pkcs1(pkcs1: &[u8]) -> Self {
        let mut body = vec![0x02, 0x01, 0x00];
        body.extend_from_slice(&RSA_ALGORITHM);
        body.push(0x04);
        push_len(&mut body, pkcs1.len());
        body.extend_from_slice(pkcs1);
        let mut der = vec![0x30];
        push_len(&mut der, body.len());
        der.extend_from_slice(&body);
        Self(der)
    }

    /// The PKCS#8 DER bytes.
    pub fn pkcs8(&self) -> &[u8] {
        &self.0
    }

    /// The PKCS#1 `RSAPrivateKey` inside.
    pub fn pkcs1(&self) -> &[u8] {
        // Checked when built.
        pkcs8_rsa_key(&self.0).unwrap_or_default()
    }
}

impl std::fmt::Debug for PrivateKeyDer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKeyDer([redacted])")
    }
}

/// The label and decoded bytes of the one PEM block in `pem`.
fn pem_block(pem: &str) -> Option<(&str, Vec<u8>)> {
    let pem = pem.trim();
    let rest = pem.strip_prefix("-----BEGIN ")?;
    let (label, rest) = rest.split_once("-----")?;
    let footer = format!("-----END {label}-----");
    let body = rest.trim_end().strip_suffix(footer.as_str())?;
    Some((label, agent_zero_contracts::base64::decode_wrapped(body).ok()?))
}

/// DER length octets.
fn push_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
}

/// One DER TLV at the start of `der`: `(tag, contents, rest)`.
fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (octets, after) = rest.split_at(count);
        rest = after;
        octets.iter().fold(0usize, |n, b| (n << 8) | usize::from(*b))
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The `RSAPrivateKey` of a PKCS#8 `PrivateKeyInfo` whose algorithm is
/// rsaEncryption.
fn pkcs8_rsa_key(der: &[u8]) -> Option<&[u8]> {
    let (0x30, info, []) = tlv(der)? else { return None };
    let (0x02, [0x00], rest) = tlv(info)? else { return None };
    let rest = rest.strip_prefix(&RSA_ALGORITHM[..])?;
    // Optional attributes may follow the key.
    let (0x04, key, _) = tlv(rest)? else { return None };
    Some(key)
}

/// `RSAPrivateKey ::= SEQUENCE { version 0, n, e, d, p, q, dp, dq, qinv }`
/// (two-prime keys, as GitHub issues), each a positive INTEGER: its nine
/// contents octets.
fn rsa_private_key(der: &[u8]) -> Option<[&[u8]; 9]> {
    let (0x30, mut fields, []) = tlv(der)? else { return None };
    let mut values = [&[][..]; 9];
    for (index, slot) in values.iter_mut().enumerate() {
        let (0x02, value, rest) = tlv(fields)? else { return None };
        match (index, value) {
            (0, [0x00]) => {}
            (0, _) => return None,
            (_, []) => return None,
            (_, [first, ..]) if *first >= 0x80 => return None,
            _ => {}
        }
        *slot = value;
        fields = rest;
    }
    fields.is_empty().then_some(values)
}

/// RS256 in pure Rust, in constant time (`rs256.rs`): for the hosts
/// without WebCrypto (Spin, the native tests). It replaces the `rsa`
/// crate, whose private-key operation is not constant-time
/// (RUSTSEC-2023-0071, no fixed version).
#[derive(Debug, Clone, Copy, Default)]
pub struct RsaSigner;

impl Rs256Signer for RsaSigner {
    async fn sign_rs256(&self, key: &PrivateKeyDer, message: &[u8]) -> Result<Vec<u8>, CredentialsError> {
        let [_, n, e, _, p, q, dp, dq, qinv] = rsa_private_key(key.pkcs1())
            .ok_or(CredentialsError::InvalidPrivateKey { reason: "not a valid PKCS#1 RSA private key" })?;
        let parts = rs256::KeyParts { n, e, p, q, dp, dq, qinv };
        rs256::sign(parts, message).map_err(|error| match error {
            rs256::SignError::UnusableKey => CredentialsError::InvalidPrivateKey {
                reason: "too short for RS256 (under 496 bits), or an even modulus or prime",
            },
            rs256::SignError::Inconsistent => CredentialsError::Signing {
                reason: "the signature does not verify: the key's parts do not belong together".into(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKCS1: &str = include_str!("../tests/data/test-app-key.pkcs1.pem");
    const PKCS8: &str = include_str!("../tests/data/test-app-key.pkcs8.pem");

    #[test]
    fn pkcs1_is_wrapped_into_the_same_pkcs8_as_openssl_writes() {
        let wrapped = PrivateKeyDer::from_pem(PKCS1).unwrap();
        let pkcs8 = PrivateKeyDer::from_pem(PKCS8).unwrap();
        assert_eq!(wrapped, pkcs8);
        assert_eq!(pem_block(PKCS1).unwrap().1, wrapped.pkcs1());
        assert_eq!(format!("{wrapped:?}"), "PrivateKeyDer([redacted])");
    }

    #[test]
    fn malformed_keys_are_refused_with_a_reason() {
        let reason = |pem: &str| match PrivateKeyDer::from_pem(pem) {
            Err(CredentialsError::InvalidPrivateKey { reason }) => reason,
            other => panic!("{other:?}"),
        };
        assert_eq!(reason("not a key"), "expected a PEM `RSA PRIVATE KEY` or `PRIVATE KEY` block");
        assert_eq!(
            reason("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"),
            "expected a PEM `RSA PRIVATE KEY` or `PRIVATE KEY` block"
        );
        assert_eq!(reason(&PKCS1[..PKCS1.len() / 2]), "expected a PEM `RSA PRIVATE KEY` or `PRIVATE KEY` block");
        // Valid base64, truncated DER.
        let der = pem_block(PKCS1).unwrap().1;
        let short = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
            agent_zero_contracts::base64::encode(&der[..der.len() - 3])
        );
        assert_eq!(reason(&short), "not a valid PKCS#1 RSA private key");
        // A PKCS#1 body under the PKCS#8 label.
        let mislabelled = PKCS1.replace("RSA PRIVATE KEY", "PRIVATE KEY");
        assert_eq!(reason(&mislabelled), "not a valid PKCS#8 RSA private key");
    }

    #[test]
    fn der_lengths_use_the_shortest_form() {
        for (len, octets) in
            [(0, vec![0]), (0x7f, vec![0x7f]), (0x80, vec![0x81, 0x80]), (0x4a8, vec![0x82, 0x04, 0xa8])]
        {
            let mut out = Vec::new();
            push_len(&mut out, len);
            assert_eq!(out, octets, "{len}");
        }
    }
}
