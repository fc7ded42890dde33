//! The deployment's receipt keys (docs/receipts.md): the active Ed25519
//! key that signs evidence receipts (`AGENT_ZERO_RECEIPT_KEY`, a key id and
//! the private key, from the platform's secrets) and the public keys of
//! retired key ids (`AGENT_ZERO_RECEIPT_RETIRED_KEYS`), published beside
//! it so receipts they signed still verify. No key arithmetic here: the
//! host signs ([`crate::Host::ed25519`]).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::Config;
use crate::error::{ApiError, ErrorCode};

/// The active key's variable.
pub(crate) const KEY: &str = "AGENT_ZERO_RECEIPT_KEY";
/// The retired public keys' variable.
pub(crate) const RETIRED: &str = "AGENT_ZERO_RECEIPT_RETIRED_KEYS";

/// The fixed start of an Ed25519 private key's PKCS#8 v1 DER (RFC 8410,
/// section 7: `PrivateKeyInfo` with OID 1.3.101.112 and a 32-byte
/// `CurvePrivateKey`), as `openssl genpkey -algorithm ed25519 -outform DER`
/// writes it. The 32 bytes after it are the seed.
pub const PKCS8_PREFIX: [u8; 16] =
    [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];

/// The signing key: its id and its 32-byte seed (RFC 8032's private key).
#[derive(Clone)]
pub(crate) struct ActiveKey {
    pub(crate) id: String,
    pub(crate) seed: [u8; 32],
}

impl std::fmt::Debug for ActiveKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveKey").field("id", &self.id).finish_non_exhaustive()
    }
}

/// A retired key: receipts it signed verify while it is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RetiredKey {
    pub(crate) id: String,
    pub(crate) public_key: [u8; 32],
}

/// Both variables, read.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReceiptKeys {
    pub(crate) active: Option<ActiveKey>,
    pub(crate) retired: Vec<RetiredKey>,
}

impl ReceiptKeys {
    /// Reads both variables; a malformed one is an error naming it (never
    /// its value).
    pub(crate) fn from_config(config: &Config) -> Result<Self, ApiError> {
        let active = config.get(KEY).map(parse_active).transpose().map_err(|reason| invalid(KEY, &reason))?;
        let mut retired = Vec::new();
        for item in config.get(RETIRED).unwrap_or_default().split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let key = parse_retired(item).map_err(|reason| invalid(RETIRED, &reason))?;
            if retired.iter().any(|k: &RetiredKey| k.id == key.id) {
                return Err(invalid(RETIRED, &format!("key id `{}` is listed twice", key.id)));
            }
            if active.as_ref().is_some_and(|a| a.id == key.id) {
                return Err(invalid(
                    RETIRED,
                    &format!("key id `{}` is the active key's ({KEY}): a retired key needs an id of its own", key.id),
                ));
            }
            retired.push(key);
        }
        Ok(Self { active, retired })
    }
}

fn invalid(variable: &str, reason: &str) -> ApiError {
    ApiError::new(ErrorCode::NotConfigured, format!("{variable} is malformed: {reason}")).with_field(variable)
}

/// `KEY_ID:KEY`, the id first (a key id holds no `:`).
fn split(item: &str) -> Result<(&str, &str), String> {
    let (id, key) = item.split_once(':').ok_or("expected KEY_ID:BASE64")?;
    let id = id.trim();
    if id.is_empty()
        || id.len() > 64
        || !id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err("the key id must be 1 to 64 of A-Z a-z 0-9 . _ -".into());
    }
    Ok((id, key.trim()))
}

/// Standard or URL-safe base64, padded or not.
fn decode(text: &str) -> Option<Vec<u8>> {
    let url = text.trim_end_matches('=').replace('+', "-").replace('/', "_");
    URL_SAFE_NO_PAD.decode(url).ok()
}

fn parse_active(value: &str) -> Result<ActiveKey, String> {
    let (id, key) = split(value)?;
    let bytes = decode(key).ok_or("the key is not base64")?;
    let seed: &[u8] = match bytes.len() {
        32 => &bytes,
        48 if bytes[..16] == PKCS8_PREFIX => &bytes[16..],
        48 => return Err("48 bytes that are not an Ed25519 PKCS#8 private key".into()),
        n => {
            return Err(format!(
                "the key is {n} bytes: expected an Ed25519 private key, its 32-byte seed or its 48-byte PKCS#8 DER"
            ));
        }
    };
    Ok(ActiveKey { id: id.to_owned(), seed: seed.try_into().map_err(|_| "unreachable")? })
}

fn parse_retired(item: &str) -> Result<RetiredKey, String> {
    let (id, key) = split(item)?;
    let bytes = decode(key).ok_or_else(|| format!("key `{id}` is not base64"))?;
    let public_key = bytes
        .as_slice()
        .try_into()
        .map_err(|_| format!("key `{id}` is {} bytes: expected a 32-byte Ed25519 public key", bytes.len()))?;
    Ok(RetiredKey { id: id.to_owned(), public_key })
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<ReceiptKeys, String> {
        ReceiptKeys::from_config(&Config::from_pairs(pairs.iter().copied())).map_err(|e| e.message)
    }

    // RFC 8032, section 7.1, TEST 1.
    const SEED_HEX: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const PUBLIC_HEX: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    #[test]
    fn a_seed_or_its_pkcs8_reads_as_the_same_key() {
        let seed = hex::decode(SEED_HEX).unwrap();
        let mut pkcs8 = PKCS8_PREFIX.to_vec();
        pkcs8.extend_from_slice(&seed);
        for value in [STANDARD.encode(&seed), URL_SAFE_NO_PAD.encode(&seed), STANDARD.encode(&pkcs8)] {
            let keys = read(&[(KEY, &format!("2026-12:{value}"))]).unwrap();
            let active = keys.active.unwrap();
            assert_eq!((active.id.as_str(), active.seed.to_vec()), ("2026-12", seed.clone()));
            assert!(!format!("{active:?}").contains(&value));
        }
        assert!(read(&[]).unwrap().active.is_none());
    }

    #[test]
    fn retired_keys_are_public_keys_with_ids_of_their_own() {
        let public = URL_SAFE_NO_PAD.encode(hex::decode(PUBLIC_HEX).unwrap());
        let seed = STANDARD.encode(hex::decode(SEED_HEX).unwrap());
        let keys = read(&[(KEY, &format!("new:{seed}")), (RETIRED, &format!("old:{public}, older:{public}"))]).unwrap();
        assert_eq!(keys.retired.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(), ["old", "older"]);
        assert_eq!(keys.retired[0].public_key.to_vec(), hex::decode(PUBLIC_HEX).unwrap());
        assert_eq!(
            read(&[(KEY, &format!("old:{seed}")), (RETIRED, &format!("old:{public}"))]).unwrap_err(),
            "AGENT_ZERO_RECEIPT_RETIRED_KEYS is malformed: key id `old` is the active key's (AGENT_ZERO_RECEIPT_KEY): a retired key needs an id of its own"
        );
        assert_eq!(
            read(&[(RETIRED, &format!("a:{public},a:{public}"))]).unwrap_err(),
            "AGENT_ZERO_RECEIPT_RETIRED_KEYS is malformed: key id `a` is listed twice"
        );
    }

    #[test]
    fn malformed_keys_are_refused_naming_the_variable_never_the_value() {
        let seed = STANDARD.encode(hex::decode(SEED_HEX).unwrap());
        let cases = [
            (KEY, seed.clone(), "AGENT_ZERO_RECEIPT_KEY is malformed: expected KEY_ID:BASE64"),
            (
                KEY,
                format!("a b:{seed}"),
                "AGENT_ZERO_RECEIPT_KEY is malformed: the key id must be 1 to 64 of A-Z a-z 0-9 . _ -",
            ),
            (KEY, "k:not base64!".into(), "AGENT_ZERO_RECEIPT_KEY is malformed: the key is not base64"),
            (
                KEY,
                format!("k:{}", STANDARD.encode([7u8; 31])),
                "AGENT_ZERO_RECEIPT_KEY is malformed: the key is 31 bytes: expected an Ed25519 private key, its 32-byte seed or its 48-byte PKCS#8 DER",
            ),
            (
                KEY,
                format!("k:{}", STANDARD.encode([7u8; 48])),
                "AGENT_ZERO_RECEIPT_KEY is malformed: 48 bytes that are not an Ed25519 PKCS#8 private key",
            ),
            (
                RETIRED,
                format!("k:{}", STANDARD.encode([7u8; 48])),
                "AGENT_ZERO_RECEIPT_RETIRED_KEYS is malformed: key `k` is 48 bytes: expected a 32-byte Ed25519 public key",
            ),
        ];
        for (variable, value, message) in cases {
            let error = read(&[(variable, &value)]).unwrap_err();
            assert_eq!(error, message);
            assert!(!error.contains(&seed));
        }
    }
}
