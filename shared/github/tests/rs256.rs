//! `RsaSigner` (RustCrypto's `rsa` crate) against OpenSSL: RSASSA-PKCS1-v1_5
//! is deterministic, so its signatures must be OpenSSL's byte for byte
//! (`data/rs256/openssl-signatures.txt`, see `data/rs256/README.md`), and
//! every signature verifies under the key's public half. Keys the crate
//! refuses are refused with a reason, never signed with.

use agent_zero_github::{CredentialsError, PrivateKeyDer, Rs256Signer as _, RsaSigner};
use agent_zero_ports::block_on;
use proptest::prelude::*;
use rsa::pkcs8::DecodePrivateKey as _;
use rsa::signature::Verifier as _;

/// The JWT signing input OpenSSL signed (`{"alg":"RS256","typ":"JWT"}` and
/// `{"iat":1700000000,"exp":1700000540,"iss":12345}`).
const MESSAGE: &str =
    "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpYXQiOjE3MDAwMDAwMDAsImV4cCI6MTcwMDAwMDU0MCwiaXNzIjoxMjM0NX0";
const OPENSSL_SIGNATURES: &str = include_str!("data/rs256/openssl-signatures.txt");

/// Each key with the file name OpenSSL's signature is listed under.
const KEYS: &[(&str, &str)] = &[
    ("rs256/key-512.pkcs8.pem", include_str!("data/rs256/key-512.pkcs8.pem")),
    ("rs256/key-1024.pkcs8.pem", include_str!("data/rs256/key-1024.pkcs8.pem")),
    ("test-app-key.pkcs1.pem", include_str!("data/test-app-key.pkcs1.pem")),
    ("rs256/key-2048-e3.pkcs8.pem", include_str!("data/rs256/key-2048-e3.pkcs8.pem")),
    ("rs256/key-2050.pkcs8.pem", include_str!("data/rs256/key-2050.pkcs8.pem")),
    ("rs256/key-3072.pkcs8.pem", include_str!("data/rs256/key-3072.pkcs8.pem")),
    ("rs256/key-4096.pkcs8.pem", include_str!("data/rs256/key-4096.pkcs8.pem")),
];

fn sign(key: &PrivateKeyDer, message: &[u8]) -> Result<Vec<u8>, CredentialsError> {
    block_on(RsaSigner.sign_rs256(key, message))
}

/// The signature's verification under the key's public half.
fn verify(key: &PrivateKeyDer, message: &[u8], signature: &[u8]) -> Result<(), rsa::signature::Error> {
    let public = rsa::PrivateKey::from_pkcs8_der(key.pkcs8()).unwrap().to_public_key();
    let signature = rsa::pkcs1v15::Signature::try_from(signature)?;
    rsa::pkcs1v15::VerifyingKey::<rsa::sha2::Sha256>::new(public).verify(message, &signature)
}

fn openssl_signature(file: &str) -> Vec<u8> {
    let line = OPENSSL_SIGNATURES.lines().find_map(|line| line.strip_prefix(file)?.strip_prefix(' '));
    hex::decode(line.unwrap_or_else(|| panic!("no OpenSSL signature for {file}"))).unwrap()
}

#[test]
fn signatures_are_openssls_byte_for_byte() {
    for (file, pem) in KEYS {
        let key = PrivateKeyDer::from_pem(pem).unwrap();
        let signature = sign(&key, MESSAGE.as_bytes()).unwrap();
        assert_eq!(hex::encode(&signature), hex::encode(openssl_signature(file)), "{file}");
        verify(&key, MESSAGE.as_bytes(), &signature).unwrap();
        assert!(verify(&key, b"another message", &signature).is_err(), "{file}");
    }
}

#[test]
fn the_loopback_github_verifies_them() {
    use rsa::pkcs8::DecodePublicKey as _;
    let key = PrivateKeyDer::from_pem(agent_zero_fakes::TEST_APP_PRIVATE_KEY_PEM).unwrap();
    let public = rsa::PublicKey::from_public_key_pem(agent_zero_fakes::TEST_APP_PUBLIC_KEY_PEM).unwrap();
    let verifier = rsa::pkcs1v15::VerifyingKey::<rsa::sha2::Sha256>::new(public);
    let signature = sign(&key, MESSAGE.as_bytes()).unwrap();
    assert_eq!(signature.len(), 256, "a 2048-bit key signs 256 bytes");
    let signature = rsa::pkcs1v15::Signature::try_from(signature.as_slice()).unwrap();
    verifier.verify(MESSAGE.as_bytes(), &signature).expect("verifies with the public key");
}

/// The test App's key with its private exponent's last octet flipped: the
/// structure is sound, the values disagree.
fn with_wrong_exponent() -> PrivateKeyDer {
    use rsa::pkcs1::der::{Decode as _, Encode as _, asn1::UintRef};
    let (_, der) = rsa::pkcs1::der::SecretDocument::from_pem(include_str!("data/test-app-key.pkcs1.pem")).unwrap();
    let mut key = rsa::pkcs1::RsaPrivateKeyRef::from_der(der.as_bytes()).unwrap();
    let mut d = key.private_exponent.as_bytes().to_vec();
    *d.last_mut().unwrap() ^= 0x02;
    key.private_exponent = UintRef::new(&d).unwrap();
    let der = key.to_der().unwrap();
    PrivateKeyDer::from_pem(
        &rsa::pkcs1::der::pem::encode_string("RSA PRIVATE KEY", rsa::pkcs1::der::pem::LineEnding::LF, &der).unwrap(),
    )
    .unwrap()
}

#[test]
fn keys_the_crate_refuses_are_never_signed_with() {
    let refused =
        |key: &PrivateKeyDer| matches!(sign(key, b"message"), Err(CredentialsError::InvalidPrivateKey { .. }));
    // Unbalanced primes (768 and 1280 bits, each way): structurally keys,
    // so they are read; GitHub issues none.
    for (name, pem) in [
        ("768 · 1280", include_str!("data/rs256/key-unbalanced-768-1280.pkcs1.pem")),
        ("1280 · 768", include_str!("data/rs256/key-unbalanced-1280-768.pkcs1.pem")),
    ] {
        let key = PrivateKeyDer::from_pem(pem).unwrap();
        assert!(refused(&key), "{name}: {:?}", sign(&key, b"message"));
    }
    // Parts that do not belong together.
    assert!(refused(&with_wrong_exponent()));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_message_verifies_under_the_public_key(message in prop::collection::vec(any::<u8>(), 0..300), key in 0..KEYS.len()) {
        let (file, pem) = KEYS[key];
        let key = PrivateKeyDer::from_pem(pem).unwrap();
        let signature = sign(&key, &message).unwrap();
        prop_assert!(verify(&key, &message, &signature).is_ok(), "{}", file);
    }
}
