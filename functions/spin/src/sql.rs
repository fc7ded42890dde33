//! The key-value port over Spin's SQLite database (`spin:sqlite`), the
//! store a Spin deployment uses unless `agent_zero_store` says `key-value`
//! (docs/spin-stores.md, "The SQLite store").
//!
//! Every operation is one SQL statement, and SQLite runs each statement
//! atomically on every database Spin serves (its in-process database, a
//! file behind one connection per `open`; libSQL/Turso on Fermyon Cloud,
//! one statement per request). So, unlike Spin's key-value interface, a
//! creation is one `INSERT … ON CONFLICT DO NOTHING`, and the port's
//! multi-key transaction ([`KeyValue::read_and_transact`]) is one
//! statement too: a tick reads and claims in one request and commits in
//! another, as it does on a task's Durable Object (issue 42).
//!
//! One table holds every key. Besides `key` and `value`, two columns carry
//! a transaction's answer out of its one statement (`prev`, the value
//! before it; `ok`, whether its conditions held) through `RETURNING`, and
//! are cleared by a trigger in the same statement; a row whose value is
//! `NULL` (a key removed or read while absent) is deleted by a trigger, so
//! no row is ever absent-valued and `list` sees only keys that exist.

use agent_zero_ports::{Expect, KeyPage, KeyValue, KvError, Write, check_key};
use spin_sdk::sqlite3::Value;

/// The table, named for the product so it can share a database.
const TABLE: &str = "agent_zero_kv";

/// The schema, created on first use (`CREATE … IF NOT EXISTS`, so racing
/// first uses agree). Spin prepares one statement per `execute`.
const SCHEMA: [&str; 5] = [
    "CREATE TABLE IF NOT EXISTS agent_zero_kv (key TEXT PRIMARY KEY NOT NULL, value BLOB, prev BLOB, ok INTEGER) WITHOUT ROWID",
    "CREATE TRIGGER IF NOT EXISTS agent_zero_kv_absent_on_insert AFTER INSERT ON agent_zero_kv WHEN NEW.value IS NULL \
     BEGIN DELETE FROM agent_zero_kv WHERE key = NEW.key; END",
    "CREATE TRIGGER IF NOT EXISTS agent_zero_kv_absent_on_update AFTER UPDATE ON agent_zero_kv WHEN NEW.value IS NULL \
     BEGIN DELETE FROM agent_zero_kv WHERE key = NEW.key; END",
    "CREATE TRIGGER IF NOT EXISTS agent_zero_kv_scrub_on_insert AFTER INSERT ON agent_zero_kv \
     WHEN NEW.value IS NOT NULL AND (NEW.prev IS NOT NULL OR NEW.ok IS NOT NULL) \
     BEGIN UPDATE agent_zero_kv SET prev = NULL, ok = NULL WHERE key = NEW.key; END",
    "CREATE TRIGGER IF NOT EXISTS agent_zero_kv_scrub_on_update AFTER UPDATE ON agent_zero_kv \
     WHEN NEW.value IS NOT NULL AND (NEW.prev IS NOT NULL OR NEW.ok IS NOT NULL) \
     BEGIN UPDATE agent_zero_kv SET prev = NULL, ok = NULL WHERE key = NEW.key; END",
];

/// A database that runs one statement at a time: Spin's `spin:sqlite`
/// connection in the component, rusqlite in the tests.
pub(crate) trait Database {
    /// Runs `statement` with `params`; the rows it returned.
    fn execute(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String>;
}

/// Spin's `default` SQLite database (spin.toml `sqlite_databases`).
pub(crate) struct SpinDatabase(Result<spin_sdk::sqlite3::Connection, String>);

impl SpinDatabase {
    pub(crate) fn open_default() -> Self {
        Self(spin_sdk::sqlite3::Connection::open_default().map_err(|e| {
            match e {
            spin_sdk::sqlite3::Error::AccessDenied => {
                "SQLite database `default`: access denied (add it to the component's `sqlite_databases` in spin.toml)"
                    .to_owned()
            }
            e => format!("SQLite database `default`: {e}"),
        }
        }))
    }
}

impl Database for SpinDatabase {
    fn execute(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let connection = self.0.as_ref().map_err(Clone::clone)?;
        let answer = connection.execute(statement, params).map_err(|e| e.to_string())?;
        Ok(answer.rows.into_iter().map(|row| row.values).collect())
    }
}

/// The key-value port over one table of `D`.
pub(crate) struct SqlKv<D> {
    db: D,
}

impl<D: Database> SqlKv<D> {
    pub(crate) fn new(db: D) -> Self {
        Self { db }
    }

    /// Runs `statement`, creating the schema first when the table is
    /// missing (a new database).
    fn run(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, KvError> {
        match self.db.execute(statement, params) {
            Err(e) if e.contains("no such table") => {
                for create in SCHEMA {
                    self.db.execute(create, &[]).map_err(|e| backend("creating the key-value table", &e))?;
                }
                self.db.execute(statement, params).map_err(|e| backend("after creating the table", &e))
            }
            Err(e) if e.contains("access denied") => Err(KvError::Unavailable(e)),
            answer => answer.map_err(|e| backend("", &e)),
        }
    }
}

fn backend(doing: &str, e: &str) -> KvError {
    KvError::Backend(if doing.is_empty() { format!("SQLite: {e}") } else { format!("SQLite, {doing}: {e}") })
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn blob(value: Option<&[u8]>) -> Value {
    value.map_or(Value::Null, |v| Value::Blob(v.to_vec()))
}

/// A returned value as bytes: `NULL` is absent.
fn bytes(value: Value) -> Result<Option<Vec<u8>>, KvError> {
    match value {
        Value::Null => Ok(None),
        Value::Blob(bytes) => Ok(Some(bytes)),
        Value::Text(text) => Ok(Some(text.into_bytes())),
        other => Err(KvError::Backend(format!("SQLite answered {other:?} where a value was expected"))),
    }
}

fn key_of(value: &Value) -> Result<&str, KvError> {
    match value {
        Value::Text(key) => Ok(key),
        other => Err(KvError::Backend(format!("SQLite answered {other:?} where a key was expected"))),
    }
}

/// `?1, ?2, …` from `from`, `n` of them.
fn placeholders(from: usize, n: usize) -> String {
    (from..from + n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
}

/// A string above every string that starts with `prefix` (its last
/// character raised by one), or `None` when there is none to find (an
/// empty prefix): the listing's upper bound. SQLite compares text
/// bytewise, as UTF-8 orders code points.
fn upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = (last as u32 + 1..=0x10FFFF).find_map(char::from_u32) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

impl<D: Database> KeyValue for SqlKv<D> {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        check_key(key)?;
        let rows = self.run(&format!("SELECT value FROM {TABLE} WHERE key = ?1"), &[text(key)])?;
        match rows.into_iter().next().and_then(|row| row.into_iter().next()) {
            Some(value) => bytes(value),
            None => Ok(None),
        }
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.put_many(&[(key, value)]).await
    }

    async fn delete(&self, key: &str) -> Result<(), KvError> {
        check_key(key)?;
        self.run(&format!("DELETE FROM {TABLE} WHERE key = ?1"), &[text(key)])?;
        Ok(())
    }

    /// One range scan of the table's primary key: from `prefix` (or past
    /// `cursor`) up to [`upper_bound`], one row more than a page to tell
    /// whether another follows.
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        let limit = limit.max(1);
        let (from, lower) = match cursor {
            Some(cursor) if cursor >= prefix => (cursor, ">"),
            _ => (prefix, ">="),
        };
        let rows = self.run(
            &format!("SELECT key FROM {TABLE} WHERE key {lower} ?1 AND (?2 IS NULL OR key < ?2) ORDER BY key LIMIT ?3"),
            &[
                text(from),
                upper_bound(prefix).map_or(Value::Null, Value::Text),
                Value::Integer(i64::try_from(limit + 1).unwrap_or(i64::MAX)),
            ],
        )?;
        let mut keys = Vec::with_capacity(rows.len());
        for row in &rows {
            let key = key_of(row.first().unwrap_or(&Value::Null))?;
            if key.starts_with(prefix) {
                keys.push(key.to_owned());
            }
        }
        let more = keys.len() > limit;
        keys.truncate(limit);
        let cursor = if more { keys.last().cloned() } else { None };
        Ok(KeyPage { keys, cursor })
    }

    /// `INSERT … ON CONFLICT DO NOTHING`, which returns the row only when
    /// it inserted it.
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        check_key(key)?;
        let rows = self.run(
            &format!("INSERT INTO {TABLE} (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING RETURNING key"),
            &[text(key), blob(Some(value))],
        )?;
        Ok(!rows.is_empty())
    }

    /// `UPDATE … WHERE value = expected`, which returns the row only when
    /// it matched; from absent, [`KeyValue::put_if_absent`].
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        check_key(key)?;
        let Some(expected) = expected else { return self.put_if_absent(key, value).await };
        let rows = self.run(
            &format!("UPDATE {TABLE} SET value = ?3 WHERE key = ?1 AND value = ?2 RETURNING key"),
            &[text(key), blob(Some(expected)), blob(Some(value))],
        )?;
        Ok(!rows.is_empty())
    }

    /// One `SELECT … WHERE key IN (…)`.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        for key in keys {
            check_key(key)?;
        }
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let params: Vec<Value> = keys.iter().map(|key| text(key)).collect();
        let rows = self
            .run(&format!("SELECT key, value FROM {TABLE} WHERE key IN ({})", placeholders(1, keys.len())), &params)?;
        let mut values = vec![None; keys.len()];
        for row in rows {
            let mut row = row.into_iter();
            let (key, value) = (row.next().unwrap_or(Value::Null), row.next().unwrap_or(Value::Null));
            let key = key_of(&key)?.to_owned();
            let value = bytes(value)?;
            for (place, asked) in keys.iter().enumerate() {
                if *asked == key {
                    values[place].clone_from(&value);
                }
            }
        }
        Ok(values)
    }

    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        !keys.is_empty()
    }

    /// One multi-row upsert: every write or none.
    async fn put_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        for (key, _) in pairs {
            check_key(key)?;
        }
        if pairs.is_empty() {
            return Ok(());
        }
        let rows: Vec<String> = (0..pairs.len()).map(|i| format!("(?{}, ?{})", 2 * i + 1, 2 * i + 2)).collect();
        let params: Vec<Value> = pairs.iter().flat_map(|(key, value)| [text(key), blob(Some(value))]).collect();
        self.run(
            &format!(
                "INSERT INTO {TABLE} (key, value) VALUES {} ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                rows.join(", ")
            ),
            &params,
        )?;
        Ok(())
    }

    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        !keys.is_empty()
    }

    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        Ok(self.read_and_transact(&[], expect, writes).await?.1)
    }

    fn transacts(&self, keys: &[&str]) -> bool {
        let _ = keys;
        true
    }

    /// One statement ([`transaction`]): the values of `read` before it,
    /// and whether its conditions held and its writes applied.
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        for key in read.iter().chain(expect.iter().map(|(key, _)| key)).chain(writes.iter().map(|(key, _)| key)) {
            check_key(key)?;
        }
        let (statement, params, rows_of) = transaction(read, expect, writes);
        let Some(statement) = statement else {
            // Nothing to touch: the conditions alone, read in one query.
            let holds = self.run(&conditions_query(expect), &params)?;
            let held = matches!(holds.first().and_then(|row| row.first()), Some(Value::Integer(1)));
            return Ok((Vec::new(), held));
        };
        let answer = self.run(&statement, &params)?;
        let mut before: Vec<(String, Option<Vec<u8>>)> = Vec::with_capacity(answer.len());
        let mut held = None;
        for row in answer {
            let mut row = row.into_iter();
            let (key, prev, ok) = (
                row.next().unwrap_or(Value::Null),
                row.next().unwrap_or(Value::Null),
                row.next().unwrap_or(Value::Null),
            );
            before.push((key_of(&key)?.to_owned(), bytes(prev)?));
            held = Some(matches!(ok, Value::Integer(1)));
        }
        if before.len() != rows_of {
            return Err(KvError::Backend(format!(
                "SQLite answered {} rows to a transaction over {rows_of} keys",
                before.len()
            )));
        }
        let values =
            read.iter().map(|key| before.iter().find(|(k, _)| k == key).and_then(|(_, value)| value.clone())).collect();
        Ok((values, held.unwrap_or(false)))
    }

    /// Every statement is atomic on every database Spin serves.
    async fn probe_atomicity(&self) -> Result<String, String> {
        self.run(&format!("SELECT count(*) FROM {TABLE} WHERE key = ''"), &[]).map_err(|e| e.to_string())?;
        Ok("Spin's SQLite database: each creation, compare-and-swap and transaction is one SQL statement, atomic"
            .into())
    }
}

/// `(SELECT value FROM t WHERE key = ?a) IS ?b AND …` over `expect`, its
/// parameters numbered from `from`; `1` when there is none.
fn conditions(expect: &[Expect<'_>], from: usize) -> (String, Vec<Value>) {
    if expect.is_empty() {
        return ("1".to_owned(), Vec::new());
    }
    let mut terms = Vec::with_capacity(expect.len());
    let mut params = Vec::with_capacity(2 * expect.len());
    for (i, (key, value)) in expect.iter().enumerate() {
        let at = from + 2 * i;
        terms.push(format!("(SELECT value FROM {TABLE} WHERE key = ?{at}) IS ?{}", at + 1));
        params.extend([text(key), blob(*value)]);
    }
    (terms.join(" AND "), params)
}

fn conditions_query(expect: &[Expect<'_>]) -> String {
    format!("SELECT ({})", conditions(expect, 1).0)
}

/// The one statement of a read-and-transact, its parameters, and how many
/// rows it answers (one per key read or written).
///
/// Every key read or written is upserted once: a written key takes its
/// new value when the conditions hold and keeps its own otherwise; a key
/// only read keeps its own. Each row records the value it had (`prev`) and
/// whether the conditions held (`ok`), which `RETURNING` answers before
/// the triggers clear them (and delete the rows left valueless: a key read
/// while absent, a key removed). The conditions are one `MATERIALIZED`
/// common table expression, evaluated once, before any row is written, and
/// SQLite computes an `INSERT`'s `SELECT` from its own table before it
/// writes any row; the rows are distinct keys, so no row's old value is
/// another's new one.
fn transaction(read: &[&str], expect: &[Expect<'_>], writes: &[Write<'_>]) -> (Option<String>, Vec<Value>, usize) {
    let (held, mut params) = conditions(expect, 1);
    // (key, Some(new value or None to remove)) for a write, None for a read.
    let mut rows: Vec<(&str, Option<Option<&[u8]>>)> = Vec::new();
    for (key, value) in writes {
        match rows.iter_mut().find(|(k, _)| k == key) {
            Some(row) => row.1 = Some(*value),
            None => rows.push((key, Some(*value))),
        }
    }
    for key in read {
        if !rows.iter().any(|(k, _)| k == key) {
            rows.push((key, None));
        }
    }
    if rows.is_empty() {
        return (None, params, 0);
    }
    let mut values = Vec::with_capacity(rows.len());
    for (key, write) in &rows {
        let at = params.len() + 1;
        values.push(format!("(?{at}, ?{}, ?{})", at + 1, at + 2));
        params.extend([text(key), blob(write.flatten()), Value::Integer(i64::from(write.is_some()))]);
    }
    let statement = format!(
        "WITH held (ok) AS MATERIALIZED (SELECT ({held})), \
         touched (k, v, w) AS (VALUES {}) \
         INSERT INTO {TABLE} (key, value, prev, ok) \
         SELECT k, CASE WHEN w AND (SELECT ok FROM held) THEN v ELSE (SELECT value FROM {TABLE} WHERE key = k) END, \
         (SELECT value FROM {TABLE} WHERE key = k), (SELECT ok FROM held) FROM touched WHERE true \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, prev = excluded.prev, ok = excluded.ok \
         RETURNING key, prev, ok",
        values.join(", ")
    );
    (Some(statement), params, rows.len())
}

#[cfg(test)]
mod tests {
    //! The statements against SQLite itself (rusqlite, bundled), with one
    //! connection per store as Spin opens one per `open`.

    use std::sync::{Arc, Barrier};

    use agent_zero_ports::{KeyValue, block_on};
    use spin_sdk::sqlite3::Value;

    use super::{Database, SqlKv, upper_bound};

    struct Rusqlite(std::sync::Mutex<rusqlite::Connection>);

    impl Rusqlite {
        fn open(path: &std::path::Path) -> Self {
            Self(std::sync::Mutex::new(rusqlite::Connection::open(path).unwrap()))
        }
    }

    impl Database for Rusqlite {
        fn execute(&self, statement: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
            use rusqlite::types::{Value as V, ValueRef};
            let connection = self.0.lock().unwrap();
            let mut prepared = connection.prepare(statement).map_err(|e| e.to_string())?;
            let params: Vec<V> = params
                .iter()
                .map(|p| match p {
                    Value::Integer(i) => V::Integer(*i),
                    Value::Real(r) => V::Real(*r),
                    Value::Text(t) => V::Text(t.clone()),
                    Value::Blob(b) => V::Blob(b.clone()),
                    Value::Null => V::Null,
                })
                .collect();
            let columns = prepared.column_count();
            let mut rows = prepared.query(rusqlite::params_from_iter(params)).map_err(|e| e.to_string())?;
            let mut answer = Vec::new();
            while let Some(row) = rows.next().map_err(|e| e.to_string())? {
                answer.push(
                    (0..columns)
                        .map(|i| match row.get_ref(i).unwrap() {
                            ValueRef::Null => Value::Null,
                            ValueRef::Integer(i) => Value::Integer(i),
                            ValueRef::Real(r) => Value::Real(r),
                            ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                        })
                        .collect(),
                );
            }
            Ok(answer)
        }
    }

    fn database() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sqlite_db.db");
        (dir, path)
    }

    /// A stored row: key, value, and the two scratch columns.
    type Row = (String, Option<Vec<u8>>, Option<Vec<u8>>, Option<i64>);

    fn rows(path: &std::path::Path) -> Vec<Row> {
        let connection = rusqlite::Connection::open(path).unwrap();
        let mut statement = connection.prepare("SELECT key, value, prev, ok FROM agent_zero_kv ORDER BY key").unwrap();
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn reads_writes_creations_and_swaps_on_a_new_database() {
        let (_dir, path) = database();
        let kv = SqlKv::new(Rusqlite::open(&path));
        block_on(async {
            assert_eq!(kv.get("task/a").await.unwrap(), None, "a new database reads as empty");
            assert!(kv.put_if_absent("task/a", b"1").await.unwrap());
            assert!(!kv.put_if_absent("task/a", b"2").await.unwrap(), "a second creation is refused");
            assert_eq!(kv.get("task/a").await.unwrap().as_deref(), Some(&b"1"[..]));
            assert!(!kv.compare_and_swap("task/a", Some(b"0"), b"3").await.unwrap(), "a stale base is refused");
            assert!(kv.compare_and_swap("task/a", Some(b"1"), b"3").await.unwrap());
            assert!(kv.compare_and_swap("task/b", None, b"x").await.unwrap(), "from absent creates");
            assert!(!kv.compare_and_swap("task/b", None, b"y").await.unwrap(), "from absent is a creation");
            kv.put_many(&[("task/c", b"c"), ("task/d", b"d")]).await.unwrap();
            kv.delete("task/d").await.unwrap();
            kv.delete("task/missing").await.unwrap();
            let got = kv.get_many(&["task/c", "task/d", "task/a", "task/c"]).await.unwrap();
            assert_eq!(got, [Some(b"c".to_vec()), None, Some(b"3".to_vec()), Some(b"c".to_vec())]);
        });
        let keys: Vec<String> = rows(&path).into_iter().map(|row| row.0).collect();
        assert_eq!(keys, ["task/a", "task/b", "task/c"]);
    }

    #[test]
    fn a_listing_pages_through_one_prefix_only() {
        let (_dir, path) = database();
        let kv = SqlKv::new(Rusqlite::open(&path));
        block_on(async {
            for key in ["a/1", "a/2", "a/3", "a/", "a0", "b/1", "a"] {
                kv.put(key, b"x").await.unwrap();
            }
            let first = kv.list("a/", None, 2).await.unwrap();
            assert_eq!(first.keys, ["a/", "a/1"]);
            let second = kv.list("a/", first.cursor.as_deref(), 2).await.unwrap();
            assert_eq!(second.keys, ["a/2", "a/3"]);
            assert_eq!(second.cursor, None, "the last page has no cursor");
            assert_eq!(kv.list("", None, 100).await.unwrap().keys.len(), 7);
            assert!(kv.list("c/", None, 10).await.unwrap().keys.is_empty());
        });
        assert_eq!(upper_bound("a/").as_deref(), Some("a0"));
        assert_eq!(upper_bound(""), None);
    }

    #[test]
    fn a_transaction_reads_the_values_before_it_and_writes_only_when_its_conditions_hold() {
        let (_dir, path) = database();
        let kv = SqlKv::new(Rusqlite::open(&path));
        block_on(async {
            kv.put("meta", b"m1").await.unwrap();
            kv.put("gone", b"g").await.unwrap();
            // Claim seq 1 when its entry and claim are absent, reading both and the checkpoint.
            let (values, held) = kv
                .read_and_transact(
                    &["log/1", "meta", "claim/1"],
                    &[("log/1", None), ("claim/1", None)],
                    &[("claim/1", Some(b"mine")), ("gone", None)],
                )
                .await
                .unwrap();
            assert!(held);
            assert_eq!(values, [None, Some(b"m1".to_vec()), None], "the values before the writes");
            assert_eq!(kv.get("claim/1").await.unwrap().as_deref(), Some(&b"mine"[..]));
            assert_eq!(kv.get("gone").await.unwrap(), None, "a write of None removes the key");

            // A second claimant reads the first one's claim and writes nothing.
            let (values, held) = kv
                .read_and_transact(&["log/1", "meta", "claim/1"], &[("claim/1", None)], &[("claim/1", Some(b"theirs"))])
                .await
                .unwrap();
            assert!(!held);
            assert_eq!(values, [None, Some(b"m1".to_vec()), Some(b"mine".to_vec())]);
            assert_eq!(kv.get("claim/1").await.unwrap().as_deref(), Some(&b"mine"[..]));

            // The commit: our claim still holds, the seq is free.
            let committed = kv
                .transact(
                    &[("log/1", None), ("claim/1", Some(b"mine"))],
                    &[("claim/1", Some(b"committing")), ("log/1", Some(b"entry")), ("meta", Some(b"m2"))],
                )
                .await
                .unwrap();
            assert!(committed);
            let again = kv.transact(&[("log/1", None)], &[("log/1", Some(b"other"))]).await.unwrap();
            assert!(!again, "a committed seq is not committed twice");
            assert_eq!(kv.get("log/1").await.unwrap().as_deref(), Some(&b"entry"[..]));
            assert!(kv.transact(&[("meta", Some(b"m2"))], &[]).await.unwrap(), "conditions alone");
            assert!(!kv.transact(&[("meta", Some(b"m1"))], &[]).await.unwrap());
        });
        // No row keeps a transaction's scratch columns, and no row is valueless.
        for (key, value, prev, ok) in rows(&path) {
            assert!(value.is_some() && prev.is_none() && ok.is_none(), "row {key}: {value:?} {prev:?} {ok:?}");
        }
    }

    #[test]
    fn of_racing_creations_and_claims_from_separate_connections_exactly_one_wins() {
        let (_dir, path) = database();
        block_on(SqlKv::new(Rusqlite::open(&path)).put("seed", b"0")).unwrap();
        const RACERS: usize = 6;
        let barrier = Arc::new(Barrier::new(RACERS));
        let handles: Vec<_> = (0..RACERS)
            .map(|i| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let kv = SqlKv::new(Rusqlite::open(&path));
                    let me = format!("racer {i}");
                    barrier.wait();
                    let created = block_on(kv.put_if_absent("decision", me.as_bytes())).unwrap();
                    barrier.wait();
                    let (_, claimed) = block_on(kv.read_and_transact(
                        &["claim"],
                        &[("claim", None)],
                        &[("claim", Some(me.as_bytes()))],
                    ))
                    .unwrap();
                    (created, claimed)
                })
            })
            .collect();
        let outcomes: Vec<(bool, bool)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(outcomes.iter().filter(|o| o.0).count(), 1, "one creation wins: {outcomes:?}");
        assert_eq!(outcomes.iter().filter(|o| o.1).count(), 1, "one claim wins: {outcomes:?}");
    }
}
