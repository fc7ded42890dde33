//! In-memory implementations for tests and the deterministic harness.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::kv::{Expect, KeyPage, KeyValue, KvError, Write, check_key};

/// Which operations an injected fault breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKvFault {
    /// Every operation fails, as with a missing binding.
    All,
    /// Writes and deletes fail; reads work.
    Writes,
}

/// A key-value store in a `BTreeMap`, with optional fault injection.
#[derive(Debug, Default)]
pub struct MemoryKv {
    entries: RefCell<BTreeMap<String, Vec<u8>>>,
    fault: RefCell<Option<MemoryKvFault>>,
    operations: RefCell<u64>,
    /// Reads one key per request: no batch read.
    one_key: bool,
    /// No multi-key transaction (Spin's store).
    no_transactions: bool,
}

impl MemoryKv {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that answers one key per request (a store with
    /// neither batch reads nor transactions): [`KeyValue::get_many`] reads key by key and
    /// [`KeyValue::transact`] is unsupported, so callers take their
    /// single-key path.
    pub fn one_key_per_request() -> Self {
        Self { one_key: true, no_transactions: true, ..Self::default() }
    }

    /// An empty store that, like Spin's (`wasi:keyvalue/batch` `get-many`),
    /// reads several keys in one request but has no multi-key transaction:
    /// callers take their single-key path for conditional writes.
    pub fn without_transactions() -> Self {
        Self { no_transactions: true, ..Self::default() }
    }

    /// Makes later operations fail (or stop failing with `None`).
    pub fn set_fault(&self, fault: Option<MemoryKvFault>) {
        *self.fault.borrow_mut() = fault;
    }

    /// Operations attempted so far (the cost model counts these).
    pub fn operations(&self) -> u64 {
        *self.operations.borrow()
    }

    /// A copy of every entry, for assertions over stored bytes.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        self.entries.borrow().clone()
    }

    fn enter(&self, write: bool) -> Result<(), KvError> {
        *self.operations.borrow_mut() += 1;
        match *self.fault.borrow() {
            Some(MemoryKvFault::All) => Err(KvError::Unavailable("injected fault".into())),
            Some(MemoryKvFault::Writes) if write => Err(KvError::Backend("injected write fault".into())),
            _ => Ok(()),
        }
    }
}

impl KeyValue for MemoryKv {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.enter(false)?;
        check_key(key)?;
        Ok(self.entries.borrow().get(key).cloned())
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.enter(true)?;
        check_key(key)?;
        self.entries.borrow_mut().insert(key.to_owned(), value.to_vec());
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        self.enter(true)?;
        check_key(key)?;
        self.entries.borrow_mut().remove(key);
        Ok(())
    }

    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        self.enter(false)?;
        Ok(page_of(self.entries.borrow().keys().map(String::as_str), prefix, cursor, limit))
    }

    /// Atomic: the check and the write happen under one borrow, with no
    /// suspension point between them.
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        self.compare_and_swap(key, None, value).await
    }

    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        self.enter(true)?;
        check_key(key)?;
        let mut entries = self.entries.borrow_mut();
        if entries.get(key).map(Vec::as_slice) != expected {
            return Ok(false);
        }
        entries.insert(key.to_owned(), value.to_vec());
        Ok(true)
    }

    /// One request, as a task's Durable Object answers it.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        if self.one_key {
            let mut values = Vec::with_capacity(keys.len());
            for key in keys {
                values.push(self.get(key).await?);
            }
            return Ok(values);
        }
        self.enter(false)?;
        let entries = self.entries.borrow();
        keys.iter().map(|key| check_key(key).map(|()| entries.get(*key).cloned())).collect()
    }

    fn reads_in_one_request(&self, _keys: &[&str]) -> bool {
        !self.one_key
    }

    /// Counted as one request where reads are (Spin's batch interface
    /// writes as it reads); the writes themselves are the default's.
    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        !self.one_key && !keys.is_empty()
    }

    fn transacts(&self, _keys: &[&str]) -> bool {
        !self.no_transactions
    }

    /// Atomic: every condition is checked, then every write applied, under
    /// one borrow.
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        self.read_and_transact(&[], expect, writes).await.map(|(_, written)| written)
    }

    /// Atomic as [`KeyValue::transact`], the values read first under the
    /// same borrow.
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        if self.no_transactions {
            return Err(KvError::Unsupported("no multi-key transactions".into()));
        }
        self.enter(true)?;
        for key in read.iter().chain(expect.iter().chain(writes).map(|(key, _)| key)) {
            check_key(key)?;
        }
        let mut entries = self.entries.borrow_mut();
        let values = read.iter().map(|key| entries.get(*key).cloned()).collect();
        if expect.iter().any(|(key, expected)| entries.get(*key).map(Vec::as_slice) != *expected) {
            return Ok((values, false));
        }
        for (key, value) in writes {
            match value {
                Some(value) => entries.insert((*key).to_owned(), value.to_vec()),
                None => entries.remove(*key),
            };
        }
        Ok((values, true))
    }
}

/// Pages through sorted `keys`: those starting with `prefix`, strictly after
/// `cursor` (the last key of the previous page), at most `limit` of them.
/// Shared by backends that can only enumerate all keys (Spin).
pub fn page_of<'a>(
    keys: impl IntoIterator<Item = &'a str>,
    prefix: &str,
    cursor: Option<&str>,
    limit: usize,
) -> KeyPage {
    let limit = limit.max(1);
    let mut matching = keys.into_iter().filter(|k| k.starts_with(prefix) && cursor.is_none_or(|c| *k > c));
    let keys: Vec<String> = matching.by_ref().take(limit).map(str::to_owned).collect();
    let more = matching.next().is_some();
    let cursor = if more { keys.last().cloned() } else { None };
    KeyPage { keys, cursor }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::block_on;

    #[test]
    fn crud_and_paging() {
        let kv = MemoryKv::new();
        block_on(async {
            for i in 0..5 {
                kv.put(&format!("task/{i}"), b"x").await.unwrap();
            }
            kv.put("other", b"y").await.unwrap();
            assert_eq!(kv.get("task/3").await.unwrap().as_deref(), Some(&b"x"[..]));
            assert_eq!(kv.get("nope").await.unwrap(), None);
            let p1 = kv.list("task/", None, 2).await.unwrap();
            assert_eq!(p1.keys, ["task/0", "task/1"]);
            let p2 = kv.list("task/", p1.cursor.as_deref(), 2).await.unwrap();
            assert_eq!(p2.keys, ["task/2", "task/3"]);
            let p3 = kv.list("task/", p2.cursor.as_deref(), 2).await.unwrap();
            assert_eq!(p3.keys, ["task/4"]);
            assert_eq!(p3.cursor, None);
            kv.delete("task/4").await.unwrap();
            kv.delete("task/4").await.unwrap();
            assert_eq!(kv.get("task/4").await.unwrap(), None);
        });
    }

    #[test]
    fn conditional_writes_act_once() {
        let kv = MemoryKv::new();
        block_on(async {
            assert!(kv.put_if_absent("k", b"first").await.unwrap());
            assert!(!kv.put_if_absent("k", b"second").await.unwrap());
            assert_eq!(kv.get("k").await.unwrap().as_deref(), Some(&b"first"[..]));
            assert!(!kv.compare_and_swap("k", Some(b"other"), b"x").await.unwrap());
            assert!(!kv.compare_and_swap("k", None, b"x").await.unwrap());
            assert!(kv.compare_and_swap("k", Some(b"first"), b"third").await.unwrap());
            assert_eq!(kv.get("k").await.unwrap().as_deref(), Some(&b"third"[..]));
            assert!(kv.compare_and_swap("new", None, b"v").await.unwrap());
            kv.set_fault(Some(MemoryKvFault::Writes));
            assert!(kv.put_if_absent("z", b"").await.is_err());
        });
    }

    #[test]
    fn a_transaction_writes_all_or_nothing() {
        let kv = MemoryKv::new();
        block_on(async {
            kv.put("claim", b"mine").await.unwrap();
            kv.put("old", b"x").await.unwrap();
            let writes = [("claim", Some(&b"done"[..])), ("log/1", Some(&b"entry"[..])), ("old", None)];
            // One condition fails: nothing is written.
            assert!(!kv.transact(&[("claim", Some(b"mine")), ("log/1", Some(b"?"))], &writes).await.unwrap());
            assert!(!kv.transact(&[("claim", Some(b"theirs")), ("log/1", None)], &writes).await.unwrap());
            assert_eq!(kv.snapshot().len(), 2);
            assert!(kv.transact(&[("claim", Some(b"mine")), ("log/1", None)], &writes).await.unwrap());
            let after = kv.snapshot();
            assert_eq!(after.keys().collect::<Vec<_>>(), ["claim", "log/1"]);
            assert_eq!(after["claim"], b"done");
            // Once applied, the same transaction's conditions no longer hold.
            assert!(!kv.transact(&[("claim", Some(b"mine")), ("log/1", None)], &writes).await.unwrap());
            let read = kv.get_many(&["log/1", "missing", "claim"]).await.unwrap();
            assert_eq!(read, [Some(b"entry".to_vec()), None, Some(b"done".to_vec())]);
            assert!(kv.transact(&[("", None)], &[]).await.is_err(), "keys are checked");
            kv.set_fault(Some(MemoryKvFault::Writes));
            assert!(kv.transact(&[], &[("k", Some(b"v"))]).await.is_err());
            assert_eq!(kv.snapshot(), after);
        });
        let spin_like = MemoryKv::one_key_per_request();
        block_on(async {
            spin_like.put("a", b"1").await.unwrap();
            let before = spin_like.operations();
            assert_eq!(spin_like.get_many(&["a", "b"]).await.unwrap(), [Some(b"1".to_vec()), None]);
            assert_eq!(spin_like.operations() - before, 2, "one request per key");
            assert!(!spin_like.reads_in_one_request(&["a", "b"]) && !spin_like.transacts(&["a"]));
            let refused = spin_like.transact(&[("a", Some(b"1"))], &[("a", None)]).await;
            assert!(matches!(refused, Err(KvError::Unsupported(_))), "{refused:?}");
            assert_eq!(spin_like.get("a").await.unwrap().as_deref(), Some(&b"1"[..]));
        });
    }

    #[test]
    fn a_transaction_reads_the_values_before_its_writes_in_one_request() {
        let kv = MemoryKv::new();
        block_on(async {
            kv.put("meta", b"m").await.unwrap();
            let before = kv.operations();
            let claim = [("claim", Some(&b"mine"[..]))];
            let (values, written) =
                kv.read_and_transact(&["meta", "claim"], &[("claim", None), ("log/1", None)], &claim).await.unwrap();
            assert!(written);
            assert_eq!(values, [Some(b"m".to_vec()), None], "as before the write");
            assert_eq!(kv.operations() - before, 1, "one request");
            // A condition that fails writes nothing and still reads.
            let theirs = [("claim", Some(&b"theirs"[..]))];
            let (values, written) = kv.read_and_transact(&["claim"], &[("claim", None)], &theirs).await.unwrap();
            assert_eq!((values, written), (vec![Some(b"mine".to_vec())], false));
            assert_eq!(kv.get("claim").await.unwrap().as_deref(), Some(&b"mine"[..]));
            assert!(kv.read_and_transact(&[""], &[], &[]).await.is_err(), "read keys are checked");
        });
        let refused = block_on(MemoryKv::one_key_per_request().read_and_transact(&["a"], &[], &[("a", None)]));
        assert!(matches!(refused, Err(KvError::Unsupported(_))), "{refused:?}");
    }

    #[test]
    fn keys_are_checked_and_faults_injected() {
        let kv = MemoryKv::new();
        block_on(async {
            assert!(matches!(kv.put("", b"").await, Err(KvError::InvalidKey { .. })));
            let long = "k".repeat(257);
            assert!(matches!(kv.get(&long).await, Err(KvError::InvalidKey { .. })));
            kv.set_fault(Some(MemoryKvFault::Writes));
            assert!(kv.get("a").await.is_ok());
            assert!(matches!(kv.put("a", b"").await, Err(KvError::Backend(_))));
            kv.set_fault(Some(MemoryKvFault::All));
            assert!(matches!(kv.get("a").await, Err(KvError::Unavailable(_))));
        });
        assert_eq!(kv.operations(), 5);
    }
}
