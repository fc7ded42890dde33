//! The store a Spin deployment keeps its state in, chosen by the Spin
//! variable `agent_zero_store` (docs/spin-stores.md):
//!
//! - `sqlite` (the default): Spin's `default` SQLite database
//!   ([`crate::sql`]), where every conditional write and transaction is one
//!   atomic statement: `spin up`, Fermyon Cloud.
//! - `key-value`: Spin's `default` key-value store ([`crate::kv`]), for a
//!   platform without SQLite (Akamai Functions). Creations cost an
//!   `increment` ticket each, and a tick's claim and commit are single-key
//!   writes.
//!
//! Every component of a deployment reads the same variable, so all of them
//! use one store; changing it starts from an empty one.

use agent_zero_ports::{Expect, KeyPage, KeyValue, KvError, Write};

use crate::kv::SpinKv;
use crate::sql::{SpinDatabase, SqlKv};

/// The Spin variable that names the store.
pub(crate) const VARIABLE: &str = "agent_zero_store";

/// One of the two stores, or why neither was chosen.
pub(crate) enum SpinStore {
    Sqlite(SqlKv<SpinDatabase>),
    KeyValue(SpinKv),
    /// `agent_zero_store` names neither: every operation fails, naming it.
    Unknown(String),
}

impl SpinStore {
    /// The store `agent_zero_store` names (`sqlite` when unset or empty).
    pub(crate) fn chosen() -> Self {
        match choice(&spin_sdk::variables::get(VARIABLE).unwrap_or_default()) {
            Ok(Choice::Sqlite) => Self::Sqlite(SqlKv::new(SpinDatabase::open_default())),
            Ok(Choice::KeyValue) => Self::KeyValue(SpinKv::open_default()),
            Err(why) => Self::Unknown(why),
        }
    }

    fn unknown(why: &str) -> KvError {
        KvError::Unavailable(why.to_owned())
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Choice {
    Sqlite,
    KeyValue,
}

/// The store `name` (the variable's value) names, or why it names none.
fn choice(name: &str) -> Result<Choice, String> {
    match name.trim() {
        "" | "sqlite" => Ok(Choice::Sqlite),
        "key-value" => Ok(Choice::KeyValue),
        other => Err(format!("Spin variable `{VARIABLE}` is `{other}`: expected `sqlite` or `key-value`")),
    }
}

/// Each operation is the chosen store's.
macro_rules! each {
    ($self:ident, $store:ident => $call:expr, $unknown:expr) => {
        match $self {
            SpinStore::Sqlite($store) => $call,
            SpinStore::KeyValue($store) => $call,
            SpinStore::Unknown(why) => $unknown(why),
        }
    };
}

impl KeyValue for SpinStore {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        each!(self, s => s.get(key).await, |why| Err(Self::unknown(why)))
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        each!(self, s => s.put(key, value).await, |why| Err(Self::unknown(why)))
    }
    async fn delete(&self, key: &str) -> Result<(), KvError> {
        each!(self, s => s.delete(key).await, |why| Err(Self::unknown(why)))
    }
    async fn list(&self, prefix: &str, cursor: Option<&str>, limit: usize) -> Result<KeyPage, KvError> {
        each!(self, s => s.list(prefix, cursor, limit).await, |why| Err(Self::unknown(why)))
    }
    async fn put_if_absent(&self, key: &str, value: &[u8]) -> Result<bool, KvError> {
        each!(self, s => s.put_if_absent(key, value).await, |why| Err(Self::unknown(why)))
    }
    async fn compare_and_swap(&self, key: &str, expected: Option<&[u8]>, value: &[u8]) -> Result<bool, KvError> {
        each!(self, s => s.compare_and_swap(key, expected, value).await, |why| Err(Self::unknown(why)))
    }
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        each!(self, s => s.get_many(keys).await, |why| Err(Self::unknown(why)))
    }
    fn reads_in_one_request(&self, keys: &[&str]) -> bool {
        each!(self, s => s.reads_in_one_request(keys), |_| false)
    }
    async fn put_many(&self, pairs: &[(&str, &[u8])]) -> Result<(), KvError> {
        each!(self, s => s.put_many(pairs).await, |why| Err(Self::unknown(why)))
    }
    fn writes_in_one_request(&self, keys: &[&str]) -> bool {
        each!(self, s => s.writes_in_one_request(keys), |_| false)
    }
    async fn transact(&self, expect: &[Expect<'_>], writes: &[Write<'_>]) -> Result<bool, KvError> {
        each!(self, s => s.transact(expect, writes).await, |why| Err(Self::unknown(why)))
    }
    fn transacts(&self, keys: &[&str]) -> bool {
        each!(self, s => s.transacts(keys), |_| false)
    }
    async fn read_and_transact(
        &self,
        read: &[&str],
        expect: &[Expect<'_>],
        writes: &[Write<'_>],
    ) -> Result<(Vec<Option<Vec<u8>>>, bool), KvError> {
        each!(self, s => s.read_and_transact(read, expect, writes).await, |why| Err(Self::unknown(why)))
    }
    async fn probe_atomicity(&self) -> Result<String, String> {
        each!(self, s => s.probe_atomicity().await, |why: &String| Err(why.clone()))
    }
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::{KeyValue, KvError, block_on};

    use super::{Choice, SpinStore, choice};

    #[test]
    fn the_variable_names_a_store_and_anything_else_fails_every_operation_naming_it() {
        assert_eq!(choice(""), Ok(Choice::Sqlite), "SQLite unless told otherwise");
        assert_eq!(choice("sqlite"), Ok(Choice::Sqlite));
        assert_eq!(choice(" key-value "), Ok(Choice::KeyValue));
        let why = choice("redis").unwrap_err();
        assert!(why.contains("`agent_zero_store` is `redis`") && why.contains("`sqlite` or `key-value`"), "{why}");
        let store = SpinStore::Unknown(why.clone());
        assert_eq!(block_on(store.get("task/a")), Err(KvError::Unavailable(why.clone())));
        assert_eq!(block_on(store.probe_atomicity()), Err(why));
        assert!(!store.transacts(&["task/a"]), "no transaction offered");
    }
}
