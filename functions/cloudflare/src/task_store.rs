//! The `TaskStore` Durable Object: the single writer of one task's keys
//! (`task/{id}/...`: its log, claims and meta), one object per task
//! (`id_from_name(task id)`), so everything the engine reads to decide what
//! happened is strongly consistent and every conditional write is atomic.
//!
//! The keys live in the object's SQLite storage, one table
//! `entries(key TEXT PRIMARY KEY, value BLOB)`. Every operation is one
//! synchronous SQL statement (`put_if_absent` is `INSERT … ON CONFLICT DO
//! NOTHING`, `compare_and_swap` an `UPDATE … WHERE value IS ?`), so no
//! await, and no other request, can fall between a check and its write;
//! the output gate holds the answer until the write is durable.
//!
//! # Protocol
//!
//! One operation per request: `POST` with a JSON body tagged by `op`,
//! values as standard base64 (the port's values are bytes):
//!
//! | request | reply |
//! |---|---|
//! | `{"op":"get","key":K}` | `{"reply":"value","value":B64\|null}` |
//! | `{"op":"put","key":K,"value":B64}` | `{"reply":"done"}` |
//! | `{"op":"delete","key":K}` | `{"reply":"done"}` |
//! | `{"op":"list","prefix":P,"cursor":C\|null,"limit":N}` | `{"reply":"page","keys":[…],"cursor":C\|null}` |
//! | `{"op":"putIfAbsent","key":K,"value":B64}` | `{"reply":"written","written":bool}` |
//! | `{"op":"compareAndSwap","key":K,"expected":B64\|null,"value":B64}` | `{"reply":"written","written":bool}` |
//! | `{"op":"getMany","keys":[K…]}` | `{"reply":"values","values":[B64\|null…]}` |
//! | `{"op":"transact","expect":[[K,B64\|null]…],"writes":[[K,B64\|null]…]}` | `{"reply":"written","written":bool}` |
//! | `{"op":"transact","read":[K…],"expect":…,"writes":…}` | `{"reply":"written","written":bool,"values":[B64\|null…]}` |
//!
//! `transact` checks every condition, then applies every write (`null`
//! removes the key) with no await between them: the object's storage
//! commits the writes of one synchronous stretch together (Durable
//! Objects' automatic write coalescing), and no other request runs in
//! between. With `read`, the values of those keys are read first, in the
//! same stretch, and answered whether or not the writes applied. A tick's
//! first request (its claim, with what it reads before deciding) is one
//! such request, and its commit (the claim marked committing, the log
//! entry, the checkpoint) another.
//!
//! A failure is `{"reply":"failed","message":…}` with status 400 (a
//! malformed operation) or 500 (storage). A list cursor is the last key of
//! the page; keys sort by their UTF-8 bytes, as in Workers KV.

use agent_zero_codecs::read_tag_first;
use agent_zero_ports::{Expect, KeyPage, KeyValue, KvError, Write, check_key};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize};
use worker::Env;

/// One operation on the object's keys.
#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub(crate) enum Op {
    Get {
        key: String,
    },
    Put {
        key: String,
        value: String,
    },
    Delete {
        key: String,
    },
    List {
        prefix: String,
        cursor: Option<String>,
        limit: usize,
    },
    PutIfAbsent {
        key: String,
        value: String,
    },
    CompareAndSwap {
        key: String,
        expected: Option<String>,
        value: String,
    },
    GetMany {
        keys: Vec<String>,
    },
    Transact {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        read: Vec<String>,
        expect: Vec<(String, Option<String>)>,
        writes: Vec<(String, Option<String>)>,
    },
}

/// The answer to one [`Op`].
#[derive(Debug, Serialize)]
#[serde(tag = "reply", rename_all = "camelCase")]
pub(crate) enum Reply {
    Value {
        value: Option<String>,
    },
    Values {
        values: Vec<Option<String>>,
    },
    Done,
    Page {
        keys: Vec<String>,
        cursor: Option<String>,
    },
    Written {
        written: bool,
        /// The values of a transaction's `read` keys, before its writes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        values: Option<Vec<Option<String>>>,
    },
    Failed {
        message: String,
    },
}

// Both are read tag first, straight from the JSON (`TagFirst` says why),
// through mirrors serde checks against the enums; an operation with a
// field it does not know is refused, as before.
impl<'de> Deserialize<'de> for Op {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "op", r#"{"op":"get","key":""}"#, |d| OpDe::deserialize(d))
    }
}

impl<'de> Deserialize<'de> for Reply {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_tag_first(deserializer, "reply", r#"{"reply":"done"}"#, |d| ReplyDe::deserialize(d))
    }
}

#[derive(Deserialize)]
#[serde(remote = "Op", rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
enum OpDe {
    Get {
        key: String,
    },
    Put {
        key: String,
        value: String,
    },
    Delete {
        key: String,
    },
    List {
        prefix: String,
        cursor: Option<String>,
        limit: usize,
    },
    PutIfAbsent {
        key: String,
        value: String,
    },
    CompareAndSwap {
        key: String,
        expected: Option<String>,
        value: String,
    },
    GetMany {
        keys: Vec<String>,
    },
    Transact {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        read: Vec<String>,
        expect: Vec<(String, Option<String>)>,
        writes: Vec<(String, Option<String>)>,
    },
}

#[derive(Deserialize)]
#[serde(remote = "Reply", rename_all = "camelCase")]
#[allow(dead_code)]
enum ReplyDe {
    Value {
        value: Option<String>,
    },
    Values {
        values: Vec<Option<String>>,
    },
    Done,
    Page {
        keys: Vec<String>,
        cursor: Option<String>,
    },
    Written {
        written: bool,
        /// The values of a transaction's `read` keys, before its writes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        values: Option<Vec<Option<String>>>,
    },
    Failed {
        message: String,
    },
}

/// The task whose object holds `key`: `{id}` of `task/{id}/…`.
pub(crate) fn task_of(key: &str) -> Option<&str> {
    let (id, _) = key.strip_prefix("task/")?.split_once('/')?;
    (!id.is_empty()).then_some(id)
}

/// The key-value port over the `TaskStore` objects: each key goes to the
/// object of its task. Only keys under `task/{id}/` belong here.
pub(crate) struct TaskStores {
    binding: &'static str,
    namespace: Result<worker::ObjectNamespace, String>,
}

impl TaskStores {
    pub(crate) fn bind(env: &Env, binding: &'static str) -> Self {
        let namespace = env.durable_object(binding).map_err(|e| format!("durable object binding `{binding}`: {e}"));
        Self { binding, namespace }
    }

    /// Sends `op` to the object of `task`.
    async fn call(&self, task: &str, op: &Op) -> Result<Reply, KvError> {
        let namespace = self.namespace.as_ref().map_err(|e| KvError::Unavailable(e.clone()))?;
        let failed = |e: &dyn std::fmt::Display| {
            KvError::Backend(format!("durable object `{}` of task `{task}`: {e}", self.binding))
        };
        let stub = namespace.id_from_name(task).and_then(|id| id.get_stub()).map_err(|e| failed(&e))?;
        let body = serde_json::to_string(op).map_err(|e| failed(&e))?;
        let request = crate::http_client::new_request("https://task-store/op", "POST", None, Some(&body.into()))
            .map_err(|e| failed(&e))?;
        let mut response = stub.fetch_with_request(request).await.map_err(|e| failed(&e))?;
        let bytes = response.bytes().await.map_err(|e| failed(&e))?;
        let reply: Reply = agent_zero_codecs::json::from_slice(&bytes)
            .map_err(|e| failed(&format!("unreadable reply (status {}): {e}", response.status_code())))?;
        match reply {
            Reply::Failed { message } => Err(failed(&message)),
            reply => Ok(reply),
        }
    }

    fn task(key: &str) -> Result<&str, KvError> {
        check_key(key)?;
        task_of(key).ok_or_else(|| KvError::InvalidKey { key: key.to_owned(), reason: "not under `task/{id}/`" })
    }

    async fn written(&self, task: &str, op: &Op) -> Result<bool, KvError> {
        match self.call(task, op).await? {
            Reply::Written { written, .. } => Ok(written),
            other => Err(unexpected(self.binding, &other)),
        }
    }

    async fn done(&self, task: &str, op: &Op) -> Result<(), KvError> {
        match self.call(task, op).await? {
            Reply::Done => Ok(()),
            other => Err(unexpected(self.binding, &other)),
        }
    }
}

/// A transaction's conditions or writes as the protocol carries them.
fn pairs(items: &[(&str, Option<&[u8]>)]) -> Result<Vec<(String, Option<String>)>, KvError> {
    items
        .iter()
        .map(|(key, value)| check_key(key).map(|()| ((*key).to_owned(), value.map(|v| STANDARD.encode(v)))))
        .collect()
}

/// Names the reply's kind only: a reply may carry a stored value.
fn unexpected(binding: &str, reply: &Reply) -> KvError {
    let kind = match reply {
        Reply::Value { .. } => "value",
        Reply::Values { .. } => "values",
        Reply::Done => "done",
        Reply::Page { .. } => "page",
        Reply::Written { .. } => "written",
        Reply::Failed { .. } => "failed",
    };
    KvError::Backend(format!("durable object `{binding}` answered out of protocol: a `{kind}` reply"))
}

impl TaskStores {
    /// The one task all of `keys` belong to, if they share one.
    pub(crate) fn one_task<'a>(keys: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
        let mut tasks = keys.into_iter().map(task_of);
        let first = tasks.next()??;
        tasks.all(|task| task == Some(first)).then_some(first)
    }

    fn value(&self, value: Option<String>) -> Result<Option<Vec<u8>>, KvError> {
        value
            .map(|value| {
                STANDARD.decode(value).map_err(|e| {
                    KvError::Backend(format!(
                        "durable object `{}` returned a value that is not base64: {e}",
                        self.binding
                    ))
                })
            })
            .transpose()
    }
}

impl KeyValue for TaskStores {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let task = Self::task(key)?;
        match self.call(task, &Op::Get { key: key.to_owned() }).await? {
            Reply::Value { value } => self.value(value),
            other => Err(unexpected(self.binding, &other)),
        }
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        let task = Self::task(key)?;
        self.done(task, &Op::Put { key: key.to_owned(), value: STANDARD.encode(value) }).await
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        let task = Self::task(key)?;
        self.done(task, &Op::Delete { key: key.to_owned() }).await
    }

    /// `prefix` must name one task (`task/{id}/…`): a listing never spans
    /// objects.
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        let task = task_of(prefix).ok_or_else(|| {
            KvError::Unsupported(format!("listing `{prefix}` would span tasks, whose keys live in separate objects"))
        })?;
        let op = Op::List { prefix: prefix.to_owned(), cursor: cursor.map(str::to_owned), limit };
        match self.call(task, &op).await? {
            Reply::Page { keys, cursor } => Ok(KeyPage { keys, cursor }),
            other => Err(unexpected(self.binding, &other)),
        }
    }

    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        let task = Self::task(key)?;
        self.written(task, &Op::PutIfAbsent { key: key.to_owned(), value: STANDARD.encode(value) }).await
    }

    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        let task = Self::task(key)?;
        let op = Op::CompareAndSwap {
            key: key.to_owned(),
            expected: expected.map(|v| STANDARD.encode(v)),
            value: STANDARD.encode(value),
        };
        self.written(task, &op).await
    }

    /// One request when every key is one task's (the engine's reads are);
    /// otherwise key by key.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        for key in keys {
            check_key(key)?;
        }
        let Some(task) = Self::one_task(keys.iter().copied()) else {
            let mut values = Vec::with_capacity(keys.len());
            for key in keys {
                values.push(self.get(key).await?);
            }
            return Ok(values);
        };
        let op = Op::GetMany { keys: keys.iter().map(|k| (*k).to_owned()).collect() };
        match self.call(task, &op).await? {
            Reply::Values { values } if values.len() == keys.len() => {
                values.into_iter().map(|value| self.value(value)).collect()
            }
            other => Err(unexpected(self.binding, &other)),
        }
    }

    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        keys.len() <= 1 || Self::one_task(keys.iter().copied()).is_some()
    }

    fn transacts(&self, keys: &[&str]) -> bool {
        Self::one_task(keys.iter().copied()).is_some()
    }

    /// One request to the object of the one task every key belongs to;
    /// keys of several tasks cannot be written atomically.
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        let keys = expect.iter().chain(writes).map(|(key, _)| *key);
        let Some(task) = Self::one_task(keys) else {
            return Err(KvError::Unsupported("a transaction's keys must all belong to one task".into()));
        };
        let op = Op::Transact { read: Vec::new(), expect: pairs(expect)?, writes: pairs(writes)? };
        self.written(task, &op).await
    }

    /// One request, as [`Self::transact`], when every key, read ones
    /// included, is one task's.
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        let keys = read.iter().copied().chain(expect.iter().chain(writes).map(|(key, _)| *key));
        let Some(task) = Self::one_task(keys) else {
            return Err(KvError::Unsupported("a transaction's keys must all belong to one task".into()));
        };
        let op = Op::Transact {
            read: read.iter().map(|key| check_key(key).map(|()| (*key).to_owned())).collect::<Result<_, _>>()?,
            expect: pairs(expect)?,
            writes: pairs(writes)?,
        };
        match self.call(task, &op).await? {
            Reply::Written { written, values: Some(values) } if values.len() == read.len() => {
                let values = values.into_iter().map(|value| self.value(value)).collect::<Result<_, _>>()?;
                Ok((values, written))
            }
            other => Err(unexpected(self.binding, &other)),
        }
    }
}
