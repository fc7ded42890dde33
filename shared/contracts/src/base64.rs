//! Base64 (RFC 4648) in the two forms the product writes and reads:
//! the standard alphabet with padding (GitHub's file contents, the task
//! store's values, sandbox output) and the URL-safe alphabet without it
//! (JWTs, list cursors, dashboard cookies).
//!
//! Decoding is as strict as the `base64` crate's engines for those forms,
//! which the tests hold it to: padding exactly where the standard form
//! needs it and nowhere in the URL-safe form, no bits set past the last
//! byte, nothing outside the alphabet. Text wrapped into lines (GitHub's
//! file contents, a PEM block) is read with [`decode_wrapped`], which
//! drops ASCII whitespace first. A few short functions here replace that
//! crate's general-purpose engine in both artefacts.

use std::fmt;

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Why a text is not base64 of the expected form. Offsets count bytes
/// from the start of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// A byte outside the alphabet, or padding where none belongs.
    InvalidByte { offset: usize, byte: u8 },
    /// A length no encoding of this form has.
    InvalidLength { length: usize },
    /// The last symbol carries bits past the last byte.
    InvalidLastSymbol { offset: usize, byte: u8 },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::InvalidByte { offset, byte } => write!(f, "invalid symbol {byte} at offset {offset}"),
            Self::InvalidLength { length } => write!(f, "invalid input length {length}"),
            Self::InvalidLastSymbol { offset, byte } => write!(f, "invalid last symbol {byte} at offset {offset}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// `bytes` in the standard alphabet, padded.
pub fn encode(bytes: impl AsRef<[u8]>) -> String {
    encode_with(bytes.as_ref(), STANDARD, true)
}

/// `bytes` in the URL-safe alphabet, unpadded.
pub fn encode_url(bytes: impl AsRef<[u8]>) -> String {
    encode_with(bytes.as_ref(), URL_SAFE, false)
}

/// The bytes of a standard, padded encoding.
pub fn decode(text: impl AsRef<[u8]>) -> Result<Vec<u8>, DecodeError> {
    decode_with(text.as_ref(), &STANDARD_VALUES, true)
}

/// The bytes of a standard, padded encoding wrapped into lines: ASCII
/// whitespace anywhere is dropped first, so an error's offset counts the
/// bytes of the text without it.
pub fn decode_wrapped(text: impl AsRef<[u8]>) -> Result<Vec<u8>, DecodeError> {
    let packed: Vec<u8> = text.as_ref().iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    decode(packed)
}

/// The bytes of a URL-safe, unpadded encoding.
pub fn decode_url(text: impl AsRef<[u8]>) -> Result<Vec<u8>, DecodeError> {
    decode_with(text.as_ref(), &URL_SAFE_VALUES, false)
}

fn encode_with(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..4 {
            if i < symbols {
                out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize]);
            } else if pad {
                out.push(b'=');
            }
        }
    }
    // Every byte pushed is from the alphabet or `=`, all ASCII.
    String::from_utf8(out).unwrap_or_default()
}

/// Each byte's value in an alphabet; 255 for a byte outside it.
const fn values(alphabet: &[u8; 64]) -> [u8; 256] {
    let mut table = [255; 256];
    let mut at = 0;
    while at < 64 {
        table[alphabet[at] as usize] = at as u8;
        at += 1;
    }
    table
}

static STANDARD_VALUES: [u8; 256] = values(STANDARD);
static URL_SAFE_VALUES: [u8; 256] = values(URL_SAFE);

fn decode_with(text: &[u8], values: &[u8; 256], padded: bool) -> Result<Vec<u8>, DecodeError> {
    let length = text.len();
    let symbols = if padded {
        if !length.is_multiple_of(4) {
            return Err(DecodeError::InvalidLength { length });
        }
        // One or two `=` may end the text; they stand for nothing.
        let padding = text.iter().rev().take(2).take_while(|&&b| b == b'=').count();
        length - padding
    } else {
        length
    };
    if symbols % 4 == 1 {
        return Err(DecodeError::InvalidLength { length });
    }
    let mut out = Vec::with_capacity(symbols / 4 * 3 + 2);
    for (index, chunk) in text[..symbols].chunks(4).enumerate() {
        let mut n = 0u32;
        for (at, &byte) in chunk.iter().enumerate() {
            let offset = index * 4 + at;
            let value = values[usize::from(byte)];
            if value == 255 {
                return Err(DecodeError::InvalidByte { offset, byte });
            }
            n |= u32::from(value) << (18 - 6 * at);
        }
        let bytes = chunk.len() - 1;
        // A short last chunk's unused low bits must be zero.
        if bytes < 3 && (n >> (16 - 8 * bytes)) & 0xFF != 0 {
            let offset = index * 4 + bytes;
            return Err(DecodeError::InvalidLastSymbol { offset, byte: chunk[bytes] });
        }
        out.extend_from_slice(&n.to_be_bytes()[1..=bytes]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD as REF_STANDARD, URL_SAFE_NO_PAD as REF_URL};
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_rfc_4648_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain), coded);
            assert_eq!(decode(coded).unwrap(), plain.as_bytes());
            assert_eq!(encode_url(plain), coded.trim_end_matches('='));
            assert_eq!(decode_url(coded.trim_end_matches('=')).unwrap(), plain.as_bytes());
        }
        assert_eq!(encode([0xfb, 0xff]), "+/8=");
        assert_eq!(encode_url([0xfb, 0xff]), "-_8");
    }

    #[test]
    fn wrapped_text_is_read_without_its_whitespace() {
        assert_eq!(decode_wrapped("Zm9v\nYmFy\r\n").unwrap(), b"foobar");
        assert_eq!(decode_wrapped(" Zm9v YmE=\n\t").unwrap(), b"fooba");
        assert_eq!(decode_wrapped("").unwrap(), b"");
        // Whitespace is not a way past the alphabet or the padding rules.
        assert!(decode_wrapped("Zm9v\nYm=F").is_err());
        assert!(decode_wrapped("Zm9v\nYmF*").is_err());
        assert!(decode("Zm9v\nYmFy").is_err(), "plain decode keeps refusing line breaks");
    }

    #[test]
    fn refusals_name_what_and_where() {
        assert_eq!(decode("Zm9v!g=="), Err(DecodeError::InvalidByte { offset: 4, byte: b'!' }));
        assert_eq!(decode("Zm9"), Err(DecodeError::InvalidLength { length: 3 }));
        assert_eq!(decode("Zh=="), Err(DecodeError::InvalidLastSymbol { offset: 1, byte: b'h' }));
        assert_eq!(decode("Zg==Zg=="), Err(DecodeError::InvalidByte { offset: 2, byte: b'=' }));
        assert_eq!(decode("Z==="), Err(DecodeError::InvalidByte { offset: 1, byte: b'=' }));
        assert_eq!(decode_url("Zg=="), Err(DecodeError::InvalidByte { offset: 2, byte: b'=' }));
        assert_eq!(decode_url("Zm9vY"), Err(DecodeError::InvalidLength { length: 5 }));
        assert_eq!(decode_url("+/8"), Err(DecodeError::InvalidByte { offset: 0, byte: b'+' }));
        assert_eq!(decode("-_8="), Err(DecodeError::InvalidByte { offset: 0, byte: b'-' }));
        assert_eq!(DecodeError::InvalidByte { offset: 4, byte: b'!' }.to_string(), "invalid symbol 33 at offset 4");
    }

    fn text() -> impl Strategy<Value = String> {
        // Mostly symbols of both alphabets and padding, sometimes anything.
        prop_oneof![
            4 => "[A-Za-z0-9+/_=-]{0,14}",
            1 => "[ -~\n]{0,10}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// The `base64` crate is the reference: same text out, and the
        /// same bytes back.
        #[test]
        fn encodes_as_the_base64_crate(bytes in prop::collection::vec(any::<u8>(), 0..70)) {
            prop_assert_eq!(encode(&bytes), REF_STANDARD.encode(&bytes));
            prop_assert_eq!(encode_url(&bytes), REF_URL.encode(&bytes));
            prop_assert_eq!(decode(encode(&bytes)).unwrap(), bytes.clone());
            prop_assert_eq!(decode_url(encode_url(&bytes)).unwrap(), bytes);
        }

        /// Any text: accepted by both with the same bytes, or refused by both.
        #[test]
        fn decodes_and_refuses_as_the_base64_crate(text in text()) {
            prop_assert_eq!(decode(&text).ok(), REF_STANDARD.decode(&text).ok(), "standard {:?}", text);
            prop_assert_eq!(decode_url(&text).ok(), REF_URL.decode(&text).ok(), "url-safe {:?}", text);
        }
    }
}
