//! The key-value port over Spin's `default` key-value store.
//!
//! Spin can only enumerate every key (`get_keys`), so `list` sorts and pages
//! them here: its cost grows with the store. Callers keep their own indexes
//! (see the README's cost model) and list only small prefixes.

use agent_zero_ports::{KeyPage, KeyValue, KvError, check_key, page_of};
use spin_sdk::key_value::Store;

/// The `default` store, or why it could not be opened (for example, not
/// listed in the component's `key_value_stores`).
pub(crate) struct SpinKv {
    store: Result<Store, String>,
}

impl SpinKv {
    pub(crate) fn open_default() -> Self {
        Self { store: Store::open_default().map_err(|e| format!("store `default`: {e}")) }
    }

    fn store(&self) -> Result<&Store, KvError> {
        self.store.as_ref().map_err(|e| KvError::Unavailable(e.clone()))
    }
}

fn backend(e: impl std::fmt::Display) -> KvError {
    KvError::Backend(e.to_string())
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
}
