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

use agent_zero_engine::ClaimAhead;
use agent_zero_ports::{Expect, KeyPage, KeyValue, KvError, Write};

/// A store with some values read ahead.
#[derive(Debug)]
pub(crate) struct ReadAhead<K> {
    inner: K,
    ahead: RefCell<BTreeMap<String, Option<Vec<u8>>>>,
    /// The claim taken with the read, whether it was written, and the
    /// values that request read (each kept until written through here),
    /// until the engine makes the same request: the app may have read
    /// some of its keys meanwhile (entry 1 of an admission is both the
    /// stimulus's and the tick's seq).
    claimed: RefCell<Option<Claimed>>,
}

/// What [`ReadAhead::read`]'s claim request did.
#[derive(Debug)]
struct Claimed {
    claim: ClaimAhead,
    written: bool,
    values: BTreeMap<String, Option<Vec<u8>>>,
}

impl<K: KeyValue> ReadAhead<K> {
    pub(crate) fn new(inner: K) -> Self {
        Self { inner, ahead: RefCell::default(), claimed: RefCell::default() }
    }

    /// Reads `keys` in one request, when the store answers them so;
    /// otherwise does nothing (each is read when asked for). With `claim`,
    /// on a store with transactions, the same request takes the tick's
    /// claim ahead, and the engine's own request for it
    /// ([`ClaimAhead`]: the same conditions and write) is answered from
    /// here. A failure is not an error: the keys are read again when asked
    /// for, and the claim is taken by the engine's request.
    pub(crate) async fn read(&self, keys: &[&str], claim: Option<ClaimAhead>) {
        if keys.len() < 2 || !self.inner.reads_in_one_request(keys) {
            return;
        }
        let values = match claim {
            Some(claim) if self.inner.transacts(keys) => {
                match self.inner.read_and_transact(keys, &claim.expect(), &[claim.write()]).await {
                    Ok((mut values, written)) => {
                        // A key written is served as written, whoever reads it.
                        let (key, value) = claim.write();
                        if written && let Some(at) = keys.iter().position(|k| *k == key) {
                            values[at] = value.map(<[u8]>::to_vec);
                        }
                        let read = keys.iter().map(|key| (*key).to_owned()).zip(values.iter().cloned()).collect();
                        *self.claimed.borrow_mut() = Some(Claimed { claim, written, values: read });
                        Ok(values)
                    }
                    Err(e) => Err(e),
                }
            }
            _ => self.inner.get_many(keys).await,
        };
        if let Ok(values) = values {
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
        let (mut ahead, mut claimed) = (self.ahead.borrow_mut(), self.claimed.borrow_mut());
        for key in keys {
            ahead.remove(key);
            if let Some(claimed) = claimed.as_mut() {
                claimed.values.remove(key);
            }
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
    async fn put_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        self.forget(pairs.iter().map(|(key, _)| *key));
        self.inner.put_many(pairs).await
    }
    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        self.inner.writes_in_one_request(keys)
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
    /// The request the read ahead already made (the same claim, every key
    /// read ahead) is answered from it, once; any other goes to the store.
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        let made = self.claimed.borrow().as_ref().is_some_and(|made| {
            made.claim.expect().as_slice() == expect
                && [made.claim.write()].as_slice() == writes
                && read.iter().all(|key| made.values.contains_key(*key))
        });
        let made = if made { self.claimed.borrow_mut().take() } else { None };
        if let Some(made) = made {
            let values = read.iter().filter_map(|key| made.values.get(*key).cloned()).collect();
            self.forget(read.iter().copied());
            return Ok((values, made.written));
        }
        self.forget(read.iter().copied().chain(writes.iter().map(|(key, _)| *key)));
        self.inner.read_and_transact(read, expect, writes).await
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
            kv.read(&["task/t/a", "task/t/b", "task/t/c"], None).await;
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
    fn the_claim_taken_with_the_read_answers_the_engines_same_request_once() {
        let store = CountingKv::new();
        let tick = agent_zero_engine::Tick { claim_ms: Some(5_000), ..agent_zero_engine::Tick::new("t", 3) };
        let (log, meta, claim) = (
            agent_zero_engine::log_key("t", 3),
            agent_zero_engine::meta_key("t"),
            agent_zero_engine::claim_key("t", 3),
        );
        block_on(async {
            store.put(&meta, b"m").await.unwrap();
            store.take();
            let kv = ReadAhead::new(&store);
            let ahead = ClaimAhead::of(&tick, 1_000).unwrap();
            kv.read(&["task/t/cost", &log, &meta, &claim], Some(ahead.clone())).await;
            assert_eq!(store.take().iter().map(|(_, kind)| *kind).collect::<Vec<_>>(), ["read_and_transact"]);
            // The app reads one of the engine's keys first (an admission's
            // entry 1 is also its tick's seq): still served.
            assert_eq!(kv.get(&log).await.unwrap(), None);
            // The engine's request, the same claim: answered from the read.
            let again = ClaimAhead::of(&tick, 1_000).unwrap();
            let (values, written) =
                kv.read_and_transact(&[&log, &meta, &claim], &again.expect(), &[again.write()]).await.unwrap();
            assert!(written);
            assert_eq!(values[..2], [None, Some(b"m".to_vec())]);
            assert!(values[2].is_some(), "the claim as written");
            assert!(store.take().is_empty(), "served without a request");
            // Once: the same request again goes to the store, which refuses
            // it (the seq is claimed now).
            let (_, written) =
                kv.read_and_transact(&[&log, &meta, &claim], &again.expect(), &[again.write()]).await.unwrap();
            assert!(!written);
            assert_eq!(store.take().len(), 1);
        });
        // Another tick's claim (another `now`) is not the request made.
        let store = CountingKv::new();
        block_on(async {
            let kv = ReadAhead::new(&store);
            kv.read(&[&log, &meta, &claim], ClaimAhead::of(&tick, 1_000)).await;
            store.take();
            let other = ClaimAhead::of(&tick, 2_000).unwrap();
            let (_, written) =
                kv.read_and_transact(&[&log, &meta, &claim], &other.expect(), &[other.write()]).await.unwrap();
            assert!(!written, "the store holds the first claim");
            assert_eq!(store.take().len(), 1, "a request to the store");
        });
    }

    #[test]
    fn a_store_that_reads_key_by_key_is_not_read_ahead() {
        let store = MemoryKv::one_key_per_request();
        block_on(async {
            let kv = ReadAhead::new(&store);
            kv.read(&["a", "b"], None).await;
            assert_eq!(store.operations(), 0);
            store.put("a", b"now").await.unwrap();
            assert_eq!(kv.get("a").await.unwrap().as_deref(), Some(&b"now"[..]));
        });
    }
}
