use std::sync::Barrier;

use super::*;

/// One instance of a component whose `sqlite_databases` is `["default"]`,
/// over the per-run directory `dir`.
struct Guest {
    table: ResourceTable,
    instance: Instance,
}

impl Guest {
    fn new(dir: &Path) -> Self {
        Self { table: ResourceTable::new(), instance: Instance::new(Databases::new(dir, &["default".to_owned()])) }
    }

    fn open(&mut self) -> Resource<Connection> {
        self.instance.open(&mut self.table, "default").unwrap()
    }

    /// `execute` as the guest calls it, on a runtime of its own.
    fn execute(
        &self,
        connection: &Resource<Connection>,
        statement: &str,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        one_thread().block_on(Instance::execute(&self.table, connection, statement.to_owned(), parameters))
    }

    fn connection(&self, connection: &Resource<Connection>) -> &Connection {
        self.table.get(connection).unwrap()
    }
}

fn one_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A value as compared here: a real by its bits.
#[derive(Debug, PartialEq)]
enum Plain {
    Integer(i64),
    Real(u64),
    Text(String),
    Blob(Vec<u8>),
    Null,
}

fn plain(value: &Value) -> Plain {
    match value {
        Value::Integer(i) => Plain::Integer(*i),
        Value::Real(r) => Plain::Real(r.to_bits()),
        Value::Text(t) => Plain::Text(t.clone()),
        Value::Blob(b) => Plain::Blob(b.clone()),
        Value::Null => Plain::Null,
    }
}

fn rows(answer: &QueryResult) -> Vec<Vec<Plain>> {
    answer.rows.iter().map(|row| row.values.iter().map(plain).collect()).collect()
}

fn io_message(answer: Result<QueryResult, Error>) -> String {
    match answer {
        Err(Error::Io(message)) => message,
        other => panic!("expected an io error, got {other:?}"),
    }
}

fn count(guest: &Guest, connection: &Resource<Connection>, table: &str) -> Vec<Vec<Plain>> {
    rows(&guest.execute(connection, &format!("SELECT count(*) FROM {table}"), vec![]).unwrap())
}

#[test]
fn rows_and_columns_round_trip_every_value_type() {
    let dir = tempfile::tempdir().unwrap();
    let mut guest = Guest::new(dir.path());
    let c = guest.open();
    let created = guest.execute(&c, "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)", vec![]).unwrap();
    assert!(created.columns.is_empty() && created.rows.is_empty(), "{created:?}");

    let written = [
        vec![
            Value::Integer(i64::MIN),
            Value::Real(0.1),
            Value::Text("ünïcode ✓".to_owned()),
            Value::Blob(vec![0, 255, 1]),
            Value::Null,
        ],
        vec![
            Value::Integer(i64::MAX),
            Value::Real(-1.5e-300),
            Value::Text(String::new()),
            Value::Blob(vec![]),
            Value::Null,
        ],
    ];
    for row in &written {
        let inserted = guest.execute(&c, "INSERT INTO t VALUES (?, ?, ?, ?, ?) RETURNING i, b", row.clone()).unwrap();
        assert_eq!(inserted.columns, ["i", "b"]);
        assert_eq!(rows(&inserted), [vec![plain(&row[0]), plain(&row[3])]], "RETURNING answers the row written");
    }

    let read = guest.execute(&c, "SELECT i, r, s, b, n AS absent FROM t ORDER BY rowid", vec![]).unwrap();
    assert_eq!(read.columns, ["i", "r", "s", "b", "absent"]);
    let expected: Vec<Vec<Plain>> = written.iter().map(|row| row.iter().map(plain).collect()).collect();
    assert_eq!(rows(&read), expected);
    let types =
        guest.execute(&c, "SELECT typeof(i), typeof(r), typeof(s), typeof(b), typeof(n) FROM t", vec![]).unwrap();
    let each = || ["integer", "real", "text", "blob", "null"].map(|t| Plain::Text(t.to_owned()));
    assert_eq!(rows(&types), [each(), each()], "each value is stored as its own type");
}

#[test]
fn a_parameter_count_mismatch_is_an_io_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut guest = Guest::new(dir.path());
    let c = guest.open();
    guest.execute(&c, "CREATE TABLE t (a, b)", vec![]).unwrap();
    let too_few = io_message(guest.execute(&c, "INSERT INTO t VALUES (?, ?)", vec![Value::Integer(1)]));
    assert!(too_few.contains("Wrong number of parameters"), "{too_few}");
    let too_many = vec![Value::Integer(1), Value::Integer(2), Value::Integer(3)];
    let too_many = io_message(guest.execute(&c, "INSERT INTO t VALUES (?, ?)", too_many));
    assert!(too_many.contains("Wrong number of parameters"), "{too_many}");
    assert_eq!(count(&guest, &c, "t"), [[Plain::Integer(0)]]);
}

#[test]
fn two_statements_in_one_string_are_an_io_error_and_run_neither() {
    let dir = tempfile::tempdir().unwrap();
    let mut guest = Guest::new(dir.path());
    let c = guest.open();
    guest.execute(&c, "CREATE TABLE t (a)", vec![]).unwrap();
    let message = io_message(guest.execute(&c, "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)", vec![]));
    assert!(message.contains("Multiple statements"), "{message}");
    assert_eq!(count(&guest, &c, "t"), [[Plain::Integer(0)]]);
    // A statement's own `;` and trailing blanks are one statement.
    guest.execute(&c, "INSERT INTO t VALUES (1);  ", vec![]).unwrap();
    assert_eq!(count(&guest, &c, "t"), [[Plain::Integer(1)]]);
}

#[test]
fn open_refuses_unlisted_databases_and_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut table = ResourceTable::new();
    let mut open = |allowed: &[&str], label: &str| {
        let allowed: Vec<String> = allowed.iter().map(|l| (*l).to_owned()).collect();
        Instance::new(Databases::new(dir.path(), &allowed)).open(&mut table, label)
    };
    assert!(matches!(open(&[], "default"), Err(Error::AccessDenied)));
    assert!(matches!(open(&["other"], "default"), Err(Error::AccessDenied)));
    assert!(matches!(open(&["default"], "other"), Err(Error::AccessDenied)));
    assert!(matches!(open(&["default", "other"], "other"), Err(Error::NoSuchDatabase)));
    assert!(open(&["default"], "default").is_ok());
    assert!(!dir.path().join("sqlite_db.db").exists(), "the connection is made on its first use");
}

#[test]
fn an_app_listing_an_unknown_database_is_refused_at_start() {
    let component = |id: &str, databases: &[&str]| crate::manifest::Component {
        id: id.to_owned(),
        route: crate::manifest::Route::Private,
        source: PathBuf::from("c.wasm"),
        key_value_stores: Vec::new(),
        sqlite_databases: databases.iter().map(|d| (*d).to_owned()).collect(),
        allowed_outbound_hosts: Vec::new(),
        variables: std::collections::BTreeMap::new(),
    };
    check_labels(&[component("front", &["default"]), component("ticks", &[])]).unwrap();
    let e = check_labels(&[component("front", &["default"]), component("ticks", &["default", "audit"])]).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("- Component ticks uses database 'audit'"), "{e}");
    assert!(!e.contains("front"), "{e}");
}

#[test]
fn connections_to_the_file_see_each_others_committed_writes() {
    let dir = tempfile::tempdir().unwrap();
    // Two components' instances, as the front and the tick component.
    let (mut front, mut tick) = (Guest::new(dir.path()), Guest::new(dir.path()));
    let (a, b) = (front.open(), tick.open());
    front.execute(&a, "CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)", vec![]).unwrap();
    front.execute(&a, "INSERT INTO t VALUES ('x', 1), ('y', 2)", vec![]).unwrap();
    assert_eq!(count(&tick, &b, "t"), [[Plain::Integer(2)]]);
    assert_eq!((front.connection(&a).changes().unwrap(), front.connection(&a).last_insert_rowid().unwrap()), (2, 2));
    assert_eq!((tick.connection(&b).changes().unwrap(), tick.connection(&b).last_insert_rowid().unwrap()), (0, 0));

    tick.execute(&b, "UPDATE t SET v = v * 10", vec![]).unwrap();
    assert_eq!(tick.connection(&b).changes().unwrap(), 2);
    let read = front.execute(&a, "SELECT v FROM t ORDER BY k", vec![]).unwrap();
    assert_eq!(rows(&read), [[Plain::Integer(10)], [Plain::Integer(20)]]);

    // Not before its commit.
    front.execute(&a, "BEGIN", vec![]).unwrap();
    front.execute(&a, "INSERT INTO t VALUES ('z', 3)", vec![]).unwrap();
    assert_eq!(count(&tick, &b, "t"), [[Plain::Integer(2)]]);
    front.execute(&a, "COMMIT", vec![]).unwrap();
    assert_eq!(count(&tick, &b, "t"), [[Plain::Integer(3)]]);

    // Each `open` is a connection of its own.
    let again = front.open();
    assert_eq!(front.connection(&again).last_insert_rowid().unwrap(), 0);
}

/// Every writer races with its own connection, as instances of several
/// components do; each waits out the others' locks (rusqlite's busy
/// timeout) and exactly one inserts.
#[test]
fn an_insert_on_conflict_do_nothing_raced_from_threads_inserts_once() {
    const THREADS: i64 = 8;
    let dir = tempfile::tempdir().unwrap();
    let mut setup = Guest::new(dir.path());
    let c = setup.open();
    setup.execute(&c, "CREATE TABLE claims (key TEXT PRIMARY KEY, holder INTEGER NOT NULL)", vec![]).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let start = Barrier::new(THREADS as usize);
    let answers: Vec<(i64, Result<QueryResult, Error>)> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..THREADS)
            .map(|i| {
                let (dir, start, runtime) = (dir.path(), &start, &runtime);
                scope.spawn(move || {
                    let mut guest = Guest::new(dir);
                    let c = guest.open();
                    guest.connection(&c).changes().unwrap(); // makes the connection before the race
                    let insert = "INSERT INTO claims VALUES ('task/1', ?) ON CONFLICT DO NOTHING RETURNING holder";
                    start.wait();
                    (
                        i,
                        runtime.block_on(Instance::execute(
                            &guest.table,
                            &c,
                            insert.to_owned(),
                            vec![Value::Integer(i)],
                        )),
                    )
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut winners = Vec::new();
    for (i, answer) in answers {
        let answer = answer.unwrap_or_else(|e| panic!("writer {i}: {e:?}"));
        if !answer.rows.is_empty() {
            assert_eq!(rows(&answer), [[Plain::Integer(i)]]);
            winners.push(i);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer inserted: {winners:?}");
    let held = setup.execute(&c, "SELECT holder FROM claims", vec![]).unwrap();
    assert_eq!(rows(&held), [[Plain::Integer(winners[0])]]);
}

/// On an executor of one thread, a statement waiting for another
/// connection's lock waits on the blocking pool, so that connection's
/// `COMMIT` still runs. Run on the executor, the waiting `INSERT` would hold
/// the only thread until its 5 s busy timeout and fail "database is locked".
#[test]
fn a_statement_waiting_for_a_lock_leaves_the_executor_free() {
    let dir = tempfile::tempdir().unwrap();
    let (mut holder, mut waiter) = (Guest::new(dir.path()), Guest::new(dir.path()));
    let (h, w) = (holder.open(), waiter.open());
    holder.execute(&h, "CREATE TABLE t (a)", vec![]).unwrap();
    holder.execute(&h, "BEGIN EXCLUSIVE", vec![]).unwrap();
    holder.execute(&h, "INSERT INTO t VALUES (1)", vec![]).unwrap();
    let (inserted, committed) = one_thread().block_on(async {
        let insert = Instance::execute(&waiter.table, &w, "INSERT INTO t VALUES (2)".to_owned(), vec![]);
        let commit = Instance::execute(&holder.table, &h, "COMMIT".to_owned(), vec![]);
        tokio::join!(insert, commit)
    });
    committed.unwrap();
    inserted.unwrap();
    assert_eq!(count(&holder, &h, "t"), [[Plain::Integer(2)]]);
}

/// Counted as Spin counts it: the result's own size, then each value's,
/// and an answer exactly at the limit is within it.
#[test]
fn an_answer_past_the_limit_is_an_io_error_naming_it() {
    assert_eq!(MAX_HOST_BUFFERED_BYTES, 128 << 20, "Spin's limit");
    let db = Mutex::new(rusqlite::Connection::open_in_memory().unwrap());
    let row = std::mem::size_of::<Value>() + "ten bytes!".len();
    let limit = std::mem::size_of::<QueryResult>() + 2 * row;
    let statement =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT 'ten bytes!' FROM n";
    let two = run(&db, statement, vec![Value::Integer(2)], limit).unwrap();
    assert_eq!(two.rows.len(), 2);
    let three = io_message(run(&db, statement, vec![Value::Integer(3)], limit));
    assert_eq!(three, format!("query result exceeds limit of {limit} bytes"));
}

/// Spin's authorizer sees an `ATTACH`'s file name only when it is a
/// literal: `ATTACH ?` is not refused on Spin, nor here.
#[test]
fn attaching_a_file_is_refused_but_a_memory_or_temporary_database_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut guest = Guest::new(dir.path());
    let c = guest.open();
    let other = dir.path().join("other.db");
    let message = io_message(guest.execute(&c, &format!("ATTACH DATABASE '{}' AS other", other.display()), vec![]));
    assert!(message.contains("not authorized"), "{message}");
    assert!(!other.exists());
    guest.execute(&c, "ATTACH DATABASE ':memory:' AS scratch", vec![]).unwrap();
    guest.execute(&c, "ATTACH DATABASE '' AS temporary", vec![]).unwrap();
    guest.execute(&c, "CREATE TABLE scratch.t (a)", vec![]).unwrap();
    let bound = Value::Text(other.display().to_string());
    guest.execute(&c, "ATTACH DATABASE ? AS bound", vec![bound]).unwrap();
    assert!(other.exists(), "as on Spin");
}

#[test]
fn an_instance_holds_at_most_256_connections() {
    let dir = tempfile::tempdir().unwrap();
    let mut guest = Guest::new(dir.path());
    let mut open: Vec<_> = (0..256).map(|_| guest.open()).collect();
    let refused = guest.instance.open(&mut guest.table, "default").map(|_| ());
    assert!(matches!(&refused, Err(Error::Io(m)) if m == "too many connections opened"), "{refused:?}");
    let closed = open.pop().unwrap();
    guest.instance.close(&mut guest.table, closed).unwrap();
    guest.open();
}

#[test]
fn text_that_is_not_utf8_is_spins_internal_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut guest = Guest::new(dir.path());
    let c = guest.open();
    assert_eq!(io_message(guest.execute(&c, "SELECT CAST(x'ff' AS TEXT)", vec![])), "internal runtime error");
    let blob = guest.execute(&c, "SELECT x'ff'", vec![]).unwrap();
    assert_eq!(rows(&blob), [[Plain::Blob(vec![0xff])]]);
}
