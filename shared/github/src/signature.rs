//! `X-Hub-Signature-256`: HMAC-SHA256 of the raw request body, keyed with
//! the webhook secret, sent as `sha256=<64 hex digits>`.
//!
//! Checked before anything in the body is read. What is accepted:
//! - surrounding spaces and tabs are ignored: RFC 9110 says optional
//!   whitespace around a field value is not part of it, and hosts differ in
//!   whether they strip it;
//! - the hex digest may be upper or lower case (GitHub sends lower case): the
//!   digits are decoded and the 32 bytes compared, so the spelling carries
//!   nothing an attacker could use;
//! - the `sha256=` prefix is exact; anything else is malformed.
//!
//! The comparison is constant-time (`hmac`'s `verify_slice`, built on
//! `subtle`). An empty secret never verifies anything.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use thiserror::Error;

/// The header GitHub signs deliveries with.
pub const SIGNATURE_256_HEADER: &str = "x-hub-signature-256";
/// The legacy SHA-1 header, which alone is not accepted.
pub const SIGNATURE_SHA1_HEADER: &str = "x-hub-signature";

const PREFIX: &str = "sha256=";
const DIGEST_HEX_LEN: usize = 64;

/// Why a delivery's signature was not accepted. Every variant answers 401.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// No `X-Hub-Signature-256` header: the delivery is unsigned, or the
    /// webhook was configured without a secret.
    #[error("missing X-Hub-Signature-256 header")]
    Missing,
    /// Only the legacy SHA-1 `X-Hub-Signature` was sent; SHA-1 is not accepted.
    #[error("only the SHA-1 X-Hub-Signature header was sent; X-Hub-Signature-256 is required")]
    Sha1Only,
    /// The header is not `sha256=` followed by 64 hex digits.
    #[error("malformed X-Hub-Signature-256 header: {0}")]
    Malformed(&'static str),
    /// Well-formed, but not the HMAC of this body under the configured secret.
    #[error("X-Hub-Signature-256 does not match the body")]
    Mismatch,
    /// The operator configured an empty secret, which anyone could sign with.
    #[error("the webhook secret is empty")]
    EmptySecret,
}

/// Verifies `header` (the value of `X-Hub-Signature-256`) against `body`.
pub fn verify(secret: &[u8], header: Option<&str>, body: &[u8]) -> Result<(), SignatureError> {
    let expected = expected(secret, header, None)?;
    if matches(secret, body, &expected) { Ok(()) } else { Err(SignatureError::Mismatch) }
}

/// Like [`verify`], given both signature headers, so a delivery carrying
/// only the SHA-1 one is reported as such rather than as unsigned.
pub fn verify_headers(
    secret: &[u8],
    sha256: Option<&str>,
    sha1: Option<&str>,
    body: &[u8],
) -> Result<(), SignatureError> {
    let expected = expected(secret, sha256, sha1)?;
    if matches(secret, body, &expected) { Ok(()) } else { Err(SignatureError::Mismatch) }
}

/// Every check of [`verify_headers`] but the hash: the 32 bytes the headers
/// claim, for a host that computes the HMAC itself (WebCrypto) and compares
/// in constant time.
pub fn expected(secret: &[u8], sha256: Option<&str>, sha1: Option<&str>) -> Result<[u8; 32], SignatureError> {
    if sha256.is_none() && sha1.is_some() && !secret.is_empty() {
        return Err(SignatureError::Sha1Only);
    }
    if secret.is_empty() {
        return Err(SignatureError::EmptySecret);
    }
    parse(sha256.ok_or(SignatureError::Missing)?)
}

/// Whether `mac` is HMAC-SHA256(`secret`, `body`), compared in constant time.
pub fn matches(secret: &[u8], body: &[u8], mac: &[u8; 32]) -> bool {
    let mut hmac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length");
    hmac.update(body);
    hmac.verify_slice(mac).is_ok()
}

/// The signature for `body` as GitHub would send it (for tests and tools).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length");
    mac.update(body);
    format!("{PREFIX}{}", hex::encode(mac.finalize().into_bytes()))
}

fn parse(header: &str) -> Result<[u8; 32], SignatureError> {
    let value = header.trim_matches([' ', '\t']);
    if value.is_empty() {
        return Err(SignatureError::Missing);
    }
    let digits = value.strip_prefix(PREFIX).ok_or(SignatureError::Malformed("expected the `sha256=` prefix"))?;
    if digits.len() != DIGEST_HEX_LEN {
        return Err(SignatureError::Malformed("expected 64 hex digits after `sha256=`"));
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(digits, &mut out).map_err(|_| SignatureError::Malformed("not hexadecimal"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"It's a Secret to Everybody";
    const BODY: &[u8] = b"Hello, World!";

    #[test]
    fn github_documented_example() {
        // The worked example from GitHub's "Validating webhook deliveries".
        let expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(sign(SECRET, BODY), expected);
        assert_eq!(verify(SECRET, Some(expected), BODY), Ok(()));
    }

    #[test]
    fn any_altered_byte_or_other_secret_is_a_mismatch() {
        let header = sign(SECRET, BODY);
        for i in 0..BODY.len() {
            let mut altered = BODY.to_vec();
            altered[i] ^= 0x01;
            assert_eq!(verify(SECRET, Some(&header), &altered), Err(SignatureError::Mismatch), "byte {i}");
        }
        let mut longer = BODY.to_vec();
        longer.push(b'\n');
        assert_eq!(verify(SECRET, Some(&header), &longer), Err(SignatureError::Mismatch));
        assert_eq!(verify(b"another secret", Some(&header), BODY), Err(SignatureError::Mismatch));
        let other = sign(b"another secret", BODY);
        assert_eq!(verify(SECRET, Some(&other), BODY), Err(SignatureError::Mismatch));
    }

    #[test]
    fn empty_body_is_signed_like_any_other() {
        let header = sign(SECRET, b"");
        assert_eq!(verify(SECRET, Some(&header), b""), Ok(()));
        assert_eq!(verify(SECRET, Some(&header), b" "), Err(SignatureError::Mismatch));
        assert_eq!(verify(SECRET, Some(&sign(SECRET, b" ")), b""), Err(SignatureError::Mismatch));
    }

    #[test]
    fn uppercase_hex_is_accepted_but_not_an_uppercase_prefix() {
        let header = sign(SECRET, BODY);
        let upper_digits = format!("sha256={}", header[PREFIX.len()..].to_ascii_uppercase());
        assert_eq!(verify(SECRET, Some(&upper_digits), BODY), Ok(()));
        let upper_prefix = header.replacen("sha256", "SHA256", 1);
        assert!(matches!(verify(SECRET, Some(&upper_prefix), BODY), Err(SignatureError::Malformed(_))));
    }

    #[test]
    fn surrounding_whitespace_is_ignored_inner_whitespace_is_not() {
        let header = sign(SECRET, BODY);
        assert_eq!(verify(SECRET, Some(&format!("  {header}\t")), BODY), Ok(()));
        let inner = header.replacen('=', "= ", 1);
        assert!(matches!(verify(SECRET, Some(&inner), BODY), Err(SignatureError::Malformed(_))));
        assert_eq!(verify(SECRET, Some("   "), BODY), Err(SignatureError::Missing));
    }

    #[test]
    fn malformed_headers_are_told_apart() {
        let header = sign(SECRET, BODY);
        let digits = &header[PREFIX.len()..];
        let cases = [
            (digits.to_owned(), "prefix"),
            (format!("sha1={digits}"), "prefix"),
            (format!("sha256={}", &digits[..63]), "64 hex digits"),
            (format!("sha256={digits}00"), "64 hex digits"),
            (format!("sha256={}zz", &digits[..62]), "hexadecimal"),
            ("sha256=".to_owned(), "64 hex digits"),
        ];
        for (value, reason) in cases {
            match verify(SECRET, Some(&value), BODY) {
                Err(SignatureError::Malformed(r)) => assert!(r.contains(reason), "{value}: {r}"),
                other => panic!("{value}: {other:?}"),
            }
        }
    }

    #[test]
    fn missing_sha1_only_and_empty_secret() {
        assert_eq!(verify(SECRET, None, BODY), Err(SignatureError::Missing));
        assert_eq!(verify_headers(SECRET, None, None, BODY), Err(SignatureError::Missing));
        let sha1 = "sha1=0123456789abcdef0123456789abcdef01234567";
        assert_eq!(verify_headers(SECRET, None, Some(sha1), BODY), Err(SignatureError::Sha1Only));
        let header = sign(SECRET, BODY);
        assert_eq!(verify_headers(SECRET, Some(&header), Some(sha1), BODY), Ok(()));
        // An empty secret verifies nothing, not even a signature made with it.
        assert_eq!(verify(b"", Some(&sign(b"", BODY)), BODY), Err(SignatureError::EmptySecret));
        assert_eq!(verify_headers(b"", None, Some(sha1), BODY), Err(SignatureError::EmptySecret));
    }

    /// The split a host with its own HMAC uses: the header's claim, then the
    /// comparison, agree with `verify_headers` case by case.
    #[test]
    fn expected_then_matches_is_verify_headers() {
        let header = sign(SECRET, BODY);
        let claimed = expected(SECRET, Some(&header), None).unwrap();
        assert!(matches(SECRET, BODY, &claimed));
        assert!(!matches(SECRET, b"Hello, World?", &claimed));
        assert!(!matches(b"another secret", BODY, &claimed));
        let sha1 = "sha1=0123456789abcdef0123456789abcdef01234567";
        assert_eq!(expected(SECRET, None, Some(sha1)), Err(SignatureError::Sha1Only));
        assert_eq!(expected(SECRET, None, None), Err(SignatureError::Missing));
        assert_eq!(expected(b"", Some(&header), None), Err(SignatureError::EmptySecret));
        assert!(matches!(expected(SECRET, Some("sha256=zz"), None), Err(SignatureError::Malformed(_))));
    }
}
