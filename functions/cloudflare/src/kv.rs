//! The worker's key-value port: [`HostKv`] routes each key to where it
//! belongs. Keys under `task/{id}/` (the task log, claims and meta: what
//! decides "has this happened") go to that task's `TaskStore` Durable
//! Object, strongly consistent and atomic; every other key (the listing
//! index, `pending/` markers the sweep lists across tasks, delivery
//! records, audit, caches, health probes) to the Workers KV namespace
//! [`CloudflareKv`], which tolerates eventual consistency.

use agent_zero_ports::{KeyPage, KeyValue, KvError, check_key};
use worker::{Env, kv::KvStore};

use crate::task_store::{TaskStores, task_of};

/// The one port the app and the engine see: task keys to their Durable
/// Object, the rest to Workers KV. Each operation goes to exactly one of
/// them.
pub(crate) struct HostKv {
    kv: CloudflareKv,
    tasks: TaskStores,
}

impl HostKv {
    pub(crate) fn bind(env: &Env, kv_binding: &str, tasks_binding: &'static str) -> Self {
        Self { kv: CloudflareKv::bind(env, kv_binding), tasks: TaskStores::bind(env, tasks_binding) }
    }
}

/// A list `prefix` that matches keys of more than one task (`task/`,
/// `task/ab`, or a prefix of `task/` itself): no single store can answer it.
fn spans_tasks(prefix: &str) -> bool {
    task_of(prefix).is_none() && (prefix.starts_with("task/") || "task/".starts_with(prefix))
}

impl KeyValue for HostKv {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        if task_of(key).is_some() { self.tasks.get(key).await } else { self.kv.get(key).await }
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        if task_of(key).is_some() { self.tasks.put(key, value).await } else { self.kv.put(key, value).await }
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        if task_of(key).is_some() { self.tasks.delete(key).await } else { self.kv.delete(key).await }
    }

    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        if task_of(prefix).is_some() {
            return self.tasks.list(prefix, cursor, limit).await;
        }
        if spans_tasks(prefix) {
            return Err(KvError::Unsupported(format!(
                "listing `{prefix}` would span tasks: each task's keys live in its own `TaskStore` object"
            )));
        }
        self.kv.list(prefix, cursor, limit).await
    }

    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        if task_of(key).is_some() {
            self.tasks.put_if_absent(key, value).await
        } else {
            self.kv.put_if_absent(key, value).await
        }
    }

    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        if task_of(key).is_some() {
            self.tasks.compare_and_swap(key, expected, value).await
        } else {
            self.kv.compare_and_swap(key, expected, value).await
        }
    }

    async fn put_expiring(&self, key: &str, value: &[u8], ttl_secs: u64) -> Result<(), KvError> {
        if task_of(key).is_some() {
            self.tasks.put(key, value).await
        } else {
            self.kv.put_expiring(key, value, ttl_secs).await
        }
    }
}

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

    /// Workers KV removes the key itself after `ttl_secs` (its floor is 60 s).
    async fn put_expiring(&self, key: &str, value: &[u8], ttl_secs: u64) -> Result<(), KvError> {
        check_key(key)?;
        let put = self.store()?.put_bytes(key, value).map_err(backend)?;
        put.expiration_ttl(ttl_secs.max(60)).execute().await.map_err(backend)
    }

    /// Workers KV has no compare-and-set: refused, never imitated.
    async fn put_if_absent(&self, key: &str, _value: &[u8]) -> Result<bool, KvError> {
        Err(KvError::Unsupported(format!("Workers KV cannot insert `{key}` only if absent")))
    }

    async fn compare_and_swap(&self, key: &str, _expected: Option<&[u8]>, _value: &[u8]) -> Result<bool, KvError> {
        Err(KvError::Unsupported(format!("Workers KV cannot compare-and-swap `{key}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::{spans_tasks, task_of};

    #[test]
    fn task_keys_route_to_their_task() {
        assert_eq!(task_of("task/gh-1/log/0000000000"), Some("gh-1"));
        assert_eq!(task_of("task/gh-1/meta"), Some("gh-1"));
        assert_eq!(task_of("task/gh-1/"), Some("gh-1"));
        for other in ["task/gh-1", "task//log/0", "pending/gh-1/0000000001", "index/summary/gh-1", "tasks/x/y", ""] {
            assert_eq!(task_of(other), None, "{other}");
        }
    }

    #[test]
    fn listings_that_would_span_tasks_are_recognised() {
        for spanning in ["", "t", "task", "task/", "task/gh-"] {
            assert!(spans_tasks(spanning), "{spanning}");
        }
        for single in ["task/gh-1/", "task/gh-1/log/", "pending/", "index/created/", "audit/", "tasks/"] {
            assert!(!spans_tasks(single), "{single}");
        }
    }
}
