//! Spin's key-value stores over a directory: one file per key (the key
//! hex-encoded as the file name), written atomically (temp file + rename),
//! so values survive a host restart and a crash mid-write leaves the old
//! value. Only stores listed in the component's `key_value_stores` can be
//! opened (`access-denied` otherwise), as in Spin.
//!
//! Two interfaces reach the same store, as in Spin ≥ 3.0
//! (`crates/factor-key-value/src/host.rs`): `fermyon:spin/key-value@2.0.0`
//! (get, set, delete, exists, get-keys) and `wasi:keyvalue@0.2.0-draft2`
//! (`store` buckets and `atomics`: `cas`, `swap`, `increment`).
//!
//! Atomicity: every operation, and every read-compare-write of [`Cas::swap`]
//! and [`KvStore::increment`] with its file write, runs inside one
//! process-wide lock, as Spin's SQLite store runs each statement on one
//! connection behind a mutex; two hosts on one `--kv-dir` are not
//! supported. What a swap compares depends on [`Semantics`]:
//!
//! - [`Semantics::Sqlite`], the default, is Spin's default store
//!   (spinframework/spin 94a8fc8, `crates/key-value-spin/src/store.rs`): a
//!   swap from an existing value is `UPDATE … WHERE value = old` (atomic),
//!   but a swap whose base was absent is `INSERT … ON CONFLICT DO UPDATE`,
//!   which always succeeds, so two racing creations both win.
//! - [`Semantics::Strict`] compares absent too, as Spin's Redis
//!   (`WATCH`/`MULTI`), Azure Cosmos (create without upsert) and DynamoDB
//!   (`attribute_not_exists`) stores do.
//!
//! `increment` is one indivisible read and write in both, as in every
//! store Spin ships. Requests run on several threads (main.rs), and
//! `race_window` holds a CAS open between its read and its swap, as a slow
//! guest or a second instance would, so a construction that is only safe
//! when nothing interleaves fails here as it fails on Spin.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;

/// Serialises file operations across concurrent requests; a CAS holds it
/// from its read to its write.
static LOCK: Mutex<()> = Mutex::new(());

/// What `batch.get-many` answers: each key found, with its value.
pub(crate) type Found = Vec<(String, Option<Vec<u8>>)>;

/// The most a host call may answer in Spin (`spin_world::MAX_HOST_BUFFERED_BYTES`).
pub(crate) const MAX_HOST_BUFFERED_BYTES: usize = 128 << 20;

/// The held [`LOCK`]; the CPU time it was held for counts as store work
/// (`--report-cpu`, see `cpu`).
struct Locked {
    _guard: std::sync::MutexGuard<'static, ()>,
    started: u64,
}

impl Drop for Locked {
    fn drop(&mut self) {
        crate::cpu::store_work(self.started);
    }
}

fn lock() -> Locked {
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    Locked { _guard: guard, started: crate::cpu::thread_cpu_ns() }
}

/// What a swap whose base is absent does (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semantics {
    /// Spin's default SQLite store: a swap from absent is an upsert.
    Sqlite,
    /// Every swap compares, absent included (Spin's other stores).
    Strict,
}

impl Semantics {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "sqlite" => Some(Self::Sqlite),
            "strict" => Some(Self::Strict),
            _ => None,
        }
    }
}

/// How every store of this host behaves.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub semantics: Semantics,
    /// How long `cas.current` waits after its read, outside the lock.
    pub race_window: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self { semantics: Semantics::Sqlite, race_window: Duration::ZERO }
    }
}

/// An open store: its directory. Also the `wasi:keyvalue/store` bucket.
#[derive(Debug, Clone)]
pub struct KvStore {
    dir: PathBuf,
    options: Options,
}

#[derive(Debug)]
pub(crate) enum KvError {
    NoSuchStore,
    AccessDenied,
    Other(String),
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(name: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> =
        (0..name.len()).step_by(2).map(|i| name.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect();
    String::from_utf8(bytes?).ok()
}

fn other(e: impl std::fmt::Display) -> KvError {
    KvError::Other(e.to_string())
}

impl KvStore {
    /// Opens `label` if the component may use it. Spin 3 defines only the
    /// `default` store unless a runtime config adds others.
    pub(crate) fn open(root: &Path, options: Options, allowed: &[String], label: &str) -> Result<Self, KvError> {
        if !allowed.iter().any(|l| l == label) {
            return Err(KvError::AccessDenied);
        }
        if label != "default" {
            return Err(KvError::NoSuchStore);
        }
        let dir = root.join(label);
        std::fs::create_dir_all(&dir).map_err(other)?;
        Ok(Self { dir, options })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(hex(key.as_bytes()))
    }

    /// Reads `key`; the caller holds [`LOCK`].
    fn read_locked(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        match std::fs::read(self.path(key)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(other(e)),
        }
    }

    /// Writes `key` (temp file + rename); the caller holds [`LOCK`].
    fn write_locked(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        let path = self.path(key);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, value).and_then(|()| std::fs::rename(&tmp, &path)).map_err(other)
    }

    pub(crate) fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let _guard = lock();
        self.read_locked(key)
    }

    pub(crate) fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        let _guard = lock();
        self.write_locked(key, value)
    }

    /// Removes `key` (absent is fine); the caller holds [`LOCK`].
    fn remove_locked(&self, key: &str) -> Result<(), KvError> {
        match std::fs::remove_file(self.path(key)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(other(e)),
            _ => Ok(()),
        }
    }

    pub(crate) fn delete(&self, key: &str) -> Result<(), KvError> {
        let _guard = lock();
        self.remove_locked(key)
    }

    pub(crate) fn keys(&self) -> Result<Vec<String>, KvError> {
        let _guard = lock();
        let mut keys = Vec::new();
        for entry in std::fs::read_dir(&self.dir).context("listing store").map_err(other)? {
            let name = entry.map_err(other)?.file_name();
            if let Some(key) = name.to_str().filter(|n| !n.ends_with(".tmp")).and_then(unhex) {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    /// `batch.get-many`, as Spin's SQLite store answers it
    /// (`crates/key-value-spin/src/store.rs`: one `SELECT key, value … WHERE
    /// key IN rarray(:keys)` under the connection's lock): only the keys
    /// that exist, in the store's key order rather than the request's, and
    /// an error once the answer passes Spin's `MAX_HOST_BUFFERED_BYTES`
    /// (`crates/world/src/lib.rs`: 128 MiB), counted as Spin counts it. A
    /// key asked for twice is answered once.
    pub(crate) fn get_many(&self, keys: &[String]) -> Result<Found, KvError> {
        let _guard = lock();
        let mut keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut bytes = std::mem::size_of::<Vec<String>>();
        let mut found = Vec::new();
        for key in keys {
            let Some(value) = self.read_locked(key)? else { continue };
            bytes += std::mem::size_of::<(String, Option<Vec<u8>>)>() + key.len() + value.len();
            if bytes > MAX_HOST_BUFFERED_BYTES {
                return Err(KvError::Other(format!("query result exceeds limit of {MAX_HOST_BUFFERED_BYTES} bytes")));
            }
            found.push((key.to_owned(), Some(value)));
        }
        Ok(found)
    }

    /// `batch.set-many`: every write or none, as Spin's SQLite store runs
    /// them in one transaction (here: under the lock, each file written
    /// aside first, then renamed into place).
    pub(crate) fn set_many(&self, pairs: &[(String, Vec<u8>)]) -> Result<(), KvError> {
        let _guard = lock();
        let mut staged = Vec::with_capacity(pairs.len());
        for (at, (key, value)) in pairs.iter().enumerate() {
            let path = self.path(key);
            let tmp = path.with_extension(format!("{at}.tmp"));
            if let Err(e) = std::fs::write(&tmp, value) {
                for (tmp, _) in &staged {
                    let _ = std::fs::remove_file(tmp);
                }
                let _ = std::fs::remove_file(&tmp);
                return Err(other(e));
            }
            staged.push((tmp, path));
        }
        for (tmp, path) in staged {
            std::fs::rename(&tmp, &path).map_err(other)?;
        }
        Ok(())
    }

    /// `batch.delete-many`: one `DELETE … WHERE key IN …` in Spin's store.
    pub(crate) fn delete_many(&self, keys: &[String]) -> Result<(), KvError> {
        let _guard = lock();
        keys.iter().try_for_each(|key| self.remove_locked(key))
    }

    /// `cas.new`: a CAS on `key` based on its value now.
    pub(crate) fn cas(&self, key: &str) -> Result<Cas, KvError> {
        let base = self.get(key)?;
        Ok(Cas { store: self.clone(), key: key.to_owned(), base })
    }

    /// `atomics.increment`: adds `delta` to the little-endian `s64` at `key`
    /// (absent counts as 0, as in Spin's store) in one critical section.
    pub(crate) fn increment(&self, key: &str, delta: i64) -> Result<i64, KvError> {
        let _guard = lock();
        let now = match self.read_locked(key)? {
            None => 0,
            Some(bytes) => i64::from_le_bytes(
                bytes
                    .try_into()
                    .map_err(|b: Vec<u8>| KvError::Other(format!("`{key}` holds {} bytes, not an s64", b.len())))?,
            ),
        };
        let next =
            now.checked_add(delta).ok_or_else(|| KvError::Other(format!("`{key}`: {now} + {delta} overflows s64")))?;
        self.write_locked(key, &next.to_le_bytes())?;
        Ok(next)
    }
}

/// A `wasi:keyvalue/atomics` `cas` handle: a key and the value (or absence)
/// its swap is based on.
///
/// Semantics (atomic.wit; Spin's `crates/factor-key-value/src/host.rs`):
/// `new` captures the value, `current` reads it again and makes what it
/// read the base (so the guest decides on exactly what `swap` compares
/// against), and `swap` writes only if the stored value still equals the
/// base — absent included — failing with `cas-failed` and a handle based on
/// the latest value otherwise.
#[derive(Debug)]
pub struct Cas {
    store: KvStore,
    key: String,
    base: Option<Vec<u8>>,
}

impl Cas {
    /// `cas.current`; then waits out the store's race window.
    pub(crate) fn current(&mut self) -> Result<Option<Vec<u8>>, KvError> {
        self.base = self.store.get(&self.key)?;
        let window = self.store.options.race_window;
        if !window.is_zero() {
            std::thread::sleep(window);
        }
        Ok(self.base.clone())
    }

    /// `atomics.swap`: `Ok(Err(newer))` when the value changed since the
    /// base was read, with `newer` based on the value now. Under
    /// [`Semantics::Sqlite`] a base of "absent" is not compared: the value
    /// is written whatever is there now.
    pub(crate) fn swap(self, value: &[u8]) -> Result<Result<(), Self>, KvError> {
        let _guard = lock();
        let now = self.store.read_locked(&self.key)?;
        let upsert = self.base.is_none() && self.store.options.semantics == Semantics::Sqlite;
        if !upsert && now != self.base {
            return Ok(Err(Self { base: now, ..self }));
        }
        self.store.write_locked(&self.key, value)?;
        Ok(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(name: &str) -> (PathBuf, KvStore) {
        store_with(name, Options { semantics: Semantics::Strict, race_window: Duration::ZERO })
    }

    fn store_with(name: &str, options: Options) -> (PathBuf, KvStore) {
        let root = std::env::temp_dir().join(format!("az-spin-host-kv-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let store = KvStore::open(&root, options, &["default".to_owned()], "default").unwrap();
        (root, store)
    }

    #[test]
    fn stores_outside_key_value_stores_are_refused() {
        let root = std::env::temp_dir();
        let options = Options::default();
        assert!(matches!(KvStore::open(&root, options, &[], "default"), Err(KvError::AccessDenied)));
        assert!(matches!(KvStore::open(&root, options, &["other".to_owned()], "other"), Err(KvError::NoSuchStore)));
    }

    #[test]
    fn get_many_answers_only_the_keys_that_exist_in_key_order_as_spins_sqlite_store() {
        let (root, kv) = store("get-many");
        kv.set("log/2", b"two").unwrap();
        kv.set("log/1", b"one").unwrap();
        let asked: Vec<String> = ["log/2", "absent", "log/1", "log/2"].map(str::to_owned).into();
        let answered = kv.get_many(&asked).unwrap();
        assert_eq!(
            answered,
            vec![("log/1".to_owned(), Some(b"one".to_vec())), ("log/2".to_owned(), Some(b"two".to_vec()))],
            "absent keys are left out, the order is the store's, a repeated key is answered once"
        );
        assert_eq!(kv.get_many(&[]).unwrap(), vec![]);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn set_many_and_delete_many_write_every_key_and_leave_no_temporary_file() {
        let (root, kv) = store("set-many");
        let pairs: Vec<(String, Vec<u8>)> = vec![("a".into(), b"1".to_vec()), ("b".into(), b"2".to_vec())];
        kv.set_many(&pairs).unwrap();
        assert_eq!(kv.get("a").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(kv.get("b").unwrap().as_deref(), Some(&b"2"[..]));
        let mut keys = kv.keys().unwrap();
        keys.sort();
        assert_eq!(keys, ["a", "b"], "no staged file is listed or left");
        assert_eq!(std::fs::read_dir(root.join("default")).unwrap().count(), 2);
        kv.delete_many(&["a".to_owned(), "absent".to_owned()]).unwrap();
        assert_eq!(kv.keys().unwrap(), ["b"]);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn swap_fails_when_the_value_changed_since_its_base() {
        let (root, kv) = store("stale");
        // Two CAS from "absent": the first swap wins, the second fails.
        let first = kv.cas("k").unwrap();
        let mut second = kv.cas("k").unwrap();
        assert_eq!(second.current().unwrap(), None);
        first.swap(b"one").unwrap().unwrap();
        let newer = second.swap(b"two").unwrap().unwrap_err();
        assert_eq!(kv.get("k").unwrap().as_deref(), Some(&b"one"[..]));
        // The handle cas-failed returns is based on the latest value.
        assert_eq!(newer.base.as_deref(), Some(&b"one"[..]));
        newer.swap(b"two").unwrap().unwrap();
        assert_eq!(kv.get("k").unwrap().as_deref(), Some(&b"two"[..]));
        // A plain `set` between read and swap also fails the swap.
        let mut cas = kv.cas("k").unwrap();
        cas.current().unwrap();
        kv.set("k", b"set").unwrap();
        assert!(cas.swap(b"x").unwrap().is_err());
        assert_eq!(kv.get("k").unwrap().as_deref(), Some(&b"set"[..]));
        // Deleting makes the key absent again: a base of "set" fails.
        let cas = kv.cas("k").unwrap();
        kv.delete("k").unwrap();
        assert!(cas.swap(b"x").unwrap().is_err());
        assert_eq!(kv.get("k").unwrap(), None);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn increment_is_an_s64_counter() {
        let (root, kv) = store("incr");
        assert_eq!(kv.increment("n", 2).unwrap(), 2);
        assert_eq!(kv.increment("n", -5).unwrap(), -3);
        kv.set("bad", b"x").unwrap();
        assert!(matches!(kv.increment("bad", 1), Err(KvError::Other(_))));
        std::fs::remove_dir_all(root).unwrap();
    }

    /// Eight threads, each with its own handle like concurrent instances,
    /// add to one counter by CAS loops: no update is lost, and every failed
    /// swap was caused by another thread's success.
    #[test]
    fn concurrent_cas_loops_lose_no_update() {
        let (root, kv) = store("race");
        const THREADS: u64 = 8;
        const ADDS: u64 = 50;
        let failures: u64 = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    let kv = kv.clone();
                    scope.spawn(move || {
                        let mut failures = 0;
                        for _ in 0..ADDS {
                            let mut cas = kv.cas("counter").unwrap();
                            loop {
                                let now =
                                    cas.current().unwrap().map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
                                match cas.swap(&(now + 1).to_le_bytes()).unwrap() {
                                    Ok(()) => break,
                                    Err(newer) => {
                                        failures += 1;
                                        cas = newer;
                                    }
                                }
                            }
                        }
                        failures
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        let total = u64::from_le_bytes(kv.get("counter").unwrap().unwrap().try_into().unwrap());
        assert_eq!(total, THREADS * ADDS, "{failures} swaps failed and were retried");
        std::fs::remove_dir_all(root).unwrap();
    }

    /// Spin's SQLite store: a swap from an existing value still compares,
    /// but two swaps from absent both succeed, the later one overwriting.
    #[test]
    fn sqlite_semantics_upsert_a_swap_from_absent() {
        let (root, kv) = store_with("sqlite", Options { semantics: Semantics::Sqlite, race_window: Duration::ZERO });
        let mut first = kv.cas("k").unwrap();
        let mut second = kv.cas("k").unwrap();
        assert_eq!(first.current().unwrap(), None);
        assert_eq!(second.current().unwrap(), None);
        first.swap(b"one").unwrap().unwrap();
        second.swap(b"two").unwrap().unwrap();
        assert_eq!(kv.get("k").unwrap().as_deref(), Some(&b"two"[..]));
        // From an existing value the swap is conditional.
        let mut stale = kv.cas("k").unwrap();
        stale.current().unwrap();
        kv.set("k", b"three").unwrap();
        assert!(stale.swap(b"x").unwrap().is_err());
        assert_eq!(kv.get("k").unwrap().as_deref(), Some(&b"three"[..]));
        std::fs::remove_dir_all(root).unwrap();
    }

    /// Creations by CAS from absent on several threads, each reading before
    /// any swaps, all "win" under SQLite semantics, while creation tickets
    /// drawn with `increment` give exactly one writer a 1. The barrier between
    /// read and swap holds every CAS open as `race_window` does for a
    /// component, without depending on how the threads are scheduled.
    #[test]
    fn under_sqlite_semantics_only_increment_tickets_create_once() {
        let options = Options { semantics: Semantics::Sqlite, race_window: Duration::ZERO };
        let (root, kv) = store_with("tickets", options);
        const THREADS: usize = 4;
        let read = std::sync::Barrier::new(THREADS);
        let (cas_wins, ticket_wins): (Vec<bool>, Vec<bool>) = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|i| {
                    let (kv, read) = (kv.clone(), &read);
                    scope.spawn(move || {
                        let mut cas = kv.cas("by-cas").unwrap();
                        let absent = cas.current().unwrap().is_none();
                        read.wait();
                        let cas_won = absent && cas.swap(format!("writer {i}").as_bytes()).unwrap().is_ok();
                        let ticket_won = kv.increment("by-ticket.created", 1).unwrap() == 1;
                        (cas_won, ticket_won)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).unzip()
        });
        assert_eq!(cas_wins.iter().filter(|w| **w).count(), THREADS, "every CAS from absent read absent and won");
        assert_eq!(ticket_wins.iter().filter(|w| **w).count(), 1, "one ticket is 1");
        std::fs::remove_dir_all(root).unwrap();
    }
}
