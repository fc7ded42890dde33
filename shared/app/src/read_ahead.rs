//! What a tick reads before it decides, read ahead in one request.
//!
//! A tick reads a handful of its task's keys before any write: its cost
//! record, the stimulus (entry 0, and entry 1 for an admission), whether
//! its seq is committed, the checkpoint and the claim on its seq. On
//! Cloudflare they all live in the task's Durable Object, which answers
//! them in one `getMany` request instead of six. [`ReadAhead`] makes that
//! one request, then serves each value once, to the first read of its
//! key; a key written meanwhile is read from the store again.
//!
//! A value served from here may be a few milliseconds older than a read
//! would be. Nothing decides on it alone: the claim is taken by a
//! compare-and-swap against the bytes read, and the commit inserts only
//! if the seq is still free, so a stale read costs a lost race (the tick
//! ends `Stale` or `Busy`), never a second commit. On a store that reads
//! key by key (Spin's), nothing is read ahead.

use std::cell::RefCell;
use std::collections::BTreeMap;

use agent_zero_ports::{Expect, KeyPage, KeyValue, KvError, Write};

/// A store with some values read ahead.
#[derive(Debug)]
pub(crate) struct ReadAhead<K> {
    inner: K,
    ahead: RefCell<BTreeMap<String, Option<Vec<u8>>>>,
}

impl<K: KeyValue> ReadAhead<K> {
    pub(crate) fn new(inner: K) -> Self {
        Self { inner, ahead: RefCell::default() }
    }

    /// Reads `keys` in one request, when the store answers them so;
    /// otherwise does nothing (each is read when asked for). A failure is
    /// not an error: the keys are read again when asked for.
    pub(crate) async fn read(&self, keys: &[&str]) {
        if keys.len() < 2 || !self.inner.reads_in_one_request(keys) {
            return;
        }
        if let Ok(values) = self.inner.get_many(keys).await {
            let mut ahead = self.ahead.borrow_mut();
            for (key, value) in keys.iter().zip(values) {
                ahead.insert((*key).to_owned(), value);
            }
        }
    }

    fn take(&self, key: &str) -> Option<Option<Vec<u8>>> {
        self.ahead.borrow_mut().remove(key)
    }

    fn forget<'k>(&self, keys: impl IntoIterator<Item = &'k str>) {
        let mut ahead = self.ahead.borrow_mut();
        for key in keys {
            ahead.remove(key);
        }
    }
}

impl<K: KeyValue> KeyValue for ReadAhead<K> {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        match self.take(key) {
            Some(value) => Ok(value),
            None => self.inner.get(key).await,
        }
    }
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        if keys.iter().all(|key| self.ahead.borrow().contains_key(*key)) {
            return Ok(keys.iter().filter_map(|key| self.take(key)).collect());
        }
        self.forget(keys.iter().copied());
        self.inner.get_many(keys).await
    }
    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        self.inner.reads_in_one_request(keys)
    }
    fn transacts(&self, keys: &[&str]) -> bool {
        self.inner.transacts(keys)
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.forget([key]);
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), KvError> {
        self.forget([key]);
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        self.inner.list(prefix, cursor, limit).await
    }
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        self.forget([key]);
        self.inner.put_if_absent(key, value).await
    }
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        self.forget([key]);
        self.inner.compare_and_swap(key, expected, value).await
    }
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        self.forget(writes.iter().map(|(key, _)| *key));
        self.inner.transact(expect, writes).await
    }
    async fn put_expiring(&self, key: &str, value: &[u8], ttl_secs: u64) -> Result<(), KvError> {
        self.forget([key]);
        self.inner.put_expiring(key, value, ttl_secs).await
    }
    fn expires_on_its_own(&self, key: &str) -> bool {
        self.inner.expires_on_its_own(key)
    }
    async fn probe_atomicity(&self) -> Result<String, String> {
        self.inner.probe_atomicity().await
    }
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::{CountingKv, MemoryKv, block_on};

    use super::*;

    #[test]
    fn one_request_then_each_value_once_and_never_after_a_write() {
        let store = CountingKv::new();
        block_on(async {
            store.put("task/t/a", b"1").await.unwrap();
            store.put("task/t/b", b"2").await.unwrap();
            store.take();
            let kv = ReadAhead::new(&store);
            kv.read(&["task/t/a", "task/t/b", "task/t/c"]).await;
            assert_eq!(store.take().iter().map(|(_, kind)| *kind).collect::<Vec<_>>(), ["get_many"]);
            // Served from the read, once each.
            assert_eq!(kv.get_many(&["task/t/a", "task/t/c"]).await.unwrap(), [Some(b"1".to_vec()), None]);
            assert!(store.take().is_empty(), "served without a request");
            // A key written after the read is read from the store.
            store.put("task/t/b", b"changed").await.unwrap();
            kv.put("task/t/b", b"3").await.unwrap();
            assert_eq!(kv.get("task/t/b").await.unwrap().as_deref(), Some(&b"3"[..]));
            // Served once: a second read goes to the store.
            assert_eq!(kv.get("task/t/a").await.unwrap().as_deref(), Some(&b"1"[..]));
            let kinds: Vec<&str> = store.take().iter().map(|(_, kind)| *kind).collect();
            assert_eq!(kinds, ["put", "put", "get", "get"]);
        });
    }

    #[test]
    fn a_store_that_reads_key_by_key_is_not_read_ahead() {
        let store = MemoryKv::one_key_per_request();
        block_on(async {
            let kv = ReadAhead::new(&store);
            kv.read(&["a", "b"]).await;
            assert_eq!(store.operations(), 0);
            store.put("a", b"now").await.unwrap();
            assert_eq!(kv.get("a").await.unwrap().as_deref(), Some(&b"now"[..]));
        });
    }
}
