//! A [`MemoryKv`] that records each operation, for the benchmarks and tests
//! that measure what a run costs at the key-value port.

use std::cell::RefCell;

use crate::{Expect, KeyPage, KeyValue, KvError, MemoryKv, Write};

/// A [`MemoryKv`] recording every operation as `(key, kind)`: the key (a
/// list's prefix, a batch's first key) and one of `get`, `put`, `delete`,
/// `list`, `insert` (`put_if_absent`), `cas`, `get_many` or `transact`
/// (each batch is one request, as a Durable Object answers it). What a caller counts them by (the store a
/// key lands in, a kind) is its own business.
#[derive(Debug, Default)]
pub struct CountingKv {
    inner: MemoryKv,
    operations: RefCell<Vec<(String, &'static str)>>,
}

impl CountingKv {
    /// An empty store, nothing recorded.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that answers one key per request
    /// ([`MemoryKv::one_key_per_request`]).
    pub fn one_key_per_request() -> Self {
        Self { inner: MemoryKv::one_key_per_request(), operations: RefCell::default() }
    }

    /// An empty store with batch reads and no multi-key transaction, as
    /// Spin's ([`MemoryKv::without_transactions`]).
    pub fn without_transactions() -> Self {
        Self { inner: MemoryKv::without_transactions(), operations: RefCell::default() }
    }

    /// The store under the count (reads of it are not counted).
    pub fn inner(&self) -> &MemoryKv {
        &self.inner
    }

    /// Every operation recorded so far, oldest first.
    pub fn operations(&self) -> Vec<(String, &'static str)> {
        self.operations.borrow().clone()
    }

    /// The operations recorded so far, and a fresh count from here.
    pub fn take(&self) -> Vec<(String, &'static str)> {
        std::mem::take(&mut self.operations.borrow_mut())
    }

    fn record(&self, key: &str, kind: &'static str) {
        self.operations.borrow_mut().push((key.to_owned(), kind));
    }
}

impl KeyValue for CountingKv {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.record(key, "get");
        self.inner.get(key).await
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.record(key, "put");
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), KvError> {
        self.record(key, "delete");
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        self.record(prefix, "list");
        self.inner.list(prefix, cursor, limit).await
    }
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        self.record(key, "insert");
        self.inner.put_if_absent(key, value).await
    }
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        self.record(key, "cas");
        self.inner.compare_and_swap(key, expected, value).await
    }
    /// One `get_many` where the store answers it in one request; one `get`
    /// per key where it reads key by key.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        if self.inner.reads_in_one_request(keys) {
            self.record(keys.first().copied().unwrap_or_default(), "get_many");
        } else {
            keys.iter().for_each(|key| self.record(key, "get"));
        }
        self.inner.get_many(keys).await
    }
    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        self.inner.reads_in_one_request(keys)
    }
    /// One `put_many` where the store writes them in one request; one `put`
    /// per key otherwise.
    async fn put_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        let keys: Vec<&str> = pairs.iter().map(|(key, _)| *key).collect();
        if self.inner.writes_in_one_request(&keys) {
            self.record(keys.first().copied().unwrap_or_default(), "put_many");
        } else {
            keys.iter().for_each(|key| self.record(key, "put"));
        }
        self.inner.put_many(pairs).await
    }
    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        self.inner.writes_in_one_request(keys)
    }
    fn transacts(&self, keys: &[&str]) -> bool {
        self.inner.transacts(keys)
    }
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        // A store without transactions refuses before any request.
        let keys: Vec<&str> = expect.iter().chain(writes).map(|(key, _)| *key).collect();
        if self.inner.transacts(&keys) {
            self.record(keys.first().copied().unwrap_or_default(), "transact");
        }
        self.inner.transact(expect, writes).await
    }
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        let keys: Vec<&str> = read.iter().copied().chain(expect.iter().chain(writes).map(|(key, _)| *key)).collect();
        if self.inner.transacts(&keys) {
            self.record(keys.first().copied().unwrap_or_default(), "read_and_transact");
        }
        self.inner.read_and_transact(read, expect, writes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_on;

    #[test]
    fn every_operation_is_recorded_with_its_key_and_kind() {
        let kv = CountingKv::new();
        block_on(kv.put("a/1", b"x")).unwrap();
        assert!(!block_on(kv.put_if_absent("a/1", b"y")).unwrap());
        assert_eq!(block_on(kv.get("a/1")).unwrap().as_deref(), Some(&b"x"[..]));
        assert!(block_on(kv.compare_and_swap("a/1", Some(b"x"), b"z")).unwrap());
        assert_eq!(block_on(kv.list("a/", None, 10)).unwrap().keys, ["a/1"]);
        block_on(kv.delete("a/1")).unwrap();
        let kinds: Vec<&str> = kv.take().iter().map(|(_, kind)| *kind).collect();
        assert_eq!(kinds, ["put", "insert", "get", "cas", "list", "delete"]);
        assert!(kv.operations().is_empty(), "taken");
        assert!(kv.inner().snapshot().is_empty());
    }
}
