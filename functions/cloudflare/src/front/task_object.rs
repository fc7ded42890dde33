//! The `TaskStore` object itself (the `front` worker's; the tick worker
//! reaches it through [`crate::task_store::TaskStores`]): each operation of
//! the protocol (see `task_store.rs`) as one synchronous SQL statement.

use agent_zero_ports::check_key;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::task_store::{Op, Reply};
use worker::{DurableObject, Env, Request, Response, SqlStorage, SqlStorageValue, State, durable_object};

/// The longest page a list returns (Workers KV's own bound).
const MAX_LIST: usize = 1000;

#[durable_object(fetch)]
pub struct TaskStore {
    state: State,
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskStore")
    }
}

impl DurableObject for TaskStore {
    fn new(state: State, _env: Env) -> Self {
        Self { state }
    }

    async fn fetch(&self, mut request: Request) -> worker::Result<Response> {
        let op: Op = match agent_zero_codecs::json::from_slice(&request.bytes().await?) {
            Ok(op) => op,
            Err(e) => return answer(&Reply::Failed { message: format!("invalid task-store operation: {e}") }, 400),
        };
        // From here on nothing is awaited: the operation is one SQL statement.
        match apply(&self.state.storage().sql(), op) {
            Ok(reply) => answer(&reply, 200),
            Err(Refusal::Invalid(message)) => answer(&Reply::Failed { message }, 400),
            Err(Refusal::Storage(message)) => answer(&Reply::Failed { message }, 500),
        }
    }
}

fn answer(reply: &Reply, status: u16) -> worker::Result<Response> {
    Ok(Response::from_json(reply)?.with_status(status))
}

/// Why an operation was not applied.
enum Refusal {
    /// The operation itself is wrong (a bad key or value encoding).
    Invalid(String),
    /// The object's storage failed.
    Storage(String),
}

fn storage(e: worker::Error) -> Refusal {
    Refusal::Storage(format!("task storage: {e}"))
}

fn key_ok(key: &str) -> Result<(), Refusal> {
    check_key(key).map_err(|e| Refusal::Invalid(e.to_string()))
}

fn decode(field: &str, value: &str) -> Result<Vec<u8>, Refusal> {
    STANDARD.decode(value).map_err(|e| Refusal::Invalid(format!("`{field}` is not base64: {e}")))
}

/// Creates the table before a write (a no-op once it exists).
fn create(sql: &SqlStorage) -> Result<(), Refusal> {
    sql.exec("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID", None)
        .map(|_| ())
        .map_err(storage)
}

/// Runs a read. An object never written has no table: nothing to read.
/// Reads never create it, so they keep working on storage that refuses
/// writes.
fn read(sql: &SqlStorage, query: &str, bindings: Vec<SqlStorageValue>) -> Result<Option<worker::SqlCursor>, Refusal> {
    match sql.exec(query, bindings) {
        Ok(cursor) => Ok(Some(cursor)),
        Err(e) if e.to_string().contains("no such table: entries") => Ok(None),
        Err(e) => Err(storage(e)),
    }
}

/// Applies `op` to the object's table with synchronous statements only.
fn apply(sql: &SqlStorage, op: Op) -> Result<Reply, Refusal> {
    let text = |s: &str| SqlStorageValue::String(s.to_owned());
    if !matches!(op, Op::Get { .. } | Op::List { .. } | Op::GetMany { .. }) {
        create(sql)?;
    }
    match op {
        Op::Get { key } => Ok(Reply::Value { value: value_of(sql, &key)? }),
        Op::Put { key, value } => {
            key_ok(&key)?;
            let value = decode("value", &value)?;
            sql.exec(
                "INSERT INTO entries (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                vec![text(&key), SqlStorageValue::Blob(value)],
            )
            .map_err(storage)?;
            Ok(Reply::Done)
        }
        Op::Delete { key } => {
            key_ok(&key)?;
            sql.exec("DELETE FROM entries WHERE key = ?", vec![text(&key)]).map_err(storage)?;
            Ok(Reply::Done)
        }
        Op::List { prefix, cursor, limit } => {
            let limit = limit.clamp(1, MAX_LIST);
            // One row past the page says whether there is more.
            let Some(rows) = read(
                sql,
                "SELECT key FROM entries WHERE key >= ?1 AND substr(key, 1, length(?1)) = ?1 AND key > ?2 \
                 ORDER BY key LIMIT ?3",
                vec![text(&prefix), text(cursor.as_deref().unwrap_or("")), SqlStorageValue::Integer(limit as i64 + 1)],
            )?
            else {
                return Ok(Reply::Page { keys: Vec::new(), cursor: None });
            };
            let mut keys = Vec::with_capacity(limit + 1);
            for row in rows.raw() {
                match row.map_err(storage)?.into_iter().next() {
                    Some(SqlStorageValue::String(key)) => keys.push(key),
                    other => {
                        return Err(Refusal::Storage(format!("task storage: a key that is not text: {other:?}")));
                    }
                }
            }
            let more = keys.len() > limit;
            keys.truncate(limit);
            let cursor = if more { keys.last().cloned() } else { None };
            Ok(Reply::Page { keys, cursor })
        }
        Op::PutIfAbsent { key, value } => {
            key_ok(&key)?;
            let value = decode("value", &value)?;
            let written = sql
                .exec(
                    "INSERT INTO entries (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING RETURNING key",
                    vec![text(&key), SqlStorageValue::Blob(value)],
                )
                .and_then(|cursor| returned(&cursor))
                .map_err(storage)?;
            Ok(Reply::Written { written, values: None })
        }
        Op::GetMany { keys } => {
            let values = keys.iter().map(|key| value_of(sql, key)).collect::<Result<_, _>>()?;
            Ok(Reply::Values { values })
        }
        Op::Transact { read, expect, writes } => {
            // Every key and value is checked before anything is read or written.
            for key in &read {
                key_ok(key)?;
            }
            for (key, value) in expect.iter().chain(&writes) {
                key_ok(key)?;
                if let Some(value) = value {
                    decode("value", value)?;
                }
            }
            let values = if read.is_empty() {
                None
            } else {
                Some(read.iter().map(|key| value_of(sql, key)).collect::<Result<Vec<_>, _>>()?)
            };
            for (key, expected) in expect {
                let value = value_of(sql, &key)?;
                let holds = match (value, expected) {
                    (None, None) => true,
                    (Some(value), Some(expected)) => decode("stored", &value)? == decode("expected", &expected)?,
                    _ => false,
                };
                if !holds {
                    return Ok(Reply::Written { written: false, values });
                }
            }
            // From here the statements only write, in order, with no await.
            for (key, value) in writes {
                match value {
                    Some(value) => apply(sql, Op::Put { key, value })?,
                    None => apply(sql, Op::Delete { key })?,
                };
            }
            Ok(Reply::Written { written: true, values })
        }
        Op::CompareAndSwap { key, expected: None, value } => apply(sql, Op::PutIfAbsent { key, value }),
        Op::CompareAndSwap { key, expected: Some(expected), value } => {
            key_ok(&key)?;
            let (expected, value) = (decode("expected", &expected)?, decode("value", &value)?);
            let written = sql
                .exec(
                    "UPDATE entries SET value = ?3 WHERE key = ?1 AND value IS ?2 RETURNING key",
                    vec![text(&key), SqlStorageValue::Blob(expected), SqlStorageValue::Blob(value)],
                )
                .and_then(|cursor| returned(&cursor))
                .map_err(storage)?;
            Ok(Reply::Written { written, values: None })
        }
    }
}

/// The value at `key`, base64, as a get answers it.
fn value_of(sql: &SqlStorage, key: &str) -> Result<Option<String>, Refusal> {
    key_ok(key)?;
    let text = SqlStorageValue::String(key.to_owned());
    let Some(cursor) = read(sql, "SELECT value FROM entries WHERE key = ?", vec![text])? else {
        return Ok(None);
    };
    match cursor.raw().next() {
        None => Ok(None),
        Some(row) => Ok(Some(STANDARD.encode(blob(row.map_err(storage)?)?))),
    }
}

/// Whether a `RETURNING` statement changed a row (reading every row runs
/// the statement to its end).
fn returned(cursor: &worker::SqlCursor) -> worker::Result<bool> {
    let mut changed = false;
    for row in cursor.raw() {
        row?;
        changed = true;
    }
    Ok(changed)
}

/// The bytes of a one-column row (an empty blob may come back as null).
fn blob(row: Vec<SqlStorageValue>) -> Result<Vec<u8>, Refusal> {
    match row.into_iter().next() {
        Some(SqlStorageValue::Blob(bytes)) => Ok(bytes),
        Some(SqlStorageValue::Null) => Ok(Vec::new()),
        Some(SqlStorageValue::String(text)) => Ok(text.into_bytes()),
        other => Err(Refusal::Storage(format!("task storage: a value that is not bytes: {other:?}"))),
    }
}
