//! The worker's key-value port: [`HostKv`] routes each key to where it
//! belongs. Keys under `task/{id}/` (the task log, claims and meta: what
//! decides "has this happened") go to that task's `TaskStore` Durable
//! Object, strongly consistent and atomic; every other key (the listing
//! index, `pending/` markers the sweep lists across tasks, delivery
//! records, audit, caches, health probes) to the Workers KV namespace
//! [`CloudflareKv`], which tolerates eventual consistency.
//!
//! Each side is bound on its first use in an invocation, so a request that
//! touches only Workers KV (a webhook) never looks up the Durable Object
//! namespace. [`CloudflareKv`] calls the namespace's own methods (`get`
//! with `"arrayBuffer"`, `put` with `expirationTtl`): a method lookup, one
//! call and one awaited promise per operation, with no options object built
//! through serde field by field.

use std::cell::OnceCell;

use agent_zero_ports::{Expect, KeyPage, KeyValue, KvError, Write, check_key};
use serde::Deserialize;
use worker::Env;
use worker::js_sys::{self, Function, Object, Reflect, Uint8Array};
use worker::wasm_bindgen::{JsCast as _, JsValue};
use worker::wasm_bindgen_futures::JsFuture;

use crate::task_store::{TaskStores, task_of};

/// The one port the app and the engine see: task keys to their Durable
/// Object, the rest to Workers KV. Each operation goes to exactly one of
/// them.
pub(crate) struct HostKv {
    env: Env,
    kv_binding: &'static str,
    tasks_binding: &'static str,
    kv: OnceCell<CloudflareKv>,
    tasks: OnceCell<TaskStores>,
}

impl HostKv {
    pub(crate) fn bind(env: &Env, kv_binding: &'static str, tasks_binding: &'static str) -> Self {
        Self { env: env.clone(), kv_binding, tasks_binding, kv: OnceCell::new(), tasks: OnceCell::new() }
    }

    fn kv(&self) -> &CloudflareKv {
        self.kv.get_or_init(|| CloudflareKv::bind(&self.env, self.kv_binding))
    }

    fn tasks(&self) -> &TaskStores {
        self.tasks.get_or_init(|| TaskStores::bind(&self.env, self.tasks_binding))
    }
}

/// A list `prefix` that matches keys of more than one task (`task/`,
/// `task/ab`, or a prefix of `task/` itself): no single store can answer it.
fn spans_tasks(prefix: &str) -> bool {
    task_of(prefix).is_none() && (prefix.starts_with("task/") || "task/".starts_with(prefix))
}

impl KeyValue for HostKv {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        if task_of(key).is_some() { self.tasks().get(key).await } else { self.kv().get(key).await }
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        if task_of(key).is_some() { self.tasks().put(key, value).await } else { self.kv().put(key, value).await }
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        if task_of(key).is_some() { self.tasks().delete(key).await } else { self.kv().delete(key).await }
    }

    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        if task_of(prefix).is_some() {
            return self.tasks().list(prefix, cursor, limit).await;
        }
        if spans_tasks(prefix) {
            return Err(KvError::Unsupported(format!(
                "listing `{prefix}` would span tasks: each task's keys live in its own `TaskStore` object"
            )));
        }
        self.kv().list(prefix, cursor, limit).await
    }

    async fn probe_atomicity(&self) -> Result<String, String> {
        Ok("each task's records live in its own Durable Object (SQLite, one request at a time): inserts and compare-and-swaps are atomic; Workers KV, eventually consistent, holds no record that decides".into())
    }

    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        if task_of(key).is_some() {
            self.tasks().put_if_absent(key, value).await
        } else {
            self.kv().put_if_absent(key, value).await
        }
    }

    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        if task_of(key).is_some() {
            self.tasks().compare_and_swap(key, expected, value).await
        } else {
            self.kv().compare_and_swap(key, expected, value).await
        }
    }

    async fn put_expiring(&self, key: &str, value: &[u8], ttl_secs: u64) -> Result<(), KvError> {
        if task_of(key).is_some() {
            self.tasks().put(key, value).await
        } else {
            self.kv().put_expiring(key, value, ttl_secs).await
        }
    }

    /// Workers KV keys expire by themselves; task keys (Durable Objects) do not.
    fn expires_on_its_own(&self, key: &str) -> bool {
        task_of(key).is_none()
    }

    /// One task's keys in one request to its object; anything else key by key.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        if TaskStores::one_task(keys.iter().copied()).is_some() {
            return self.tasks().get_many(keys).await;
        }
        let mut values = Vec::with_capacity(keys.len());
        for key in keys {
            values.push(self.get(key).await?);
        }
        Ok(values)
    }

    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        keys.len() <= 1 || TaskStores::one_task(keys.iter().copied()).is_some()
    }

    fn transacts(&self, keys: &[&str]) -> bool {
        TaskStores::one_task(keys.iter().copied()).is_some()
    }

    /// Only within one task's object: Workers KV has no transaction.
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        self.tasks().transact(expect, writes).await
    }

    /// Only within one task's object, as [`Self::transact`].
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        self.tasks().read_and_transact(read, expect, writes).await
    }
}

/// A KV namespace, or the reason it is not bound (every operation then
/// fails with [`KvError::Unavailable`], which health reports).
pub(crate) struct CloudflareKv {
    namespace: Result<Object, String>,
}

impl CloudflareKv {
    pub(crate) fn bind(env: &Env, binding: &str) -> Self {
        let namespace = match Reflect::get(env, &JsValue::from_str(binding)) {
            Ok(value) if value.is_object() => Ok(value.unchecked_into()),
            _ => Err(format!("binding `{binding}`: not a KV namespace on this worker")),
        };
        Self { namespace }
    }

    /// Calls the namespace's method `name` and awaits its promise.
    async fn call(&self, name: &str, args: &[&JsValue]) -> Result<JsValue, KvError> {
        let namespace = self.namespace.as_ref().map_err(|e| KvError::Unavailable(e.clone()))?;
        let method: Function = Reflect::get(namespace, &JsValue::from_str(name))
            .ok()
            .and_then(|m| m.dyn_into().ok())
            .ok_or_else(|| KvError::Backend(format!("the KV namespace has no `{name}` method")))?;
        let promise = match args {
            [a] => method.call1(namespace, a),
            [a, b] => method.call2(namespace, a, b),
            [a, b, c] => method.call3(namespace, a, b, c),
            _ => method.call0(namespace),
        }
        .map_err(|e| backend(name, &e))?;
        JsFuture::from(js_sys::Promise::from(promise)).await.map_err(|e| backend(name, &e))
    }
}

fn backend(operation: &str, error: &JsValue) -> KvError {
    let message = error
        .as_string()
        .or_else(|| error.dyn_ref::<js_sys::Error>().map(|e| e.message().into()))
        .unwrap_or_else(|| format!("{error:?}"));
    KvError::Backend(format!("KV {operation}: {message}"))
}

/// `{keys: [{name}], list_complete, cursor}`, what `list()` resolves to.
#[derive(Deserialize)]
struct ListResult {
    keys: Vec<ListedKey>,
    #[serde(default)]
    list_complete: bool,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct ListedKey {
    name: String,
}

impl KeyValue for CloudflareKv {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        check_key(key)?;
        let value = self.call("get", &[&JsValue::from_str(key), &JsValue::from_str("arrayBuffer")]).await?;
        if value.is_null() || value.is_undefined() {
            return Ok(None);
        }
        Ok(Some(Uint8Array::new(&value).to_vec()))
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        check_key(key)?;
        self.call("put", &[&JsValue::from_str(key), &Uint8Array::from(value)]).await.map(drop)
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        check_key(key)?;
        self.call("delete", &[&JsValue::from_str(key)]).await.map(drop)
    }

    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        let mut options = serde_json::json!({ "prefix": prefix, "limit": limit.clamp(1, 1000) });
        if let Some(cursor) = cursor {
            options["cursor"] = cursor.into();
        }
        let options = js_sys::JSON::parse(&options.to_string()).map_err(|e| backend("list", &e))?;
        let page = self.call("list", &[&options]).await?;
        let text: String = js_sys::JSON::stringify(&page).map_err(|e| backend("list", &e))?.into();
        let page: ListResult = agent_zero_codecs::json::from_str(&text)
            .map_err(|e| KvError::Backend(format!("KV list: unreadable page: {e}")))?;
        Ok(KeyPage {
            keys: page.keys.into_iter().map(|k| k.name).collect(),
            cursor: if page.list_complete { None } else { page.cursor },
        })
    }

    /// Workers KV removes the key itself after `ttl_secs` (its floor is 60 s).
    async fn put_expiring(&self, key: &str, value: &[u8], ttl_secs: u64) -> Result<(), KvError> {
        check_key(key)?;
        let options = Object::new();
        Reflect::set(&options, &JsValue::from_str("expirationTtl"), &JsValue::from_f64(ttl_secs.max(60) as f64))
            .map_err(|e| backend("put", &e))?;
        self.call("put", &[&JsValue::from_str(key), &Uint8Array::from(value), &options]).await.map(drop)
    }

    fn expires_on_its_own(&self, _key: &str) -> bool {
        true
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
