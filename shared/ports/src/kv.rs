//! The key-value port: narrow on purpose (get, put, delete, list by prefix,
//! two atomic conditional writes, and two batches a backend may do in one
//! request: a read of several keys and a conditional write of several).
//!
//! Cloudflare KV is eventually consistent and allows one write per second
//! per key, so callers build records as write-once keys or single-writer
//! keys, never counters or locks. What decides "has this happened" (a task
//! log entry, a claim on a tick, a decision) is written with
//! [`KeyValue::put_if_absent`] or [`KeyValue::compare_and_swap`], which a
//! backend implements only where it can do so atomically (a Durable
//! Object's storage, Spin's `wasi:keyvalue/atomics`, one lock in memory);
//! elsewhere they answer [`KvError::Unsupported`], never a racy imitation.

use thiserror::Error;

/// Longest key accepted by every backend (Fermyon Cloud allows 255 bytes,
/// Cloudflare 512): keys are checked against the smaller one.
pub const MAX_KEY_BYTES: usize = 255;

/// One page of keys, in ascending byte order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPage {
    pub keys: Vec<String>,
    /// Pass back to continue; `None` when the listing is complete.
    pub cursor: Option<String>,
}

/// Why a key-value operation failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum KvError {
    /// The store is not bound or not permitted for this component.
    #[error("key-value store unavailable: {0}")]
    Unavailable(String),
    /// The key is empty or longer than [`MAX_KEY_BYTES`].
    #[error("invalid key `{key}`: {reason}")]
    InvalidKey { key: String, reason: &'static str },
    /// The backend answered with an error.
    #[error("key-value backend error: {0}")]
    Backend(String),
    /// The backend cannot do this operation atomically (Workers KV has no
    /// compare-and-set), so it refuses instead of racing.
    #[error("key-value backend cannot do this atomically: {0}")]
    Unsupported(String),
}

/// One condition of a [`KeyValue::transact`]: `key` holds `expected`
/// (`None`: is absent).
pub type Expect<'a> = (&'a str, Option<&'a [u8]>);

/// One write of a [`KeyValue::transact`]: `value` at `key`, or (`None`)
/// the key removed.
pub type Write<'a> = (&'a str, Option<&'a [u8]>);

/// A key-value store.
pub trait KeyValue {
    /// The value at `key`, if any.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError>;
    /// Writes `value` at `key`, replacing what was there.
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError>;
    /// Removes `key`; removing a missing key is not an error.
    async fn delete(&self, key: &str) -> Result<(), KvError>;
    /// Up to `limit` keys starting with `prefix`, after `cursor`.
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError>;
    /// Writes `value` at `key` only if `key` is absent, as one atomic step
    /// of the backend; `Ok(false)`, with nothing written, when it was there.
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError>;
    /// Replaces the value at `key` with `value` only if it still is
    /// `expected` (`None`: absent), as one atomic step; `Ok(false)`, with
    /// nothing written, when it was not.
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError>;
    /// The values at `keys`, in their order. The default reads them one by
    /// one; a backend that can answer them in one request (a task's Durable
    /// Object, when every key is that task's) overrides it and says so in
    /// [`KeyValue::reads_in_one_request`].
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        let mut values = Vec::with_capacity(keys.len());
        for key in keys {
            values.push(self.get(key).await?);
        }
        Ok(values)
    }
    /// Whether [`KeyValue::get_many`] of `keys` is one request to the
    /// backend (what a meter counts it as); the default, `false`, counts it
    /// as one read per key.
    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        let _ = keys;
        false
    }
    /// Writes every pair of `pairs`, replacing what was there. Not atomic:
    /// a failure may leave some written, so only for writes each of which
    /// may land alone (a checkpoint, a listing's summary). The default puts
    /// them one by one; a backend that writes them in one request (Spin's
    /// `wasi:keyvalue/batch` `set-many`) overrides it and says so in
    /// [`KeyValue::writes_in_one_request`].
    async fn put_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        for (key, value) in pairs {
            self.put(key, value).await?;
        }
        Ok(())
    }
    /// Whether [`KeyValue::put_many`] of `keys` is one request to the
    /// backend (what a meter counts it as); the default, `false`, counts it
    /// as one write per key.
    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        let _ = keys;
        false
    }
    /// Applies every write of `writes`, in order, only if every condition
    /// of `expect` holds, as one atomic step of the backend: `Ok(false)`,
    /// with nothing written, when one does not. A backend that cannot do
    /// this atomically for these keys answers [`KvError::Unsupported`]
    /// before touching anything (the default), and the caller falls back to
    /// single-key conditional writes.
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        let _ = (expect, writes);
        Err(KvError::Unsupported("no multi-key transaction in this store".into()))
    }
    /// Whether [`KeyValue::transact`] over `keys` is supported (answered
    /// without a request), so a caller can choose its layout before it
    /// writes. The default, `false`, matches the default `transact`.
    fn transacts(&self, keys: &[&str]) -> bool {
        let _ = keys;
        false
    }
    /// Reads `read` and applies [`KeyValue::transact`]'s `expect` and
    /// `writes`, as one atomic step and one request: the values are those
    /// before the writes, whether or not the writes applied. Supported
    /// where [`KeyValue::transacts`] is for every key, read ones included;
    /// the default answers [`KvError::Unsupported`] before touching
    /// anything.
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        let _ = (read, expect, writes);
        Err(KvError::Unsupported("no multi-key transaction in this store".into()))
    }
    /// Writes `value` at `key` and asks the backend to remove it after
    /// `ttl_secs` when it can (Workers KV's `expirationTtl`, at least 60 s).
    /// A backend without expiry keeps it: callers that need the lifetime
    /// enforced record it in the value and remove the key themselves (the
    /// app's retention pass).
    async fn put_expiring(&self, key: &str, value: &[u8], ttl_secs: u64) -> Result<(), KvError> {
        let _ = ttl_secs;
        self.put(key, value).await
    }
    /// Whether [`KeyValue::put_expiring`] at `key` has the backend itself
    /// remove the key once its lifetime is over (Workers KV), so the caller
    /// need not schedule its removal. The default, `false`, is always safe.
    fn expires_on_its_own(&self, key: &str) -> bool {
        let _ = key;
        false
    }
    /// What the backend's own atomic operations were seen to do, for the
    /// operator (`doctor`): `Ok` says why the conditional writes above are
    /// atomic here, `Err` why they cannot be. The default is for backends
    /// that are atomic by construction (one lock, a Durable Object).
    async fn probe_atomicity(&self) -> Result<String, String> {
        Ok("conditional writes run in one single-threaded store (atomic by construction)".into())
    }
}

/// Checks a key against the limits every backend shares.
pub fn check_key(key: &str) -> Result<(), KvError> {
    if key.is_empty() {
        return Err(KvError::InvalidKey { key: String::new(), reason: "empty" });
    }
    if key.len() > MAX_KEY_BYTES {
        let mut end = 64;
        while !key.is_char_boundary(end) {
            end -= 1;
        }
        return Err(KvError::InvalidKey { key: format!("{}…", &key[..end]), reason: "longer than 255 bytes" });
    }
    Ok(())
}

impl<T: KeyValue + ?Sized> KeyValue for &T {
    async fn put_expiring(&self, key: &str, value: &[u8], ttl_secs: u64) -> Result<(), KvError> {
        (**self).put_expiring(key, value, ttl_secs).await
    }
    fn expires_on_its_own(&self, key: &str) -> bool {
        (**self).expires_on_its_own(key)
    }
    async fn probe_atomicity(&self) -> Result<String, String> {
        (**self).probe_atomicity().await
    }
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        (**self).get_many(keys).await
    }
    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        (**self).reads_in_one_request(keys)
    }
    async fn put_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        (**self).put_many(pairs).await
    }
    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        (**self).writes_in_one_request(keys)
    }
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        (**self).transact(expect, writes).await
    }
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        (**self).read_and_transact(read, expect, writes).await
    }
    fn transacts(&self, keys: &[&str]) -> bool {
        (**self).transacts(keys)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        (**self).get(key).await
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        (**self).put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), KvError> {
        (**self).delete(key).await
    }
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        (**self).list(prefix, cursor, limit).await
    }
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        (**self).put_if_absent(key, value).await
    }
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        (**self).compare_and_swap(key, expected, value).await
    }
}
