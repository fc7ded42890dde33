//! The run bounds, as the reference's scheduler has them (4 tasks running
//! at once, 1 per repository): a task leaves `queued` only holding one of
//! the deployment's running slots and one of its repository's. A task over
//! either bound stays `queued`, and its tick runs again later having done
//! nothing (the same seq, as a poll of running checks does): no external
//! effect, no commit, no work lost.
//!
//! Layout: `task/~run/all/{i:03}` for each of [`Bounds::max_running`]
//! slots and `task/~run/repo/{owner}/{name}/{j:03}` (lowercased: GitHub's
//! names are case-insensitive) for each of
//! [`Bounds::max_running_per_repository`], each a [`Slot`]: the task that
//! holds it, since and until when. `~` is in no task id, so on Cloudflare
//! these keys are one `TaskStore` object of their own (`~run`): strongly
//! consistent, read and taken in one transaction (one request when the
//! first slot of each group is free, the usual case; two otherwise), and
//! given back in one; on Spin each key is one conditional write
//! (`wasi:keyvalue/atomics`). Of two tasks racing for a repository's last
//! slot, one write succeeds and the other task waits.
//!
//! A slot is free when its key is absent or its deadline has passed. The
//! tick that makes its holder quiet (finished, or waiting for a person)
//! releases it; a holder that crashed before releasing is found by
//! [`reconcile`] (the sweep), which frees the slot of a quiet holder, and
//! the deadline (the run's `agent.timeoutMs` plus [`HOLD_GRACE_MS`] after
//! the start) frees it at the latest.

use agent_zero_ports::{KeyValue, KvError};
use serde::{Deserialize, Serialize};

use crate::resident::Resident;
use crate::store::{Store, StoreError, TickStats};

/// Prefix of every slot key.
pub const SLOTS_PREFIX: &str = "task/~run/";

/// How long past the run's `agent.timeoutMs` a slot is held at most: a
/// run that timed out still releases its sandbox and publishes its result.
pub const HOLD_GRACE_MS: u64 = 30 * 60_000;

/// Longest wait between two tries of a task over a bound.
pub const MAX_WAIT_MS: u64 = 60_000;

/// How many tasks may run, and wait (the deployment's settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Tasks out of `queued` and not yet quiet, in all
    /// (`AGENT_ZERO_MAX_RUNNING`).
    pub max_running: u32,
    /// The same, per repository (`AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY`).
    pub max_running_per_repository: u32,
    /// Tasks `queued` at once; a creation over it is refused by the host
    /// (`AGENT_ZERO_MAX_QUEUED`).
    pub max_queued: u32,
    /// The shortest wait before a task over a bound tries again; the wait
    /// grows with the time it has waited, up to [`MAX_WAIT_MS`].
    pub wait_ms: u64,
}

impl Default for Bounds {
    /// The reference's: 4 running, 100 queued, 1 per repository.
    fn default() -> Self {
        Self { max_running: 4, max_running_per_repository: 1, max_queued: 100, wait_ms: 5_000 }
    }
}

/// Who holds a slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Slot {
    task_id: String,
    since_ms: u64,
    until_ms: u64,
}

/// A released slot where the store cannot remove a key conditionally:
/// held by nobody, expired.
const FREE: &[u8] = br#"{"taskId":"","sinceMs":0,"untilMs":0}"#;

/// What the gate says of a task about to leave `queued`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gate {
    /// It holds its slots: it may start.
    Start,
    /// Over a bound: try again after `delay_ms`; `reason` names the bound.
    Wait { delay_ms: u64, reason: String },
}

/// The keys of the deployment's running slots.
fn running_keys(bounds: &Bounds) -> Vec<String> {
    (0..bounds.max_running).map(|i| format!("{SLOTS_PREFIX}all/{i:03}")).collect()
}

/// The keys of `repository`'s running slots.
fn repository_keys(bounds: &Bounds, repository: &str) -> Vec<String> {
    let repository = repository.to_ascii_lowercase();
    (0..bounds.max_running_per_repository).map(|j| format!("{SLOTS_PREFIX}repo/{repository}/{j:03}")).collect()
}

/// The holder of a live slot.
fn holder(bytes: Option<&[u8]>, now_ms: u64) -> Option<Slot> {
    let slot: Slot = agent_zero_contracts::json::from_slice(bytes?).ok()?;
    (!slot.task_id.is_empty() && now_ms < slot.until_ms).then_some(slot)
}

/// Of one group of slots: already ours, the first free one, or how many
/// hold them all.
enum Pick<'a> {
    Mine,
    Free { key: &'a str, old: Option<&'a [u8]> },
    Full,
}

fn pick<'a>(keys: &'a [String], values: &'a [Option<Vec<u8>>], id: &str, now_ms: u64) -> Pick<'a> {
    let mut free = None;
    for (key, value) in keys.iter().zip(values) {
        match holder(value.as_deref(), now_ms) {
            Some(slot) if slot.task_id == id => return Pick::Mine,
            Some(_) => {}
            None if free.is_none() => free = Some(Pick::Free { key, old: value.as_deref() }),
            None => {}
        }
    }
    free.unwrap_or(Pick::Full)
}

/// Takes the slots `resident` needs to leave `queued` at `now_ms`, or says
/// how long to wait. Already holding them (a redelivered tick) is a start.
pub(crate) async fn gate<K: KeyValue>(
    store: &Store<'_, K>,
    bounds: &Bounds,
    resident: &Resident,
    now_ms: u64,
) -> Result<Gate, KvError> {
    let Some(stimulus) = resident.stimulus.as_deref() else { return Ok(Gate::Start) };
    let (id, repository) = (stimulus.task_id.as_str(), stimulus.repository.as_str());
    let waited = now_ms.saturating_sub(resident.started_ms);
    let wait = |reason: String| Gate::Wait {
        delay_ms: (waited / 6).clamp(bounds.wait_ms, MAX_WAIT_MS.max(bounds.wait_ms)),
        reason,
    };
    let (ours, all) = (repository_keys(bounds, repository), running_keys(bounds));
    let (Some(our_first), Some(first)) = (ours.first(), all.first()) else {
        return Ok(wait("a running bound is 0".into()));
    };
    let keys: Vec<&str> = ours.iter().chain(&all).map(String::as_str).collect();
    let mine = held_by(resident, now_ms)?;
    // The usual case, in one request where the store has transactions: the
    // first slot of each group is free, and taken as the slots are read.
    let usual = [our_first.as_str(), first.as_str()];
    let expect = usual.map(|key| (key, None));
    let writes = usual.map(|key| (key, Some(mine.as_slice())));
    let values = match store.read_and_transact(&keys, &expect, &writes).await? {
        Some((_, true)) => return Ok(Gate::Start),
        Some((values, false)) => values,
        None => store.get_many(&keys).await?,
    };
    let (our_values, all_values) = values.split_at(ours.len());
    let mut takes = Vec::with_capacity(2);
    for (picked, full) in [
        (
            pick(&ours, our_values, id, now_ms),
            format!(
                "{} task(s) of `{repository}` are running, as many as AGENT_ZERO_MAX_RUNNING_PER_REPOSITORY allows",
                bounds.max_running_per_repository
            ),
        ),
        (
            pick(&all, all_values, id, now_ms),
            format!("{} tasks are running, as many as AGENT_ZERO_MAX_RUNNING allows", bounds.max_running),
        ),
    ] {
        match picked {
            Pick::Mine => {}
            Pick::Free { key, old } => takes.push((key, old)),
            Pick::Full => return Ok(wait(full)),
        }
    }
    if takes.is_empty() {
        return Ok(Gate::Start);
    }
    let raced = || wait(format!("another task took a free running slot first (`{repository}`)"));
    let writes: Vec<agent_zero_ports::Write<'_>> = takes.iter().map(|(key, _)| (*key, Some(mine.as_slice()))).collect();
    match store.transact(&takes, &writes).await? {
        Some(true) => return Ok(Gate::Start),
        Some(false) => return Ok(raced()),
        None => {}
    }
    // One key at a time: the repository's slot first; what this try took
    // is given back when the next one is gone.
    for (n, (key, old)) in takes.iter().enumerate() {
        if !store.swap(key, *old, &mine).await? {
            for (taken, _) in &takes[..n] {
                let _ = store.swap(taken, Some(&mine), FREE).await;
            }
            return Ok(raced());
        }
    }
    Ok(Gate::Start)
}

/// The slot `resident`'s task holds when it took it at `since_ms`: until
/// its `agent.timeoutMs` and [`HOLD_GRACE_MS`] later. Taken at the tick
/// that leaves `queued`, `since_ms` is the run's start, so the value is
/// known again when the task gives it back.
fn held_by(resident: &Resident, since_ms: u64) -> Result<Vec<u8>, KvError> {
    let stimulus = resident.stimulus.as_deref().ok_or_else(|| KvError::Backend("no stimulus".into()))?;
    let until_ms = since_ms.saturating_add(stimulus.policy.agent.timeout_ms).saturating_add(HOLD_GRACE_MS);
    let slot = Slot { task_id: stimulus.task_id.clone(), since_ms, until_ms };
    serde_json::to_vec(&slot).map_err(|e| KvError::Backend(e.to_string()))
}

/// Gives back the slots `resident`'s task holds (it is quiet now): how
/// many it held.
pub(crate) async fn release<K: KeyValue>(
    store: &Store<'_, K>,
    bounds: &Bounds,
    resident: &Resident,
    now_ms: u64,
) -> Result<usize, KvError> {
    let Some(stimulus) = resident.stimulus.as_deref() else { return Ok(0) };
    let (ours, all) = (repository_keys(bounds, &stimulus.repository), running_keys(bounds));
    // The usual case: the first slot of each group, taken when the run
    // started, given back without a read (in one request where the store
    // has transactions, else one conditional write each).
    if let (Some(our_first), Some(first)) = (ours.first(), all.first()) {
        let mine = held_by(resident, resident.started_ms)?;
        let usual = [our_first.as_str(), first.as_str()];
        let expect = usual.map(|key| (key, Some(mine.as_slice())));
        match store.transact(&expect, &usual.map(|key| (key, None))).await? {
            Some(true) => return Ok(2),
            Some(false) => {}
            None => {
                if store.swap(our_first, Some(&mine), FREE).await? && store.swap(first, Some(&mine), FREE).await? {
                    return Ok(2);
                }
            }
        }
    }
    let keys: Vec<&str> = ours.iter().chain(&all).map(String::as_str).collect();
    let values = store.get_many(&keys).await?;
    let held: Vec<(&str, &[u8])> = keys
        .iter()
        .zip(&values)
        .filter_map(|(key, value)| {
            let value = value.as_deref()?;
            holder(Some(value), now_ms).filter(|slot| slot.task_id == stimulus.task_id).map(|_| (*key, value))
        })
        .collect();
    free(store, &held).await?;
    Ok(held.len())
}

/// Frees each of `held` (key and the value it still holds).
async fn free<K: KeyValue>(store: &Store<'_, K>, held: &[(&str, &[u8])]) -> Result<(), KvError> {
    if held.is_empty() {
        return Ok(());
    }
    let expect: Vec<agent_zero_ports::Expect<'_>> = held.iter().map(|(key, value)| (*key, Some(*value))).collect();
    let writes: Vec<agent_zero_ports::Write<'_>> = held.iter().map(|(key, _)| (*key, None)).collect();
    if store.transact(&expect, &writes).await?.is_none() {
        for (key, value) in held {
            store.swap(key, Some(value), FREE).await?;
        }
    }
    Ok(())
}

/// What [`reconcile`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotSweep {
    /// The slots freed: their holder is quiet, or gone.
    pub freed: Vec<String>,
    pub stats: TickStats,
}

/// Frees every slot whose holder is quiet (it crashed between the commit
/// that made it so and its release) or gone (removed by retention), read
/// from each live holder's checkpoint: one list, one read of each slot and
/// of each holder. A holder whose checkpoint is missing is left until
/// `grace_ms` after it took the slot (its first checkpoint may lag).
pub async fn reconcile<K: KeyValue>(kv: &K, now_ms: u64, grace_ms: u64) -> Result<SlotSweep, StoreError> {
    let store = Store::new(kv);
    let mut report = SlotSweep::default();
    let page = store.list(SLOTS_PREFIX, None, 1000).await?;
    for key in page.keys {
        let Some(bytes) = store.get_many(&[&key]).await?.pop().flatten() else { continue };
        let Some(slot) = holder(Some(&bytes), now_ms) else { continue };
        let quiet = match store.meta(&slot.task_id).await? {
            Some(meta) => meta.quiet,
            None => slot.since_ms.saturating_add(grace_ms) <= now_ms,
        };
        if quiet {
            free(&store, &[(&key, &bytes)]).await?;
            report.freed.push(key);
        }
    }
    store.count_into(&mut report.stats);
    Ok(report)
}

#[cfg(test)]
#[path = "slots_tests.rs"]
mod tests;
