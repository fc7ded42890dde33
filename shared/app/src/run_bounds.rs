//! The run bounds as deployment settings (the reference's scheduler: 4
//! tasks running, 100 queued, 1 running per repository) and the queue's
//! bound at creation.
//!
//! The running bounds are the sandbox pool's: a task leaves `queued` with
//! its lease, and the lease coordinator holds at most
//! `AGENT_ZERO_MAX_RUNNING` leases, `AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY`
//! of one repository (`services::sandbox::pool_config`); over either, the
//! task waits in `queued` (the engine's lease step). One request a run
//! takes the slot and one gives it back, the lease's own.
//!
//! The queue's bound is checked here, before anything is stored: the
//! `queued` bucket of the task index is counted (one list of at most
//! `AGENT_ZERO_MAX_QUEUED` keys, no read), and a creation that would go over
//! it is refused with 503 `queue_full` naming the setting, with
//! `Retry-After`. Where the index lists eventually (Workers KV, about 60 s),
//! creations racing within that lag may go a little over it: the bound is
//! back-pressure, not a guarantee, unlike the running bounds.

use agent_zero_contracts::TaskState;
use agent_zero_ports::KeyValue;

use crate::Config;
use crate::error::{ApiError, ErrorCode};

/// Tasks `queued` at once (default 100).
pub(crate) const MAX_QUEUED: &str = "AGENT_ZERO_MAX_QUEUED";

/// The reference's queue bound.
const DEFAULT_MAX_QUEUED: u32 = 100;
/// Most queued tasks: the count is one list page (Workers KV's largest).
const QUEUED_CEILING: u32 = crate::task_counters::COUNT_LIMIT as u32;

/// How long a refused creator is told to wait (seconds).
const RETRY_AFTER_SECS: u32 = 60;

/// `AGENT_ZERO_MAX_QUEUED`; the error names the variable.
pub(crate) fn max_queued(config: &Config) -> Result<u32, ApiError> {
    let Some(text) = config.get(MAX_QUEUED).map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(DEFAULT_MAX_QUEUED);
    };
    match text.parse::<u32>() {
        Ok(n) if (1..=QUEUED_CEILING).contains(&n) => Ok(n),
        _ => Err(ApiError::new(
            ErrorCode::NotConfigured,
            format!("{MAX_QUEUED} must be a whole number from 1 to {QUEUED_CEILING}"),
        )
        .with_field(MAX_QUEUED)),
    }
}

/// Refuses a new task when `max_queued` tasks are `queued` already (one
/// list, no read); a store that fails to list refuses nothing: the
/// creation's own writes then answer for the store.
pub(crate) async fn check_queue<K: KeyValue>(kv: &K, max_queued: u32) -> Result<(), ApiError> {
    let prefix = crate::task_index::state_prefix(None, TaskState::Queued);
    let limit = max_queued as usize;
    let Ok(page) = kv.list(&prefix, None, limit).await else { return Ok(()) };
    if page.keys.len() < limit {
        return Ok(());
    }
    let mut refused = ApiError::new(
        ErrorCode::QueueFull,
        format!(
            "{max_queued} tasks are queued, as many as {MAX_QUEUED} allows: nothing was stored; try again once some have started"
        ),
    )
    .with_field(MAX_QUEUED);
    refused.headers.push((http::header::RETRY_AFTER, RETRY_AFTER_SECS.to_string()));
    Err(refused)
}

#[cfg(test)]
mod tests {
    use agent_zero_ports::{MemoryKv, block_on};

    use super::*;
    use crate::services::pool_config;

    fn parsed(pairs: &[(&str, &str)]) -> Config {
        Config::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn the_defaults_are_the_references() {
        let pool = pool_config(&parsed(&[])).unwrap();
        assert_eq!((pool.max_active, pool.max_active_per_repository), (4, 1));
        assert_eq!(max_queued(&parsed(&[])), Ok(100));
        let set = [("AGENT_ZERO_MAX_RUNNING", "8"), ("AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY", "2"), (MAX_QUEUED, "10")];
        let pool = pool_config(&parsed(&set)).unwrap();
        assert_eq!((pool.max_active, pool.max_active_per_repository), (8, 2));
        assert_eq!(max_queued(&parsed(&set)), Ok(10));
    }

    #[test]
    fn the_older_sandbox_names_hold_where_the_run_bounds_are_not_set() {
        let older = [("AGENT_ZERO_SANDBOX_MAX_ACTIVE", "6"), ("AGENT_ZERO_SANDBOX_MAX_ACTIVE_PER_REPOSITORY", "3")];
        let pool = pool_config(&parsed(&older)).unwrap();
        assert_eq!((pool.max_active, pool.max_active_per_repository), (6, 3));
        let both = [("AGENT_ZERO_SANDBOX_MAX_ACTIVE", "6"), ("AGENT_ZERO_MAX_RUNNING", "2")];
        assert_eq!(pool_config(&parsed(&both)).unwrap().max_active, 2, "the new name wins");
    }

    #[test]
    fn a_malformed_bound_is_refused_naming_its_variable() {
        for (pairs, field, says) in [
            (&[("AGENT_ZERO_MAX_RUNNING", "0")][..], "AGENT_ZERO_MAX_RUNNING", "at least 1"),
            (&[("AGENT_ZERO_MAX_RUNNING", "many")][..], "AGENT_ZERO_MAX_RUNNING", "at least 1"),
            (
                &[("AGENT_ZERO_MAX_RUNNING", "2"), ("AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY", "3")][..],
                "AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY",
                "is over `AGENT_ZERO_MAX_RUNNING`",
            ),
        ] {
            let e = pool_config(&parsed(pairs)).unwrap_err();
            assert!(e.starts_with(&format!("`{field}`")) && e.contains(says), "{pairs:?}: {e}");
            assert!(!e.contains("many"), "never the value: {e}");
        }
        for value in ["1001", "-7", "none"] {
            let e = max_queued(&parsed(&[(MAX_QUEUED, value)])).unwrap_err();
            assert_eq!(e.code, ErrorCode::NotConfigured);
            assert_eq!(e.field.as_deref(), Some(MAX_QUEUED));
            assert!(e.message.contains("from 1 to 1000"), "{}", e.message);
            assert!(!e.message.contains(value), "never the value: {}", e.message);
        }
    }

    #[test]
    fn a_creation_over_the_queue_is_refused_naming_the_bound() {
        let kv = MemoryKv::new();
        let prefix = crate::task_index::state_prefix(None, TaskState::Queued);
        block_on(kv.put(&format!("{prefix}a"), b"")).unwrap();
        assert_eq!(block_on(check_queue(&kv, 2)), Ok(()), "one queued of two");
        block_on(kv.put(&format!("{prefix}b"), b"")).unwrap();
        let refused = block_on(check_queue(&kv, 2)).unwrap_err();
        assert_eq!(refused.code.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.field.as_deref(), Some(MAX_QUEUED));
        assert!(refused.message.contains("2 tasks are queued"), "{}", refused.message);
        assert_eq!(refused.headers, vec![(http::header::RETRY_AFTER, "60".to_owned())]);
    }
}
