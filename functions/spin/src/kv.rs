//! The key-value port over Spin's `default` key-value store.
//!
//! Plain reads and writes go through `fermyon:spin/key-value@2.0.0`
//! (spin-sdk's `Store`). The two conditional writes go through
//! `wasi:keyvalue/atomics@0.2.0-draft2` (`cas` and `swap` from an existing
//! value, `increment` for a creation ticket) on the same store opened as a
//! `wasi:keyvalue/store` bucket: Spin ≥ 3.0 serves both interfaces over one
//! store per label (`crates/factor-key-value/src/host.rs`, `open` in both
//! `key_value::HostStore` and `wasi_keyvalue::store::Host`), so a value
//! written with one is read by the other.
//!
//! Spin can only enumerate every key (`get_keys`), so `list` sorts and pages
//! them here: its cost grows with the store. Callers keep their own indexes
//! (see the cost model, docs/tasks.md) and list only small prefixes.

use std::cell::OnceCell;

use agent_zero_ports::{KeyPage, KeyValue, KvError, check_key, page_of};
use spin_sdk::key_value::Store;

/// `wasi:keyvalue@0.2.0-draft2`, generated from wit/deps/keyvalue-2024-10-17
/// (copied from spinframework/spin; see wit/deps/README.md). spin-sdk 5
/// generates these interfaces only inside its internal `wit` module, so the
/// component carries its own binding; only `store.open`, `atomics`
/// (`cas`, `swap`, `increment`) and `batch` (`get-many`, `set-many`) are
/// called, so only those are imported (wit/world.wit).
#[doc(hidden)]
#[allow(unreachable_pub, missing_debug_implementations, clippy::all)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/deps/keyvalue-2024-10-17",
        world: "imports",
    });
}

use bindings::wasi::keyvalue::{atomics, batch, store};

/// The label of the only store the component uses (spin.toml `key_value_stores`).
const STORE: &str = "default";

/// The `default` store, or why it could not be opened (for example, not
/// listed in the component's `key_value_stores`).
pub(crate) struct SpinKv {
    store: Result<Store, String>,
    /// The same store as a `wasi:keyvalue` bucket, opened on the first
    /// conditional write.
    bucket: OnceCell<Result<store::Bucket, KvError>>,
}

impl SpinKv {
    pub(crate) fn open_default() -> Self {
        Self { store: Store::open_default().map_err(|e| format!("store `{STORE}`: {e}")), bucket: OnceCell::new() }
    }

    fn store(&self) -> Result<&Store, KvError> {
        self.store.as_ref().map_err(|e| KvError::Unavailable(e.clone()))
    }

    fn bucket(&self) -> Result<&store::Bucket, KvError> {
        self.bucket
            .get_or_init(|| {
                store::open(STORE)
                    .map_err(|e| KvError::Unavailable(format!("wasi:keyvalue bucket `{STORE}`: {}", describe(&e))))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

fn backend(e: impl std::fmt::Display) -> KvError {
    KvError::Backend(e.to_string())
}

fn describe(e: &store::Error) -> String {
    match e {
        store::Error::NoSuchStore => "no such store".to_owned(),
        store::Error::AccessDenied => "access denied (not in the component's key_value_stores)".to_owned(),
        store::Error::Other(message) => message.clone(),
    }
}

fn store_error(key: &str, e: &store::Error) -> KvError {
    KvError::Backend(format!("compare-and-swap of `{key}`: {}", describe(e)))
}

impl KeyValue for SpinKv {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        check_key(key)?;
        self.store()?.get(key).map_err(backend)
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        check_key(key)?;
        self.store()?.set(key, value).map_err(backend)
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        check_key(key)?;
        self.store()?.delete(key).map_err(backend)
    }

    /// One `wasi:keyvalue/batch` `get-many`: one host call and, on Spin's
    /// default store, one SQL query (`crates/key-value-spin/src/store.rs`).
    /// It answers only the keys that exist, in its own order, so the
    /// values are matched back by key. Not a snapshot on every store Spin
    /// ships (Cosmos answers in pages, DynamoDB retries unprocessed keys),
    /// which no caller needs: the values a tick reads this way are checked
    /// again by the conditional write that commits it.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        for key in keys {
            check_key(key)?;
        }
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let asked: Vec<String> = keys.iter().map(|key| (*key).to_owned()).collect();
        let found = batch::get_many(self.bucket()?, &asked)
            .map_err(|e| KvError::Backend(format!("get-many of {} keys: {}", keys.len(), describe(&e))))?;
        Ok(matched(keys, found))
    }

    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        !keys.is_empty()
    }

    /// One `wasi:keyvalue/batch` `set-many`: one host call and, on Spin's
    /// default store, one transaction; on the others a write per key that
    /// may stop part way, which callers accept (each write may land alone).
    async fn put_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        for (key, _) in pairs {
            check_key(key)?;
        }
        if pairs.is_empty() {
            return Ok(());
        }
        let owned: Vec<(String, Vec<u8>)> =
            pairs.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect();
        batch::set_many(self.bucket()?, &owned)
            .map_err(|e| KvError::Backend(format!("set-many of {} keys: {}", pairs.len(), describe(&e))))
    }

    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        !keys.is_empty()
    }

    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        let mut keys = self.store()?.get_keys().map_err(backend)?;
        keys.sort_unstable();
        Ok(page_of(keys.iter().map(String::as_str), prefix, cursor, limit))
    }

    /// Observes the store's atomics on a fresh probe key: whether a swap from
    /// absent is compared (Spin's Redis, Cosmos, DynamoDB stores) or an
    /// upsert (its default SQLite store), and whether `increment` counts 1
    /// then 2 on a fresh key, which [`SpinKv::create`] relies on. The probe
    /// keys are removed after.
    async fn probe_atomicity(&self) -> Result<String, String> {
        let mut nonce = [0u8; 8];
        let _ = getrandom::fill(&mut nonce);
        let key = format!("doctor/atomicity/{}", nonce.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let ticket = format!("{key}{TICKET_SUFFIX}");
        let probed = self.probe(&key, &ticket);
        if let Ok(store) = self.store() {
            let _ = store.delete(&key);
            let _ = store.delete(&ticket);
        }
        let (upsert, counted) = probed.map_err(|e| format!("the store's atomics failed: {e}"))?;
        if counted != (1, 2) {
            return Err(format!(
                "`increment` answered {} then {} on a fresh key, not 1 then 2: racing creations (a task, a claim, a decision) cannot be decided on this store",
                counted.0, counted.1
            ));
        }
        Ok(if upsert {
            "a swap from absent is an upsert on this store (Spin's SQLite store): keys are created by increment tickets instead, and `increment` counted 1 then 2".into()
        } else {
            "a swap from absent is compared on this store, and `increment` counted 1 then 2: keys are created by increment tickets".into()
        })
    }

    /// Creates `key` only if it is absent: see [`SpinKv::create`].
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        check_key(key)?;
        self.create(key, value)
    }

    /// A compare-and-swap. From an existing value it is one
    /// `wasi:keyvalue/atomics` CAS: `cas.new` + `cas.current` read the value
    /// (the host remembers it as the CAS's base), the guest compares it with
    /// `expected`, and `swap` writes `value` only if the stored value is
    /// still that base, failing with `cas-failed` otherwise. Every store
    /// Spin ships does that atomically (SQLite: `UPDATE … WHERE value = old`;
    /// Redis: `WATCH`/`MULTI`; Azure Cosmos: an `If-Match` etag; DynamoDB: a
    /// condition expression). From absent (`expected == None`) it is a
    /// creation, [`SpinKv::create`], because Spin's default SQLite store
    /// turns a swap from absent into an unconditional upsert.
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        check_key(key)?;
        let Some(expected) = expected else { return self.create(key, value) };
        let cas = atomics::Cas::new(self.bucket()?, key).map_err(|e| store_error(key, &e))?;
        let current = cas.current().map_err(|e| store_error(key, &e))?;
        if current.as_deref() != Some(expected) {
            return Ok(false);
        }
        match atomics::swap(cas, value) {
            Ok(()) => Ok(true),
            // The handle it returns, for a retry, is dropped: the caller
            // decides again from a fresh read.
            Err(atomics::CasError::CasFailed(_)) => Ok(false),
            Err(atomics::CasError::StoreError(e)) => Err(store_error(key, &e)),
        }
    }
}

/// The values of `keys`, in their order, from a `get-many` answer that
/// holds only the keys that exist, in the store's own order. Spin's SQLite
/// store answers in key order, and a tick asks in key order (log entries
/// by seq), so one walk along both matches them; any other order, or a
/// key asked for twice, is matched by lookup.
fn matched(keys: &[&str], found: Vec<(String, Option<Vec<u8>>)>) -> Vec<Option<Vec<u8>>> {
    let mut values: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
    let mut at = 0;
    let mut rest = Vec::new();
    for (key, value) in found {
        match keys[at..].iter().position(|k| *k == key) {
            Some(skipped) => {
                at += skipped;
                values[at] = value;
                at += 1;
            }
            None => rest.push((key, value)),
        }
    }
    for (key, value) in rest {
        if let Some(place) = keys.iter().position(|k| *k == key) {
            values[place] = value;
        }
    }
    for place in 0..keys.len() {
        if values[place].is_none()
            && let Some(first) = keys[..place].iter().position(|k| *k == keys[place])
        {
            values[place] = values[first].clone();
        }
    }
    values
}

/// The suffix of a key's creation ticket ([`SpinKv::create`]). It sorts
/// and lists with its key, so removing a task's prefix (retention) removes
/// its tickets too.
pub(crate) const TICKET_SUFFIX: &str = ".created";

impl SpinKv {
    /// Two swaps from absent on `key` (whether both won), then two
    /// increments of `ticket` (what they answered).
    fn probe(&self, key: &str, ticket: &str) -> Result<(bool, (i64, i64)), KvError> {
        let bucket = self.bucket()?;
        let first = atomics::Cas::new(bucket, key).map_err(|e| store_error(key, &e))?;
        let second = atomics::Cas::new(bucket, key).map_err(|e| store_error(key, &e))?;
        first.current().map_err(|e| store_error(key, &e))?;
        second.current().map_err(|e| store_error(key, &e))?;
        let won = |swapped: Result<(), atomics::CasError>| match swapped {
            Ok(()) => Ok(true),
            Err(atomics::CasError::CasFailed(_)) => Ok(false),
            Err(atomics::CasError::StoreError(e)) => Err(store_error(key, &e)),
        };
        let upsert = won(atomics::swap(first, b"first"))? && won(atomics::swap(second, b"second"))?;
        let count = |()| {
            atomics::increment(bucket, ticket, 1)
                .map_err(|e| KvError::Backend(format!("increment of `{ticket}`: {}", describe(&e))))
        };
        Ok((upsert, (count(())?, count(())?)))
    }

    /// Writes `value` at `key` only if `key` was never created, exactly
    /// once among any number of racing writers, on every store Spin ships.
    ///
    /// Why not a CAS from absent: on Spin's default store (SQLite,
    /// spinframework/spin `crates/key-value-spin/src/store.rs`,
    /// `CompareAndSwap::swap`) a swap whose base is absent is `INSERT … ON
    /// CONFLICT DO UPDATE`, which always succeeds, so two racing creations
    /// both win (seen on a real Spin 4.1: an approve and a reject both
    /// accepted in 1 race of 12).
    ///
    /// Instead the writer takes the key's ticket, `atomics.increment` of
    /// `{key}.created` by 1, and writes only if it drew 1. `increment` is one
    /// indivisible step on every store: SQLite reads and writes in one
    /// transaction under the connection's lock; Redis `INCRBY`; Azure Cosmos
    /// a patch, or a create that fails on conflict and retries; DynamoDB an
    /// update conditioned on the value it read (it fails rather than
    /// double-count under contention). So exactly one writer draws 1.
    ///
    /// The rules that make this sound: a key created here is only ever
    /// created here (never by a plain `put`), and is not created again once
    /// deleted (task keys are removed with their task, whose id is never
    /// reused). A key that already exists (written before tickets, or by
    /// the winner) is refused by the read before the ticket. The winner's
    /// write follows its ticket; a reader between the two sees the key
    /// absent and a loser sees it taken, as if the winner were a moment
    /// slower. A store that fails between the two leaves the key taken and
    /// unwritten: the caller gets the error, and a later writer is refused.
    fn create(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        let store = self.store()?;
        if store.exists(key).map_err(backend)? {
            return Ok(false);
        }
        let ticket = format!("{key}{TICKET_SUFFIX}");
        check_key(&ticket)?;
        let drawn = atomics::increment(self.bucket()?, &ticket, 1)
            .map_err(|e| KvError::Backend(format!("creation ticket `{ticket}`: {}", describe(&e))))?;
        if drawn != 1 {
            return Ok(false);
        }
        store.set(key, value).map_err(backend)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::matched;

    fn answer(pairs: &[(&str, &str)]) -> Vec<(String, Option<Vec<u8>>)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), Some(v.as_bytes().to_vec()))).collect()
    }

    fn values(values: &[Option<Vec<u8>>]) -> Vec<Option<&str>> {
        values.iter().map(|v| v.as_deref().map(|b| std::str::from_utf8(b).unwrap())).collect()
    }

    #[test]
    fn an_answer_in_key_order_with_keys_left_out_is_matched_to_the_request() {
        let keys = ["log/1", "log/2", "log/3", "log/4"];
        let found = matched(&keys, answer(&[("log/1", "a"), ("log/3", "c")]));
        assert_eq!(values(&found), [Some("a"), None, Some("c"), None]);
    }

    #[test]
    fn an_answer_in_another_order_or_for_a_key_asked_twice_is_matched_by_key() {
        let keys = ["meta", "cost", "log/0", "cost"];
        let found = matched(&keys, answer(&[("cost", "9"), ("log/0", "e"), ("meta", "m")]));
        assert_eq!(values(&found), [Some("m"), Some("9"), Some("e"), Some("9")]);
        assert_eq!(values(&matched(&keys, Vec::new())), [None, None, None, None]);
    }
}
