//! The key-value port over Spin's `default` key-value store.
//!
//! Plain reads and writes go through `fermyon:spin/key-value@2.0.0`
//! (spin-sdk's `Store`). The two conditional writes go through
//! `wasi:keyvalue/atomics@0.2.0-draft2` on the same store opened as a
//! `wasi:keyvalue/store` bucket: Spin ≥ 3.0 serves both interfaces over one
//! store per label (`crates/factor-key-value/src/host.rs`, `open` in both
//! `key_value::HostStore` and `wasi_keyvalue::store::Host`), so a value
//! written with one is read by the other.
//!
//! Spin can only enumerate every key (`get_keys`), so `list` sorts and pages
//! them here: its cost grows with the store. Callers keep their own indexes
//! (see the README's cost model) and list only small prefixes.

use std::cell::OnceCell;

use agent_zero_ports::{KeyPage, KeyValue, KvError, check_key, page_of};
use spin_sdk::key_value::Store;

/// `wasi:keyvalue@0.2.0-draft2`, generated from wit/deps/keyvalue-2024-10-17
/// (copied from spinframework/spin; see wit/deps/README.md). spin-sdk 5
/// generates these interfaces only inside its internal `wit` module, so the
/// component carries its own binding; only `store.open` and `atomics`
/// (`cas`, `swap`) are called, so only those are imported (wit/world.wit).
#[doc(hidden)]
#[allow(unreachable_pub, missing_debug_implementations, clippy::all)]
mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/deps/keyvalue-2024-10-17",
        world: "imports",
    });
}

use bindings::wasi::keyvalue::{atomics, store};

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

    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        let mut keys = self.store()?.get_keys().map_err(backend)?;
        keys.sort_unstable();
        Ok(page_of(keys.iter().map(String::as_str), prefix, cursor, limit))
    }

    /// A compare-and-swap whose expected value is "absent".
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        self.compare_and_swap(key, None, value).await
    }

    /// One `wasi:keyvalue/atomics` CAS: `cas.new` + `cas.current` read the
    /// value (the host remembers it as the CAS's base), the guest compares it
    /// with `expected`, and `swap` writes `value` only if the stored value is
    /// still that base, failing with `cas-failed` otherwise (atomic.wit:
    /// "Atomic operations are single, indivisible operations").
    ///
    /// Caveat of real Spin's default SQLite store (spinframework/spin
    /// `crates/key-value-spin/src/store.rs`, `CompareAndSwap::swap`): when
    /// the base is absent, `swap` is an unconditional upsert, so two racing
    /// `put_if_absent`s of one new key can both succeed there; a base that is
    /// present is compared by a conditional `UPDATE` and is atomic. Spin's
    /// Redis store (`WATCH`/`MULTI`) and tests/spin-host are atomic in both
    /// cases.
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        check_key(key)?;
        let cas = atomics::Cas::new(self.bucket()?, key).map_err(|e| store_error(key, &e))?;
        let current = cas.current().map_err(|e| store_error(key, &e))?;
        if current.as_deref() != expected {
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
