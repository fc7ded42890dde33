//! `RsaSigner` (constant-time RS256 in pure Rust) against the `rsa` crate:
//! RSASSA-PKCS1-v1_5 is deterministic, so both must give the same bytes,
//! over keys of every size and shape in `data/rs256/` (see its README) and
//! the App key the loopback GitHub verifies with.

use agent_zero_github::{CredentialsError, PrivateKeyDer, Rs256Signer as _, RsaSigner};
use agent_zero_ports::block_on;
use proptest::prelude::*;
use rsa::pkcs1::DecodeRsaPrivateKey as _;
use rsa::signature::{SignatureEncoding as _, Signer as _, Verifier as _};

const KEYS: &[(&str, &str)] = &[
    ("512", include_str!("data/rs256/key-512.pkcs8.pem")),
    ("1024", include_str!("data/rs256/key-1024.pkcs8.pem")),
    ("2048 (the test App's)", include_str!("data/test-app-key.pkcs1.pem")),
    ("2048, e = 3", include_str!("data/rs256/key-2048-e3.pkcs8.pem")),
    ("2050", include_str!("data/rs256/key-2050.pkcs8.pem")),
    ("3072", include_str!("data/rs256/key-3072.pkcs8.pem")),
    ("4096", include_str!("data/rs256/key-4096.pkcs8.pem")),
    ("768 · 1280", include_str!("data/rs256/key-unbalanced-768-1280.pkcs1.pem")),
    ("1280 · 768", include_str!("data/rs256/key-unbalanced-1280-768.pkcs1.pem")),
];

/// The rsa crate's verification under the key's `(n, e)`. A verifying
/// PKCS#1 v1.5 signature is the only one (RSA is a permutation), so this
/// is as strict as comparing bytes; it is what the unbalanced keys get,
/// as the rsa crate does not finish loading them as private keys.
fn verify(key: &PrivateKeyDer, message: &[u8], signature: &[u8]) -> Result<(), rsa::signature::Error> {
    let integers = integers(key.pkcs1());
    let public =
        rsa::RsaPublicKey::new(rsa::BigUint::from_bytes_be(&integers[1]), rsa::BigUint::from_bytes_be(&integers[2]))
            .unwrap();
    let signature = rsa::pkcs1v15::Signature::try_from(signature)?;
    rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(public).verify(message, &signature)
}

/// The nine INTEGERs of a PKCS#1 `RSAPrivateKey` (short or two-octet lengths).
fn integers(der: &[u8]) -> Vec<Vec<u8>> {
    let mut at = if der[1] & 0x80 != 0 { 2 + usize::from(der[1] & 0x7f) } else { 2 };
    let mut integers = Vec::new();
    while at < der.len() {
        let (len, header) = match der[at + 1] {
            short if short < 0x80 => (usize::from(short), 2),
            long => {
                let count = usize::from(long & 0x7f);
                (der[at + 2..at + 2 + count].iter().fold(0usize, |n, b| (n << 8) | usize::from(*b)), 2 + count)
            }
        };
        integers.push(der[at + header..at + header + len].to_vec());
        at += header + len;
    }
    integers
}

fn reference(key: &PrivateKeyDer, message: &[u8]) -> Vec<u8> {
    let key = rsa::RsaPrivateKey::from_pkcs1_der(key.pkcs1()).unwrap();
    rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(key).sign(message).to_vec()
}

fn ours(key: &PrivateKeyDer, message: &[u8]) -> Result<Vec<u8>, CredentialsError> {
    block_on(RsaSigner.sign_rs256(key, message))
}

#[test]
fn signatures_are_the_rsa_crates_byte_for_byte() {
    let long = vec![0xa5u8; 10_000];
    for (name, pem) in KEYS {
        let key = PrivateKeyDer::from_pem(pem).unwrap();
        for message in [&b""[..], b"eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIn0", &long] {
            let signature = ours(&key, message).unwrap();
            verify(&key, message, &signature).unwrap_or_else(|e| panic!("{name}, {} bytes: {e}", message.len()));
            if !name.contains('·') {
                assert_eq!(signature, reference(&key, message), "{name}, {} bytes", message.len());
            }
        }
    }
}

#[test]
fn the_loopback_github_verifies_them() {
    use rsa::pkcs8::DecodePublicKey as _;
    let key = PrivateKeyDer::from_pem(agent_zero_fakes::TEST_APP_PRIVATE_KEY_PEM).unwrap();
    let public = rsa::RsaPublicKey::from_public_key_pem(agent_zero_fakes::TEST_APP_PUBLIC_KEY_PEM).unwrap();
    let verifier = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(public);
    let message = b"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOjF9";
    let signature = ours(&key, message).unwrap();
    assert_eq!(signature.len(), 256, "a 2048-bit key signs 256 bytes");
    let signature = rsa::pkcs1v15::Signature::try_from(signature.as_slice()).unwrap();
    verifier.verify(message, &signature).expect("verifies with the public key");
    assert!(verifier.verify(b"another message", &signature).is_err());
}

/// The key's integers re-encoded with one of them replaced.
fn with_integer(pem: &str, index: usize, value: &[u8]) -> PrivateKeyDer {
    use base64::Engine as _;
    let mut integers = integers(PrivateKeyDer::from_pem(pem).unwrap().pkcs1());
    integers[index] = value.to_vec();
    let encode_len = |len: usize| -> Vec<u8> {
        if len < 0x80 {
            vec![len as u8]
        } else if len < 0x100 {
            vec![0x81, len as u8]
        } else {
            vec![0x82, (len >> 8) as u8, len as u8]
        }
    };
    let mut body = Vec::new();
    for integer in integers {
        body.push(0x02);
        body.extend(encode_len(integer.len()));
        body.extend(integer);
    }
    let mut out = vec![0x30];
    out.extend(encode_len(body.len()));
    out.extend(body);
    let pem = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
        base64::engine::general_purpose::STANDARD.encode(out)
    );
    PrivateKeyDer::from_pem(&pem).unwrap()
}

#[test]
fn a_key_whose_parts_disagree_never_releases_a_signature() {
    let pem = KEYS[2].1;
    // dp (index 6) off by two: the CRT half mod p is wrong, and a released
    // signature would reveal q as gcd(s^e − m, n).
    let good = PrivateKeyDer::from_pem(pem).unwrap();
    let mut dp = {
        let key = rsa::RsaPrivateKey::from_pkcs1_der(good.pkcs1()).unwrap();
        rsa::traits::PrivateKeyParts::dp(&key).unwrap().to_bytes_be()
    };
    *dp.last_mut().unwrap() ^= 0x02;
    if dp[0] >= 0x80 {
        dp.insert(0, 0);
    }
    let faulty = with_integer(pem, 6, &dp);
    assert!(matches!(ours(&faulty, b"message"), Err(CredentialsError::Signing { .. })));
    // An even modulus.
    let even = with_integer(pem, 1, &[0x00, 0xc0, 0x00, 0x02]);
    assert!(matches!(ours(&even, b"message"), Err(CredentialsError::InvalidPrivateKey { .. })));
    // A modulus too short for SHA-256's DigestInfo (61 bytes): refused, not signed.
    let mut short = vec![0x01u8; 61];
    short[0] = 0x7f;
    let short = with_integer(pem, 1, &short);
    assert!(matches!(ours(&short, b"message"), Err(CredentialsError::InvalidPrivateKey { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_message_signs_as_the_rsa_crate_signs_it(message in prop::collection::vec(any::<u8>(), 0..300), key in 0..KEYS.len()) {
        let (name, pem) = KEYS[key];
        let key = PrivateKeyDer::from_pem(pem).unwrap();
        let signature = ours(&key, &message).unwrap();
        prop_assert!(verify(&key, &message, &signature).is_ok(), "{}", name);
        if !name.contains('·') {
            prop_assert_eq!(signature, reference(&key, &message));
        }
    }
}
