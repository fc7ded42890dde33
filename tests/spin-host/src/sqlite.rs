//! Spin's SQLite interface, `spin:sqlite/sqlite@3.0.0`, as `spin up` serves
//! it without a runtime config (spinframework/spin 94a8fc8:
//! `crates/factor-sqlite/src/{lib,host}.rs`, `crates/sqlite/src/lib.rs`,
//! `crates/sqlite-inproc/src/lib.rs`):
//!
//! - A component opens only the labels in its `sqlite_databases`
//!   (`access-denied` otherwise), and only `default` exists
//!   (`no-such-database`). Spin refuses to start an app that lists another
//!   label, and so does this host ([`check_labels`]).
//! - `default` is one file, `sqlite_db.db` in the per-run directory
//!   (`--kv-dir`; Spin: `.spin/sqlite_db.db`), shared by every component and
//!   every instance.
//! - Each `open` is its own `rusqlite` connection to that file, made on its
//!   first use (Spin's `InProcConnection`), with rusqlite's defaults (a 5 s
//!   busy timeout, a rollback journal: Spin sets neither) and an authorizer
//!   that refuses to `ATTACH` a file. An instance holds at most 256 open at
//!   once (Spin's connection table).
//! - `execute` prepares one statement (`prepare_cached`: two in one string
//!   are an error), binds the parameters and answers every row. It runs on
//!   tokio's blocking pool (`spawn_blocking`), so the executor keeps serving
//!   other invocations while a statement waits for a lock. An answer past
//!   `MAX_HOST_BUFFERED_BYTES`, counted as Spin counts it, is an error.
//!   Every error is `io` with rusqlite's message.
//!
//! The I/O boundary is the database file; the guest-facing trait impls at the
//! end only look up the connection and call in here.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::ValueRef;
use wasmtime::component::{Resource, ResourceTable};

use crate::bindings::spin::sqlite::sqlite as wit;
use crate::kv::MAX_HOST_BUFFERED_BYTES;
use wit::{Error, QueryResult, RowResult, Value};

/// The one label that exists without a runtime config.
const DEFAULT: &str = "default";

/// The `default` database's file in the per-run directory (Spin's
/// `DEFAULT_SQLITE_DB_FILENAME`).
const DEFAULT_FILE: &str = "sqlite_db.db";

/// Connections one instance may hold open at once (Spin's
/// `spin_resource_table::Table::new(256)` in `InstanceState::new`).
const MAX_CONNECTIONS: usize = 256;

/// What Spin answers when the blocking task running a statement fails
/// (`.context("internal runtime error")` in `InProcConnection::query`).
const INTERNAL: &str = "internal runtime error";

/// Refuses an app whose components list a database that does not exist,
/// as Spin refuses to start it (`ensure_allowed_databases_are_configured`,
/// crates/factor-sqlite/src/lib.rs), with Spin's message.
pub(crate) fn check_labels(components: &[crate::manifest::Component]) -> anyhow::Result<()> {
    let unknown: Vec<String> = components
        .iter()
        .flat_map(|c| c.sqlite_databases.iter().filter(|l| *l != DEFAULT).map(move |l| (&c.id, l)))
        .map(|(id, label)| format!("- Component {id} uses database '{label}'"))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "One or more components use SQLite databases which are not defined.\n\
         Only `default` is defined on this host (it takes no runtime configuration file).\n\
         Details:\n{}",
        unknown.join("\n")
    )
}

/// What one component may open: its `sqlite_databases`, and where `default` is.
#[derive(Debug, Clone)]
pub struct Databases {
    allowed: Arc<[String]>,
    default: PathBuf,
}

impl Databases {
    /// `dir` is the per-run directory (`--kv-dir`), `allowed` the
    /// component's `sqlite_databases`.
    pub(crate) fn new(dir: &Path, allowed: &[String]) -> Self {
        Self { allowed: allowed.into(), default: dir.join(DEFAULT_FILE) }
    }

    /// A connection to `label`, not made yet (Spin's `open_impl`, then its
    /// `default` connection creator).
    fn open(&self, label: &str) -> Result<Connection, Error> {
        if !self.allowed.iter().any(|l| l == label) {
            return Err(Error::AccessDenied);
        }
        if label != DEFAULT {
            return Err(Error::NoSuchDatabase);
        }
        // Spin creates the file's directory on every open
        // (`InProcDatabaseLocation::from_path`); its connection creator
        // answers a failure there as `invalid-connection`.
        if let Some(dir) = self.default.parent() {
            std::fs::create_dir_all(dir).map_err(|_| Error::InvalidConnection)?;
        }
        Ok(Connection { path: self.default.clone(), db: OnceLock::new() })
    }
}

/// One instance's SQLite state: what it may open, and how many of its
/// connections are open.
#[derive(Debug)]
pub struct Instance {
    databases: Databases,
    open: usize,
}

impl Instance {
    pub(crate) fn new(databases: Databases) -> Self {
        Self { databases, open: 0 }
    }

    /// `connection.open`: the connection goes into the instance's `table`.
    pub(crate) fn open(&mut self, table: &mut ResourceTable, label: &str) -> Result<Resource<Connection>, Error> {
        let connection = self.databases.open(label)?;
        if self.open >= MAX_CONNECTIONS {
            return Err(Error::Io("too many connections opened".to_owned()));
        }
        let connection = table.push(connection).map_err(|e| Error::Io(e.to_string()))?;
        self.open += 1;
        Ok(connection)
    }

    /// `connection.execute`: the statement runs on the blocking pool, and
    /// the future borrows nothing of the instance.
    pub(crate) fn execute(
        table: &ResourceTable,
        connection: &Resource<Connection>,
        statement: String,
        parameters: Vec<Value>,
    ) -> impl Future<Output = Result<QueryResult, Error>> + Send + 'static {
        let db = table.get(connection).map_err(|_| Error::InvalidConnection).and_then(Connection::db);
        async move {
            let db = db?;
            let (answer, cpu_ns) = tokio::task::spawn_blocking(move || {
                let started = crate::cpu::thread_cpu_ns();
                let answer = run(&db, &statement, parameters, MAX_HOST_BUFFERED_BYTES);
                (answer, crate::cpu::thread_cpu_ns().saturating_sub(started))
            })
            .await
            .map_err(|_| Error::Io(INTERNAL.to_owned()))?;
            crate::cpu::store_work_elsewhere(cpu_ns);
            answer
        }
    }

    /// The resource's drop.
    pub(crate) fn close(
        &mut self,
        table: &mut ResourceTable,
        connection: Resource<Connection>,
    ) -> wasmtime::Result<()> {
        table.delete(connection)?;
        self.open = self.open.saturating_sub(1);
        Ok(())
    }
}

/// A `connection` resource: the database file, and its `rusqlite`
/// connection once made.
#[derive(Debug)]
pub struct Connection {
    path: PathBuf,
    db: OnceLock<Arc<Mutex<rusqlite::Connection>>>,
}

impl Connection {
    /// The `rusqlite` connection, made on first use as Spin's
    /// `InProcConnection::db_connection` does (a failure is `io`).
    fn db(&self) -> Result<Arc<Mutex<rusqlite::Connection>>, Error> {
        if let Some(db) = self.db.get() {
            return Ok(db.clone());
        }
        let db = rusqlite::Connection::open(&self.path).map_err(io)?;
        db.authorizer(Some(refuse_attaching_files));
        Ok(self.db.get_or_init(|| Arc::new(Mutex::new(db))).clone())
    }

    /// `connection.changes`: rows changed by the last statement on this
    /// connection (0 before any).
    pub(crate) fn changes(&self) -> Result<u64, Error> {
        Ok(lock(&*self.db()?).changes())
    }

    /// `connection.last-insert-rowid` on this connection (0 before any).
    pub(crate) fn last_insert_rowid(&self) -> Result<i64, Error> {
        Ok(lock(&*self.db()?).last_insert_rowid())
    }
}

fn lock(db: &Mutex<rusqlite::Connection>) -> MutexGuard<'_, rusqlite::Connection> {
    db.lock().unwrap_or_else(PoisonError::into_inner)
}

fn io(e: rusqlite::Error) -> Error {
    Error::Io(e.to_string())
}

/// Spin's `allow_attach_file = false`: `ATTACH` of a file is refused, of a
/// temporary (`''`) or in-memory (`':memory:'`) database allowed.
fn refuse_attaching_files(context: AuthContext<'_>) -> Authorization {
    match context.action {
        AuthAction::Attach { filename } if !matches!(filename, "" | ":memory:") => Authorization::Deny,
        _ => Authorization::Allow,
    }
}

/// Runs one statement and answers its columns and rows, as Spin's
/// `execute_query`: the answer is counted from the result's own size plus
/// each value's ([`memory_size`]), and an error once past
/// `max_result_bytes`.
fn run(
    db: &Mutex<rusqlite::Connection>,
    statement: &str,
    parameters: Vec<Value>,
    max_result_bytes: usize,
) -> Result<QueryResult, Error> {
    let db = lock(db);
    let mut prepared = db.prepare_cached(statement).map_err(io)?;
    let columns = prepared.column_names().into_iter().map(str::to_owned).collect();
    let mut found = prepared.query(rusqlite::params_from_iter(parameters.into_iter().map(to_sql))).map_err(io)?;
    let mut bytes = std::mem::size_of::<QueryResult>();
    let mut rows = Vec::new();
    while let Some(row) = found.next().map_err(io)? {
        let values = (0..row.as_ref().column_count())
            .map(|i| row.get_ref(i).map_err(io).and_then(|value| from_sql(value, i)))
            .collect::<Result<Vec<_>, _>>()?;
        bytes += values.iter().map(memory_size).sum::<usize>();
        if bytes > max_result_bytes {
            return Err(Error::Io(format!("query result exceeds limit of {max_result_bytes} bytes")));
        }
        rows.push(RowResult { values });
    }
    Ok(QueryResult { columns, rows })
}

fn to_sql(value: Value) -> rusqlite::types::Value {
    match value {
        Value::Integer(i) => rusqlite::types::Value::Integer(i),
        Value::Real(r) => rusqlite::types::Value::Real(r),
        Value::Text(t) => rusqlite::types::Value::Text(t),
        Value::Blob(b) => rusqlite::types::Value::Blob(b),
        Value::Null => rusqlite::types::Value::Null,
    }
}

/// Column `column`'s value. Text that is not UTF-8 panics Spin's blocking
/// task (`String::from_utf8(..).unwrap()`), which the guest sees as
/// `io("internal runtime error")`; this host answers the same and says why
/// on stderr. (Spin's panic also poisons the connection's lock, failing its
/// later calls; this host does not follow it there.)
fn from_sql(value: ValueRef<'_>, column: usize) -> Result<Value, Error> {
    Ok(match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(String::from_utf8(t.to_vec()).map_err(|_| {
            eprintln!("spin-host: sqlite: column {column} holds text that is not UTF-8, which panics Spin's host");
            Error::Io(INTERNAL.to_owned())
        })?),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    })
}

/// What Spin counts for a value against the limit (`Value::memory_size`,
/// crates/world/src/lib.rs).
fn memory_size(value: &Value) -> usize {
    std::mem::size_of::<Value>()
        + match value {
            Value::Text(t) => t.len(),
            Value::Blob(b) => b.len(),
            Value::Integer(_) | Value::Real(_) | Value::Null => 0,
        }
}

impl wit::Host for crate::RequestState {}

/// Spin answers an unknown handle `invalid-connection` from `execute` and
/// traps in `changes` and `last-insert-rowid`, which cannot answer an error.
impl wit::HostConnection for crate::RequestState {
    fn open(&mut self, database: String) -> Result<Resource<Connection>, Error> {
        self.sqlite.open(&mut self.table, &database)
    }

    async fn execute(
        &mut self,
        connection: Resource<Connection>,
        statement: String,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        Instance::execute(&self.table, &connection, statement, parameters).await
    }

    fn last_insert_rowid(&mut self, connection: Resource<Connection>) -> wasmtime::Result<i64> {
        Ok(self.table.get(&connection)?.last_insert_rowid()?)
    }

    fn changes(&mut self, connection: Resource<Connection>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&connection)?.changes()?)
    }

    fn drop(&mut self, connection: Resource<Connection>) -> wasmtime::Result<()> {
        self.sqlite.close(&mut self.table, connection)
    }
}

#[cfg(test)]
mod tests;
