//! The key-value port over a Cloudflare KV namespace binding.

use agent_zero_ports::{KeyPage, KeyValue, KvError, check_key};
use worker::{Env, kv::KvStore};

/// A KV namespace, or the reason it is not bound (every operation then
/// fails with [`KvError::Unavailable`], which health reports).
pub(crate) struct CloudflareKv {
    store: Result<KvStore, String>,
}

impl CloudflareKv {
    pub(crate) fn bind(env: &Env, binding: &str) -> Self {
        let store = env.kv(binding).map_err(|e| format!("binding `{binding}`: {e}"));
        Self { store }
    }

    fn store(&self) -> Result<&KvStore, KvError> {
        self.store.as_ref().map_err(|e| KvError::Unavailable(e.clone()))
    }
}

fn backend(e: impl std::fmt::Display) -> KvError {
    KvError::Backend(e.to_string())
}

impl KeyValue for CloudflareKv {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        check_key(key)?;
        self.store()?.get(key).bytes().await.map_err(backend)
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        check_key(key)?;
        self.store()?.put_bytes(key, value).map_err(backend)?.execute().await.map_err(backend)
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        check_key(key)?;
        self.store()?.delete(key).await.map_err(backend)
    }

    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        let mut list = self.store()?.list().prefix(prefix.to_owned()).limit(limit.clamp(1, 1000) as u64);
        if let Some(cursor) = cursor {
            list = list.cursor(cursor.to_owned());
        }
        let page = list.execute().await.map_err(backend)?;
        Ok(KeyPage {
            keys: page.keys.into_iter().map(|k| k.name).collect(),
            cursor: if page.list_complete { None } else { page.cursor },
        })
    }
}
