//! The run bounds as deployment settings (the reference's scheduler: 4
//! tasks running, 100 queued, 1 running per repository) and the queue's
//! bound at creation.
//!
//! The running bounds are the engine's ([`agent_zero_engine::Bounds`]): a
//! task leaves `queued` only holding a running slot. The queue's bound is
//! checked here, before anything is stored: the `queued` bucket of the
//! task index is counted (one list of at most `AGENT_ZERO_MAX_QUEUED`
//! keys, no read), and a creation that would go over it is refused with
//! 503 `queue_full` naming the setting, with `Retry-After`. Where the index
//! lists eventually (Workers KV, about 60 s), creations racing within that
//! lag may go a little over it: the bound is back-pressure, not a
//! guarantee, unlike the running bounds.

use agent_zero_contracts::TaskState;
use agent_zero_engine::Bounds;
use agent_zero_ports::KeyValue;

use crate::Config;
use crate::error::{ApiError, ErrorCode};

/// Tasks running at once (default 4).
pub(crate) const MAX_RUNNING: &str = "AGENT_ZERO_MAX_RUNNING";
/// Tasks running at once per repository (default 1).
pub(crate) const MAX_RUNNING_PER_REPOSITORY: &str = "AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY";
/// Tasks `queued` at once (default 100).
pub(crate) const MAX_QUEUED: &str = "AGENT_ZERO_MAX_QUEUED";

/// Most running slots: a start reads every one of them.
const RUNNING_CEILING: u32 = 64;
/// Most queued tasks: the count is one list page (Workers KV's largest).
const QUEUED_CEILING: u32 = crate::task_counters::COUNT_LIMIT as u32;

/// How long a refused creator is told to wait (seconds).
const RETRY_AFTER_SECS: u32 = 60;

/// Parses the three settings; the error names the variable at fault.
pub(crate) fn from_config(config: &Config) -> Result<Bounds, ApiError> {
    let defaults = Bounds::default();
    let max_running = count(config, MAX_RUNNING, defaults.max_running, RUNNING_CEILING)?;
    let per_repository =
        count(config, MAX_RUNNING_PER_REPOSITORY, defaults.max_running_per_repository, RUNNING_CEILING)?;
    if per_repository > max_running {
        return Err(misconfigured(
            MAX_RUNNING_PER_REPOSITORY,
            format!("{MAX_RUNNING_PER_REPOSITORY} ({per_repository}) is over {MAX_RUNNING} ({max_running})"),
        ));
    }
    let max_queued = count(config, MAX_QUEUED, defaults.max_queued, QUEUED_CEILING)?;
    Ok(Bounds { max_running, max_running_per_repository: per_repository, max_queued, ..defaults })
}

fn count(config: &Config, name: &str, default: u32, ceiling: u32) -> Result<u32, ApiError> {
    let Some(text) = config.get(name).map(str::trim).filter(|t| !t.is_empty()) else { return Ok(default) };
    match text.parse::<u32>() {
        Ok(n) if (1..=ceiling).contains(&n) => Ok(n),
        _ => Err(misconfigured(name, format!("{name} must be a whole number from 1 to {ceiling}"))),
    }
}

fn misconfigured(name: &str, message: String) -> ApiError {
    ApiError::new(ErrorCode::NotConfigured, message).with_field(name)
}

/// Refuses a new task when `bounds.max_queued` tasks are `queued` already
/// (one list, no read); a store that fails to list refuses nothing: the
/// creation's own writes then answer for the store.
pub(crate) async fn check_queue<K: KeyValue>(kv: &K, bounds: &Bounds) -> Result<(), ApiError> {
    let prefix = crate::task_index::state_prefix(None, TaskState::Queued);
    let limit = bounds.max_queued as usize;
    let Ok(page) = kv.list(&prefix, None, limit).await else { return Ok(()) };
    if page.keys.len() < limit {
        return Ok(());
    }
    let mut refused = ApiError::new(
        ErrorCode::QueueFull,
        format!(
            "{} tasks are queued, as many as {MAX_QUEUED} allows: nothing was stored; try again once some have started",
            bounds.max_queued
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

    fn parsed(pairs: &[(&str, &str)]) -> Result<Bounds, ApiError> {
        from_config(&Config::from_pairs(pairs.iter().copied()))
    }

    #[test]
    fn the_defaults_are_the_references() {
        let b = parsed(&[]).unwrap();
        assert_eq!((b.max_running, b.max_queued, b.max_running_per_repository), (4, 100, 1));
        let b = parsed(&[(MAX_RUNNING, "8"), (MAX_RUNNING_PER_REPOSITORY, "2"), (MAX_QUEUED, "10")]).unwrap();
        assert_eq!((b.max_running, b.max_queued, b.max_running_per_repository), (8, 10, 2));
    }

    #[test]
    fn a_malformed_bound_is_refused_naming_its_variable() {
        for (pairs, field, says) in [
            (&[(MAX_RUNNING, "0")][..], MAX_RUNNING, "from 1 to 64"),
            (&[(MAX_RUNNING, "many")][..], MAX_RUNNING, "from 1 to 64"),
            (&[(MAX_QUEUED, "1001")][..], MAX_QUEUED, "from 1 to 1000"),
            (&[(MAX_QUEUED, "-1")][..], MAX_QUEUED, "from 1 to 1000"),
            (&[(MAX_RUNNING, "2"), (MAX_RUNNING_PER_REPOSITORY, "3")][..], MAX_RUNNING_PER_REPOSITORY, "is over"),
        ] {
            let e = parsed(pairs).unwrap_err();
            assert_eq!(e.code, ErrorCode::NotConfigured);
            assert_eq!(e.field.as_deref(), Some(field), "{pairs:?}");
            assert!(e.message.contains(says), "{}", e.message);
            assert!(!e.message.contains("many"), "never the value: {}", e.message);
        }
    }

    #[test]
    fn a_creation_over_the_queue_is_refused_naming_the_bound() {
        let kv = MemoryKv::new();
        let bounds = Bounds { max_queued: 2, ..Bounds::default() };
        let prefix = crate::task_index::state_prefix(None, TaskState::Queued);
        block_on(kv.put(&format!("{prefix}a"), b"")).unwrap();
        assert_eq!(block_on(check_queue(&kv, &bounds)), Ok(()), "one queued of two");
        block_on(kv.put(&format!("{prefix}b"), b"")).unwrap();
        let refused = block_on(check_queue(&kv, &bounds)).unwrap_err();
        assert_eq!(refused.code.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.field.as_deref(), Some(MAX_QUEUED));
        assert!(refused.message.contains("2 tasks are queued"), "{}", refused.message);
        assert_eq!(refused.headers, vec![(http::header::RETRY_AFTER, "60".to_owned())]);
    }
}
