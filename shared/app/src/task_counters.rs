//! The dashboard's counters: tasks running, queued, waiting for a person
//! (`needs-human`) and failed in the last day, counted from the task index
//! (`crate::task_index`) at a bounded cost, whatever the number of tasks.
//!
//! Each counter is the number of keys of one index listing, one page of at
//! most [`COUNT_LIMIT`] keys (Workers KV's largest page, so one list
//! operation): the `running` bucket (every state in [`RUNNING`]),
//! `queued`, `needs-human`, and the failed keys, newest failure first,
//! counted down to the first failure older than a day. That is four list
//! operations and no read per view. A listing with more keys than that
//! makes its counter a lower bound ([`Count::more`], shown `1000+`).
//!
//! Keys are counted, not summaries read: a key whose move is not visible
//! yet (the index's own caveat) may count a task in its old state for as
//! long as the listing lags. Time is an argument (`now_ms`).

use agent_zero_contracts::TaskState;
use agent_zero_ports::KeyValue;

use crate::task_index::{self, IndexError};

/// Most keys one counter reads (one Workers KV list operation).
pub const COUNT_LIMIT: usize = 1000;
/// How far back "failed in the last day" looks.
pub const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// The states a task is running in (neither waiting nor finished).
pub const RUNNING: [TaskState; 7] = [
    TaskState::Discovering,
    TaskState::Understanding,
    TaskState::Validating,
    TaskState::Planning,
    TaskState::Executing,
    TaskState::Verifying,
    TaskState::Reviewing,
];

/// How many tasks one counter found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    /// The tasks counted.
    pub n: u64,
    /// More were not read: `n` is a lower bound.
    pub more: bool,
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.n, if self.more { "+" } else { "" })
    }
}

/// The dashboard's counters, over every repository or one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// In one of the [`RUNNING`] states.
    pub running: Count,
    /// `queued`: created, no tick has moved it yet.
    pub queued: Count,
    /// `needs-human`: waiting for an approval.
    pub waiting: Count,
    /// Moved to `failed` within [`DAY_MS`] before `now_ms`.
    pub failed_last_day: Count,
}

/// The counters of every repository (`None`) or of `repository`, at
/// `now_ms`: four listings of at most [`COUNT_LIMIT`] keys, no read.
pub async fn count<K: KeyValue>(kv: &K, repository: Option<&str>, now_ms: u64) -> Result<Counters, IndexError> {
    // One bucket holds every running state.
    let running = keys_in(kv, &task_index::state_prefix(repository, RUNNING[0])).await?;
    let queued = keys_in(kv, &task_index::state_prefix(repository, TaskState::Queued)).await?;
    let waiting = keys_in(kv, &task_index::state_prefix(repository, TaskState::NeedsHuman)).await?;
    let failed_last_day = failed_since(kv, repository, now_ms.saturating_sub(DAY_MS)).await?;
    Ok(Counters { running, queued, waiting, failed_last_day })
}

/// The keys under `prefix`, up to [`COUNT_LIMIT`].
async fn keys_in<K: KeyValue>(kv: &K, prefix: &str) -> Result<Count, IndexError> {
    let page = kv.list(prefix, None, COUNT_LIMIT).await?;
    Ok(Count { n: page.keys.len() as u64, more: page.cursor.is_some() })
}

/// The failures at or after `since_ms`: the failed keys sort newest
/// failure first, so the count stops at the first older one.
async fn failed_since<K: KeyValue>(kv: &K, repository: Option<&str>, since_ms: u64) -> Result<Count, IndexError> {
    let prefix = task_index::failed_prefix(repository);
    let page = kv.list(&prefix, None, COUNT_LIMIT).await?;
    let mut n = 0;
    for key in &page.keys {
        let at = key.strip_prefix(prefix.as_str()).and_then(task_index::failed_at);
        match at {
            Some(at) if at >= since_ms => n += 1,
            Some(_) => return Ok(Count { n, more: false }),
            None => {}
        }
    }
    Ok(Count { n, more: page.cursor.is_some() })
}

#[cfg(test)]
#[path = "task_counters_tests.rs"]
mod tests;
