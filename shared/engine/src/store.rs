//! The KV layout of tasks, and the one place that reads and writes it.
//!
//! - `task/{id}/log/{seq:010}`: one [`Entry`] per committed tick, inserted
//!   with [`KeyValue::put_if_absent`]: of any number of ticks, approvals or
//!   deliveries racing for one seq, exactly one commits.
//! - `task/{id}/claim/{seq:010}`: the [`Claim`] a tick takes on its seq
//!   before any external effect, with a deadline from the step's own bound;
//!   a duplicate leaves a live claim alone, a claim past its deadline is
//!   superseded by compare-and-swap, and a superseded tick's commit is
//!   refused.
//! - `task/{id}/meta`: a [`Meta`] summary and fold checkpoint, rewritten by
//!   the single writer; losing it (or reading a stale one) costs a longer
//!   fold, never correctness.
//!
//! How the sweep finds a tick lost between a commit and its enqueue
//! depends on the store:
//!
//! - Where a task's keys can be written together ([`KeyValue::transact`]:
//!   a task's Durable Object), the checkpoint is written in the same
//!   request as each entry and carries the next tick's due time
//!   ([`Meta::due_ms`]); `active/{id}` names a task that has one (written
//!   before the commit that makes the task runnable, removed after the one
//!   that makes it quiet). The sweep lists `active/` and reads each such
//!   task's checkpoint and claim: no per-tick marker, so a tick writes
//!   nothing outside its task.
//! - Elsewhere (Spin's store, one key per request), `pending/{id}/{seq:010}`
//!   holds the due time of the tick expected to write `seq`, written after
//!   each commit and removed by the next; the sweep lists `pending/`.
//!
//! Everything under `task/{id}/` decides what happened, so the host must
//! serve it strongly consistent with real atomic conditional writes (a
//! Durable Object per task on Cloudflare, `wasi:keyvalue/atomics` on Spin);
//! `pending/` and `active/` tolerate eventual consistency.

use std::cell::Cell;

use agent_zero_contracts::{RunMode, TaskState, Trigger};
use agent_zero_ports::{KeyValue, KvError};
use serde::{Deserialize, Serialize};

use crate::fact::Entry;
use crate::resident::Resident;

/// Longest accepted task id, so every key stays under the smallest backend limit.
pub const MAX_TASK_ID_BYTES: usize = 128;

/// Largest value the engine stores: the smallest value limit of the
/// platforms it runs on (Fermyon Cloud and Akamai Functions: 1 MB per
/// key-value value; a Durable Object's value: 2 MB). A log entry over it is
/// never cut: the tick ends the run instead, naming the size
/// ([`StoreError::TooLarge`]); a checkpoint over it is not written (the log
/// is the truth, folds get longer).
pub const MAX_VALUE_BYTES: usize = 1_000_000;

/// The key of log entry `seq` of task `id`.
pub fn log_key(id: &str, seq: u64) -> String {
    format!("task/{id}/log/{seq:010}")
}

/// The key of the claim on seq `seq` of task `id`.
pub fn claim_key(id: &str, seq: u64) -> String {
    format!("task/{id}/claim/{seq:010}")
}

/// The key of the summary and checkpoint of task `id`.
pub fn meta_key(id: &str) -> String {
    format!("task/{id}/meta")
}

/// The key of the pending marker for the tick of task `id` that writes `seq`.
pub fn pending_key(id: &str, seq: u64) -> String {
    format!("{PENDING_PREFIX}{id}/{seq:010}")
}

/// Prefix of every pending marker.
pub const PENDING_PREFIX: &str = "pending/";

/// Prefix of the keys naming the tasks with a tick due, where the
/// checkpoint carries the due time ([`Meta::due_ms`]).
pub const ACTIVE_PREFIX: &str = "active/";

/// The key naming task `id` as having a tick due.
pub fn active_key(id: &str) -> String {
    format!("{ACTIVE_PREFIX}{id}")
}

/// Parses a pending key back into `(task_id, seq)`.
pub(crate) fn parse_pending_key(key: &str) -> Option<(&str, u64)> {
    let rest = key.strip_prefix(PENDING_PREFIX)?;
    let (id, seq) = rest.rsplit_once('/')?;
    if id.is_empty() || seq.len() != 10 {
        return None;
    }
    Some((id, seq.parse().ok()?))
}

/// Whether `id` is usable as a task id: 1..=128 bytes of `[A-Za-z0-9._-]`.
pub fn is_valid_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_TASK_ID_BYTES
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Summary for listings, plus the fold checkpoint at `seq`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// The last seq folded into `resident`.
    pub seq: u64,
    pub state: TaskState,
    pub repository: String,
    pub trigger: Trigger,
    pub mode: RunMode,
    pub created_ms: u64,
    pub updated_ms: u64,
    /// True once nothing more will happen without an approval.
    pub quiet: bool,
    /// When the tick that writes `seq + 1` is due; `None` when quiet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_ms: Option<u64>,
    pub resident: Resident,
}

/// A tick's claim on the seq it will commit: who holds it since when, and
/// until when. Identified by its bytes: a claim is ours while the stored
/// value is the one we wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// When the claim was taken.
    pub at_ms: u64,
    /// Until when no other tick may act for this seq: the step's own bound
    /// plus a margin.
    pub deadline_ms: u64,
    /// The claim this one superseded (its `at_ms`), after a deadline passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes_ms: Option<u64>,
    /// Set by the holder as it commits: a superseding tick after this
    /// point finds its own commit refused by the entry already written.
    #[serde(default)]
    pub committing: bool,
}

/// The outcome of taking a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// The claim is ours (new, or superseding an expired one); the bytes
    /// are what we wrote.
    Ours(Vec<u8>),
    /// Another tick holds a live claim until `until_ms`.
    Held { until_ms: u64 },
    /// The step has no external effect, so takes no claim.
    Unneeded,
}

/// The due time of a pending tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Pending {
    pub due_ms: u64,
}

/// KV operations and port calls of one tick (the cost model, docs/tasks.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TickStats {
    pub kv_reads: u32,
    pub kv_writes: u32,
    pub kv_deletes: u32,
    pub kv_lists: u32,
    /// Log entries folded after the checkpoint.
    pub entries_folded: u32,
    pub model_calls: u32,
    pub sandbox_calls: u32,
    pub publications: u32,
    pub enqueues: u32,
}

impl TickStats {
    /// Every KV operation.
    pub fn kv_operations(&self) -> u32 {
        self.kv_reads + self.kv_writes + self.kv_deletes + self.kv_lists
    }

    /// Outbound requests a host makes for this tick (ports that are HTTP
    /// on the edge: model, sandbox, forge, queue).
    pub fn subrequests(&self) -> u32 {
        self.model_calls + self.sandbox_calls + self.publications + self.enqueues
    }
}

/// Why a record could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The KV backend failed; nothing was committed by this call.
    #[error("task store: {0}")]
    Kv(#[from] KvError),
    /// A stored record is not what this version writes.
    #[error("task store: record `{key}` is corrupt: {reason}")]
    Corrupt { key: String, reason: String },
    /// A record is larger than any platform's store takes; nothing was written.
    #[error(
        "task store: record `{key}` would be {bytes} bytes, over the {MAX_VALUE_BYTES}-byte value limit of the smallest store"
    )]
    TooLarge { key: String, bytes: usize },
}

/// Task records over a [`KeyValue`], counting every operation.
#[derive(Debug)]
pub(crate) struct Store<'k, K> {
    kv: &'k K,
    reads: Cell<u32>,
    writes: Cell<u32>,
    deletes: Cell<u32>,
    lists: Cell<u32>,
}

/// What a tick reads before it decides ([`Store::open`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Opened {
    /// The tick's seq is already committed.
    pub committed: bool,
    /// The checkpoint, when present and readable.
    pub meta: Option<Meta>,
    /// The claim on the tick's seq, as stored before this tick's request.
    pub claim: Option<Vec<u8>>,
    /// Our claim, when the tick took it in the same request ([`ClaimAhead`]).
    pub claimed_ahead: Option<Vec<u8>>,
}

/// The longest claim a tick takes ahead ([`Tick::claim_ms`](crate::Tick)):
/// the hint comes from the tick that enqueued it and is clamped, so no
/// message holds a seq longer than this before its step is known.
pub const MAX_CLAIM_AHEAD_MS: u64 = 24 * 60 * 60 * 1000;

/// The claim a tick takes in its first request, before it has folded its
/// log, when its message says how long its step may take: written only
/// while the seq is free and unclaimed, so it is exactly the claim
/// [`Store::claim`] would take on a fresh seq, one request earlier. Its
/// bytes depend only on the tick and `now_ms`, so a read ahead that made
/// the same request first can answer the engine's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimAhead {
    log: String,
    claim: String,
    bytes: Vec<u8>,
    deadline_ms: u64,
}

impl ClaimAhead {
    /// The claim `tick` takes ahead at `now_ms`; `None` without a hint.
    pub fn of(tick: &crate::Tick, now_ms: u64) -> Option<Self> {
        let bound = tick.claim_ms?.min(MAX_CLAIM_AHEAD_MS);
        let (id, seq) = (tick.task_id.as_str(), tick.expected_seq);
        if seq == 0 || !is_valid_task_id(id) {
            return None;
        }
        let deadline_ms = now_ms.saturating_add(bound);
        let claim = Claim { at_ms: now_ms, deadline_ms, supersedes_ms: None, committing: false };
        let bytes = serde_json::to_vec(&claim).ok()?;
        Some(Self { log: log_key(id, seq), claim: claim_key(id, seq), bytes, deadline_ms })
    }

    /// The conditions: the seq is not committed, nor claimed.
    pub fn expect(&self) -> [agent_zero_ports::Expect<'_>; 2] {
        [(&self.log, None), (&self.claim, None)]
    }

    /// The write: the claim.
    pub fn write(&self) -> agent_zero_ports::Write<'_> {
        (&self.claim, Some(&self.bytes))
    }

    /// Until when the claim holds.
    pub fn deadline_ms(&self) -> u64 {
        self.deadline_ms
    }
}

/// Whether a task named active has a tick overdue ([`Store::overdue`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overdue {
    /// Not yet (or not readable yet): look again at the next sweep.
    No,
    /// Nothing is due: the task is quiet, or gone.
    Quiet,
    /// Overdue, but a live claim holds the seq: its tick is still within
    /// its own bound.
    Claimed,
    /// The tick that writes this seq is overdue.
    Due(u64),
}

/// Why reading the log for a fold stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EntriesError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Fold(#[from] crate::resident::FoldError),
}

/// Whether an append found its key free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Append {
    Committed,
    /// Another delivery already committed this seq.
    Taken,
}

impl<'k, K: KeyValue> Store<'k, K> {
    pub(crate) fn new(kv: &'k K) -> Self {
        Self { kv, reads: Cell::new(0), writes: Cell::new(0), deletes: Cell::new(0), lists: Cell::new(0) }
    }

    /// Adds this store's counts to `stats`.
    pub(crate) fn count_into(&self, stats: &mut TickStats) {
        stats.kv_reads += self.reads.get();
        stats.kv_writes += self.writes.get();
        stats.kv_deletes += self.deletes.get();
        stats.kv_lists += self.lists.get();
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.reads.set(self.reads.get() + 1);
        self.kv.get(key).await
    }

    pub(crate) async fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.writes.set(self.writes.get() + 1);
        self.kv.put(key, value).await
    }

    pub(crate) async fn delete(&self, key: &str) -> Result<(), KvError> {
        self.deletes.set(self.deletes.get() + 1);
        self.kv.delete(key).await
    }

    pub(crate) async fn list(
        &self,
        prefix: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<agent_zero_ports::KeyPage, KvError> {
        self.lists.set(self.lists.get() + 1);
        self.kv.list(prefix, cursor, limit).await
    }

    /// Whether this task's due time rides in its checkpoint, written with
    /// each entry in one request (see the module's layout), rather than in
    /// `pending/` markers.
    pub(crate) fn due_in_checkpoint(&self, id: &str) -> bool {
        self.kv.transacts(&[&log_key(id, 0), &meta_key(id), &claim_key(id, 0)])
    }

    /// Names task `id` as having a tick due (before the commit that makes
    /// it so), at `now_ms`: the key holds when it was written, so a sweep
    /// that finds the task quiet while the commit is still in flight leaves
    /// the key alone ([`Store::active_since`]).
    pub(crate) async fn mark_active(&self, id: &str, now_ms: u64) -> Result<(), KvError> {
        self.put(&active_key(id), now_ms.to_string().as_bytes()).await
    }

    /// When the `active/` key `key` was written; `None` when it is gone or
    /// says no time (treated as old).
    pub(crate) async fn active_since(&self, key: &str) -> Result<Option<u64>, KvError> {
        let value = self.get(key).await?;
        Ok(value.and_then(|bytes| std::str::from_utf8(&bytes).ok()?.parse().ok()))
    }

    /// Whether task `id`'s next tick is overdue at `now_ms` by more than
    /// `grace_ms`, from its checkpoint (one read) and, when it is, from
    /// that seq's entry and claim (one batch).
    pub(crate) async fn overdue(&self, id: &str, now_ms: u64, grace_ms: u64) -> Result<Overdue, StoreError> {
        let Some(meta) = self.meta(id).await? else {
            // No checkpoint: the task is gone (retention), or its first
            // commit has not landed (a creation in flight, or lost).
            // Otherwise the tick after the last entry is the one due; it
            // ends quiet (removing the key) if the task is.
            return Ok(if self.has_entry(id, 0).await? {
                Overdue::Due(self.first_free(id, 1).await?)
            } else {
                Overdue::Quiet
            });
        };
        let Some(due_ms) = meta.due_ms else { return Ok(Overdue::Quiet) };
        if due_ms.saturating_add(grace_ms) > now_ms {
            return Ok(Overdue::No);
        }
        let next = meta.seq + 1;
        let (log, claim) = (log_key(id, next), claim_key(id, next));
        let mut values = self.get_many(&[&log, &claim]).await?.into_iter();
        let (entry, claim_bytes) = (values.next().flatten(), values.next().flatten());
        if entry.is_some() {
            // Committed past the checkpoint (one too large to keep): the
            // tick of the seq after the last one committed is the one due.
            return Ok(Overdue::Due(self.first_free(id, next + 1).await?));
        }
        if let Some(bytes) = claim_bytes {
            let claim: Claim = decode(&claim, &bytes)?;
            if now_ms < claim.deadline_ms {
                return Ok(Overdue::Claimed);
            }
        }
        Ok(Overdue::Due(next))
    }

    /// The first seq from `from` on with no entry, in a few batch reads
    /// whatever the log's length (a lost checkpoint of a 1,000-entry log
    /// read key by key would pass a Worker invocation's 1,000 requests). A
    /// log has no gaps (a seq is committed only once the one before it is),
    /// so its entries from `from` are one run: probed at `from` + 0, 1, 3,
    /// 7 … 2^k − 1, then at up to [`PROBES`] evenly spaced seqs between the
    /// last entry found and the first seq found free, until they are
    /// neighbours. 1,000 entries take three requests.
    pub(crate) async fn first_free(&self, id: &str, from: u64) -> Result<u64, StoreError> {
        /// Seqs read in one request.
        const PROBES: u64 = 64;
        let (mut present, mut free) = (None::<u64>, None::<u64>);
        let mut base = from;
        while free.is_none() {
            let seqs: Vec<u64> = (0..24).map(|k| base.saturating_add((1u64 << k) - 1)).collect();
            let (last, first_free) = self.probe(id, &seqs).await?;
            present = last.or(present);
            free = first_free;
            base = seqs[seqs.len() - 1].saturating_add(1);
        }
        let mut free = free.unwrap_or(from);
        loop {
            let after = present.map_or(from, |seq| seq + 1);
            if after >= free {
                return Ok(free);
            }
            let step = (free - after).div_ceil(PROBES).max(1);
            let seqs: Vec<u64> = (0..PROBES).map(|i| after + i * step).take_while(|seq| *seq < free).collect();
            let (last, first_free) = self.probe(id, &seqs).await?;
            present = last.or(present);
            free = first_free.unwrap_or(free);
        }
    }

    /// Of `seqs` (ascending, within one run of entries), the last with an
    /// entry and the first without, in one batch read.
    async fn probe(&self, id: &str, seqs: &[u64]) -> Result<(Option<u64>, Option<u64>), StoreError> {
        let keys: Vec<String> = seqs.iter().map(|seq| log_key(id, *seq)).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let values = self.get_many(&refs).await?;
        let found = values.iter().take_while(|value| value.is_some()).count();
        Ok((found.checked_sub(1).map(|at| seqs[at]), seqs.get(found).copied()))
    }

    /// Several keys in as few requests as the backend allows, counted as
    /// the backend serves them.
    pub(crate) async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        let requests = if self.kv.reads_in_one_request(keys) { 1 } else { keys.len() as u32 };
        self.reads.set(self.reads.get() + requests);
        self.kv.get_many(keys).await
    }

    /// What a tick reads before it decides, in one batch: whether its seq
    /// is committed, the checkpoint, and the claim on its seq. With `ahead`,
    /// on a store with transactions, the same request takes the claim.
    pub(crate) async fn open(&self, id: &str, seq: u64, ahead: Option<&ClaimAhead>) -> Result<Opened, StoreError> {
        let (log, meta, claim) = (log_key(id, seq), meta_key(id), claim_key(id, seq));
        let keys = [log.as_str(), meta.as_str(), claim.as_str()];
        let taken = match ahead {
            Some(ahead) if self.kv.transacts(&keys) => {
                match self.kv.read_and_transact(&keys, &ahead.expect(), &[ahead.write()]).await {
                    // Refused before any request: read as a store without it.
                    Err(KvError::Unsupported(_)) => None,
                    taken => {
                        // One request: a write when it wrote, else a read.
                        let (values, written) = taken.inspect_err(|_| self.writes.set(self.writes.get() + 1))?;
                        let counter = if written { &self.writes } else { &self.reads };
                        counter.set(counter.get() + 1);
                        Some((values, written.then(|| ahead.bytes.clone())))
                    }
                }
            }
            _ => None,
        };
        let (values, claimed_ahead) = match taken {
            Some(taken) => taken,
            None => (self.get_many(&keys).await?, None),
        };
        let mut values = values.into_iter();
        let (committed, meta, claim) = (values.next().flatten(), values.next().flatten(), values.next().flatten());
        Ok(Opened {
            committed: committed.is_some(),
            // A corrupt checkpoint is treated as absent: the log is the truth.
            meta: meta.and_then(|bytes| agent_zero_codecs::json::from_slice(&bytes).ok()),
            claim,
            claimed_ahead,
        })
    }

    /// Moves the deadline of our claim (`mine`, taken ahead) to
    /// `deadline_ms`, when the step turned out longer than the hint: the
    /// new bytes, or `None` when the claim is not ours any more.
    pub(crate) async fn extend_claim(
        &self,
        id: &str,
        seq: u64,
        mine: &[u8],
        deadline_ms: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let key = claim_key(id, seq);
        let longer = Claim { deadline_ms, ..decode::<Claim>(&key, mine)? };
        let bytes = encode(&key, &longer)?;
        self.writes.set(self.writes.get() + 1);
        Ok(self.kv.compare_and_swap(&key, Some(mine), &bytes).await?.then_some(bytes))
    }

    /// Log entries `from..to`, in order, read in batches; `Err(at)` names
    /// the first one missing.
    pub(crate) async fn entries(
        &self,
        id: &str,
        from: u64,
        to: u64,
        mut each: impl FnMut(Entry) -> Result<(), crate::resident::FoldError>,
    ) -> Result<Result<(), u64>, EntriesError> {
        /// Entries per request: a cold fold of 1,000 entries is 16 requests
        /// to a task's Durable Object, well inside a Worker invocation's
        /// 1,000 subrequests, and at most 64 MB of values in the largest case.
        const BATCH: u64 = 64;
        let mut at = from;
        while at < to {
            let end = to.min(at + BATCH);
            let keys: Vec<String> = (at..end).map(|seq| log_key(id, seq)).collect();
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            let values = self.get_many(&refs).await.map_err(StoreError::from)?;
            for ((seq, key), value) in (at..end).zip(&keys).zip(values) {
                let Some(bytes) = value else { return Ok(Err(seq)) };
                let entry: Entry = decode(key, &bytes)?;
                if entry.seq != seq {
                    return Err(
                        StoreError::Corrupt { key: key.clone(), reason: format!("holds seq {}", entry.seq) }.into()
                    );
                }
                each(entry)?;
            }
            at = end;
        }
        Ok(Ok(()))
    }

    /// Commits `entry`, the checkpoint `meta` and the caller's `views` (keys
    /// of the task derived from its state) in one atomic request, if
    /// the backend can: only while our claim (`mine`) still holds and the
    /// seq is free, marking the claim committing as the single-key path
    /// does. `None` when the backend has no such transaction (nothing was
    /// done); `Some(false)` when the claim or the seq was taken.
    pub(crate) async fn commit_at_once(
        &self,
        id: &str,
        entry: &Entry,
        mine: Option<&[u8]>,
        meta: &Meta,
        views: &[(String, Vec<u8>)],
    ) -> Result<Option<bool>, StoreError> {
        let (log, claim) = (log_key(id, entry.seq), claim_key(id, entry.seq));
        let bytes = encode(&log, entry)?;
        if bytes.len() > MAX_VALUE_BYTES {
            return Err(StoreError::TooLarge { key: log, bytes: bytes.len() });
        }
        let committing = match mine {
            Some(mine) => Some(encode(&claim, &Claim { committing: true, ..decode::<Claim>(&claim, mine)? })?),
            None => None,
        };
        // The checkpoint rides along when it fits; otherwise folds get longer.
        let checkpoint = serde_json::to_vec(meta).ok().filter(|m| m.len() <= MAX_VALUE_BYTES);
        let meta_key = meta_key(id);
        let mut expect: Vec<agent_zero_ports::Expect<'_>> = vec![(&log, None)];
        let mut writes: Vec<agent_zero_ports::Write<'_>> = Vec::with_capacity(3);
        if let (Some(mine), Some(committing)) = (mine, &committing) {
            expect.push((&claim, Some(mine)));
            writes.push((&claim, Some(committing)));
        }
        writes.push((&log, Some(&bytes)));
        if let Some(checkpoint) = &checkpoint {
            writes.push((&meta_key, Some(checkpoint)));
        }
        writes.extend(views.iter().map(|(key, value)| (key.as_str(), Some(value.as_slice()))));
        match self.kv.transact(&expect, &writes).await {
            Err(KvError::Unsupported(_)) => Ok(None),
            Err(e) => {
                self.writes.set(self.writes.get() + 1);
                Err(e.into())
            }
            Ok(written) => {
                self.writes.set(self.writes.get() + 1);
                Ok(Some(written))
            }
        }
    }

    /// Log entry `seq`, if committed.
    pub(crate) async fn entry(&self, id: &str, seq: u64) -> Result<Option<Entry>, StoreError> {
        let key = log_key(id, seq);
        let Some(bytes) = self.get(&key).await? else { return Ok(None) };
        let entry: Entry = decode(&key, &bytes)?;
        if entry.seq != seq {
            return Err(StoreError::Corrupt { key, reason: format!("holds seq {}", entry.seq) });
        }
        Ok(Some(entry))
    }

    /// Whether log entry `seq` exists.
    pub(crate) async fn has_entry(&self, id: &str, seq: u64) -> Result<bool, StoreError> {
        Ok(self.get(&log_key(id, seq)).await?.is_some())
    }

    /// Inserts `entry` under its seq's key only if the seq is free, as one
    /// atomic step of the backend. `Taken` means another writer won: the
    /// caller stops without side effects.
    pub(crate) async fn append(&self, id: &str, entry: &Entry) -> Result<Append, StoreError> {
        let key = log_key(id, entry.seq);
        let bytes = encode(&key, entry)?;
        if bytes.len() > MAX_VALUE_BYTES {
            return Err(StoreError::TooLarge { key, bytes: bytes.len() });
        }
        self.writes.set(self.writes.get() + 1);
        if self.kv.put_if_absent(&key, &bytes).await? { Ok(Append::Committed) } else { Ok(Append::Taken) }
    }

    /// Takes the claim on `seq` of task `id` at `now_ms` until `deadline_ms`:
    /// a free seq is claimed; a live claim is left alone (`Held`); a claim
    /// past its deadline is superseded by compare-and-swap, so of two
    /// ticks superseding at once, one wins. `existing` is the claim's bytes
    /// as the caller just read them ([`Store::open`]).
    pub(crate) async fn claim(
        &self,
        id: &str,
        seq: u64,
        existing: Option<Vec<u8>>,
        now_ms: u64,
        deadline_ms: u64,
    ) -> Result<Claimed, StoreError> {
        let key = claim_key(id, seq);
        let held = |bytes: &[u8]| -> Result<Claim, StoreError> { decode(&key, bytes) };
        let mut mine = Claim { at_ms: now_ms, deadline_ms, supersedes_ms: None, committing: false };
        let expected = match &existing {
            Some(bytes) => {
                let current = held(bytes)?;
                if now_ms < current.deadline_ms {
                    return Ok(Claimed::Held { until_ms: current.deadline_ms });
                }
                mine.supersedes_ms = Some(current.at_ms);
                Some(bytes.as_slice())
            }
            None => None,
        };
        let bytes = encode(&key, &mine)?;
        self.writes.set(self.writes.get() + 1);
        if self.kv.compare_and_swap(&key, expected, &bytes).await? {
            return Ok(Claimed::Ours(bytes));
        }
        // Lost a race: whoever won holds it now.
        match self.get(&key).await? {
            Some(bytes) => Ok(Claimed::Held { until_ms: held(&bytes)?.deadline_ms }),
            None => Ok(Claimed::Held { until_ms: deadline_ms }),
        }
    }

    /// Marks our claim (`mine`, the bytes we wrote) as committing; `false`
    /// when it was superseded meanwhile, and the commit must not happen.
    pub(crate) async fn begin_commit(&self, id: &str, seq: u64, mine: &[u8]) -> Result<bool, StoreError> {
        let key = claim_key(id, seq);
        let mut claim: Claim = decode(&key, mine)?;
        claim.committing = true;
        let bytes = encode(&key, &claim)?;
        self.writes.set(self.writes.get() + 1);
        Ok(self.kv.compare_and_swap(&key, Some(mine), &bytes).await?)
    }

    /// Gives up our claim (the bytes we wrote, or the same claim marked
    /// committing) after a failed commit, by expiring it at `now_ms`, so the
    /// redelivery that retries the tick can take it at once instead of
    /// waiting out the step's whole bound. `false` when it is not ours any
    /// more (nothing changed).
    pub(crate) async fn release_claim(&self, id: &str, seq: u64, mine: &[u8], now_ms: u64) -> Result<bool, StoreError> {
        let key = claim_key(id, seq);
        let ours: Claim = decode(&key, mine)?;
        let Some(current) = self.get(&key).await? else { return Ok(false) };
        let held: Claim = decode(&key, &current)?;
        if (held.at_ms, held.deadline_ms, held.supersedes_ms) != (ours.at_ms, ours.deadline_ms, ours.supersedes_ms) {
            return Ok(false);
        }
        let expired = Claim { deadline_ms: now_ms.min(ours.deadline_ms), committing: false, ..ours };
        let bytes = encode(&key, &expired)?;
        self.writes.set(self.writes.get() + 1);
        Ok(self.kv.compare_and_swap(&key, Some(&current), &bytes).await?)
    }

    /// The live claim on `seq`, if one holds at `now_ms`.
    pub(crate) async fn live_claim(&self, id: &str, seq: u64, now_ms: u64) -> Result<Option<Claim>, StoreError> {
        let key = claim_key(id, seq);
        let Some(bytes) = self.get(&key).await? else { return Ok(None) };
        let claim: Claim = decode(&key, &bytes)?;
        Ok((now_ms < claim.deadline_ms).then_some(claim))
    }

    /// The summary and checkpoint, when present and readable. A corrupt
    /// meta is treated as absent: the log is the truth.
    pub(crate) async fn meta(&self, id: &str) -> Result<Option<Meta>, KvError> {
        let Some(bytes) = self.get(&meta_key(id)).await? else { return Ok(None) };
        Ok(agent_zero_codecs::json::from_slice(&bytes).ok())
    }

    /// Rewrites the summary. Best effort: callers ignore its failure.
    pub(crate) async fn put_meta(&self, id: &str, meta: &Meta) -> Result<(), KvError> {
        let bytes = serde_json::to_vec(meta).map_err(|e| KvError::Backend(e.to_string()))?;
        if bytes.len() > MAX_VALUE_BYTES {
            return Err(KvError::Backend(format!(
                "the checkpoint is {} bytes, over the {MAX_VALUE_BYTES}-byte value limit: not written",
                bytes.len()
            )));
        }
        self.put(&meta_key(id), &bytes).await
    }

    /// Marks the tick that writes `seq` as due at `due_ms`.
    pub(crate) async fn put_pending(&self, id: &str, seq: u64, due_ms: u64) -> Result<(), KvError> {
        let bytes = serde_json::to_vec(&Pending { due_ms }).map_err(|e| KvError::Backend(e.to_string()))?;
        self.put(&pending_key(id, seq), &bytes).await
    }

    /// The pending marker at `key`, if readable.
    pub(crate) async fn pending(&self, key: &str) -> Result<Option<Pending>, KvError> {
        let Some(bytes) = self.get(key).await? else { return Ok(None) };
        Ok(agent_zero_codecs::json::from_slice(&bytes).ok())
    }
}

fn encode<T: Serialize>(key: &str, value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|e| StoreError::Corrupt { key: key.to_owned(), reason: e.to_string() })
}

fn decode<T: serde::de::DeserializeOwned>(key: &str, bytes: &[u8]) -> Result<T, StoreError> {
    agent_zero_codecs::json::from_slice(bytes)
        .map_err(|e| StoreError::Corrupt { key: key.to_owned(), reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_free_seq_of_a_long_log_is_found_in_a_few_batch_reads() {
        use agent_zero_ports::{KeyValue, MemoryKv, block_on};
        for len in [0u64, 1, 2, 3, 5, 63, 64, 65, 1_000, 4_097] {
            let kv = MemoryKv::new();
            for seq in 0..len {
                block_on(kv.put(&log_key("t", seq), b"{}")).unwrap();
            }
            let store = Store::new(&kv);
            assert_eq!(block_on(store.first_free("t", 1)).unwrap(), len.max(1), "a log of {len}");
            // Galloping, then one narrowing per factor of 64.
            assert!(store.reads.get() <= 4, "{} reads for a log of {len}", store.reads.get());
        }
    }

    #[test]
    fn keys_sort_by_seq_and_parse_back() {
        assert_eq!(log_key("t1", 7), "task/t1/log/0000000007");
        assert!(log_key("t", 9) < log_key("t", 10));
        let key = pending_key("gh-42.a_b", 12);
        assert_eq!(parse_pending_key(&key), Some(("gh-42.a_b", 12)));
        assert_eq!(parse_pending_key("pending/x/12"), None);
        assert_eq!(parse_pending_key("other/x/0000000001"), None);
        assert!(log_key(&"a".repeat(MAX_TASK_ID_BYTES), u64::MAX).len() <= agent_zero_ports::MAX_KEY_BYTES);
    }

    #[test]
    fn task_ids_are_key_safe() {
        assert!(is_valid_task_id("gh-123_ab.c"));
        for bad in ["", "a/b", "a b", "é", &"a".repeat(129)] {
            assert!(!is_valid_task_id(bad), "{bad:?}");
        }
    }
}
