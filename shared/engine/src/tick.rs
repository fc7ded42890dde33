//! One tick: sync, choose the next step, act, commit, yield. A metered
//! tick also records what it cost its host in the entry it commits.

use agent_zero_contracts::{RunCost, TerminalState};
use agent_zero_ports::KeyValue;

use crate::act::{Ports, StepContext, act};
use crate::fact::{Entry, Fact};
use crate::ports::{Decider, Forge, Queue, Tick, Workspace};
use crate::resident::{FoldError, Resident};
use crate::step::{Limits, Step, next_step};
use crate::store::{
    Append, ClaimAhead, Claimed, EntriesError, MAX_VALUE_BYTES, Meta, Store, StoreError, TickStats, active_key,
    is_valid_task_id,
};

/// What the host does after a tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickOutcome {
    /// The next tick was enqueued (`next`) to run after `delay_ms`.
    Continue { next: Tick, delay_ms: u64 },
    /// `needs-human`, reported: an approval resumes the task.
    Waiting,
    /// Finished, reported and released.
    Terminal(TerminalState),
    /// This delivery's seq was already committed (a redelivery, or another
    /// delivery won the race), or its claim was superseded while it acted:
    /// nothing was committed.
    Stale,
    /// Another tick holds a live claim on this seq until `until_ms`: a
    /// duplicate delivery, left alone. The holder commits and enqueues the
    /// successor; if it dies, the sweep re-drives the seq after the deadline.
    Busy { until_ms: u64 },
}

/// A tick's outcome and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    pub outcome: TickOutcome,
    pub stats: TickStats,
    /// Post-commit steps that failed (meta, active marker, enqueue): the
    /// commit stands and the sweep recovers the task. For a queued task
    /// over a run bound, the bound it waits for (`waiting in queued: …`).
    pub warnings: Vec<String>,
    /// The task as this tick left it (folded through its commit), for a
    /// host's own bookkeeping without reading the log again; `None` when
    /// the tick was stale and did nothing.
    pub resident: Option<Resident>,
}

/// Why a tick did nothing durable. The host leaves the message
/// unacknowledged; redelivery resumes from the same log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TickError {
    /// The tick message names no valid task id.
    #[error("tick: invalid task id `{0}`")]
    InvalidTaskId(String),
    /// No stimulus at seq 0: the task does not exist.
    #[error("tick: task `{0}` does not exist")]
    UnknownTask(String),
    /// An earlier entry is not visible yet (eventual consistency): retry later.
    #[error("tick: task `{task_id}` entry {seq} is not visible yet")]
    NotVisible { task_id: String, seq: u64 },
    /// Reading or committing failed; nothing was committed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The log does not fold (not written by this engine, or corrupt).
    #[error("tick: {0}")]
    Fold(#[from] FoldError),
}

/// The tick engine over its ports.
#[derive(Debug)]
pub struct Engine<'p, K, D, W, P, Q> {
    pub kv: &'p K,
    pub ports: Ports<'p, D, W, P>,
    pub queue: &'p Q,
    pub limits: Limits,
}

/// What a host adds to a tick.
#[derive(Default, Clone, Copy)]
pub struct TickHooks<'a> {
    /// Counts what the tick spent so far: the entry it commits starts with
    /// a [`Fact::Metered`] of it, and a conclusion includes it.
    pub meter: Option<&'a dyn Fn() -> RunCost>,
    /// Keys of the task derived from its state after the tick (a listing's
    /// summary), written with the commit: in its one request where the
    /// store writes a task's keys together, right after it otherwise. Only
    /// what changed: every key returned is written.
    pub views: Option<&'a Views<'a>>,
}

/// Keys and values derived from a task's state after a tick ([`TickHooks::views`]).
pub type Views<'a> = dyn Fn(&Resident) -> Vec<(String, Vec<u8>)> + 'a;

impl std::fmt::Debug for TickHooks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickHooks").field("meter", &self.meter.is_some()).field("views", &self.views.is_some()).finish()
    }
}

impl<K: KeyValue, D: Decider, W: Workspace, P: Forge, Q: Queue> Engine<'_, K, D, W, P, Q> {
    /// Runs one tick at `now_ms`, unmetered.
    pub async fn tick(&self, tick: &Tick, now_ms: u64) -> Result<TickReport, TickError> {
        self.tick_metered(tick, now_ms, None).await
    }

    /// Runs one tick at `now_ms`. With `meter`, the entry it commits starts
    /// with a [`Fact::Metered`] of what `meter` counted just before the
    /// commit, and a conclusion in it includes that count.
    pub async fn tick_metered(
        &self,
        tick: &Tick,
        now_ms: u64,
        meter: Option<&dyn Fn() -> RunCost>,
    ) -> Result<TickReport, TickError> {
        self.tick_with(tick, now_ms, TickHooks { meter, ..TickHooks::default() }).await
    }

    /// Runs one tick at `now_ms` with the host's [`TickHooks`].
    pub async fn tick_with(&self, tick: &Tick, now_ms: u64, hooks: TickHooks<'_>) -> Result<TickReport, TickError> {
        let TickHooks { meter, views } = hooks;
        let id = tick.task_id.as_str();
        if !is_valid_task_id(id) {
            return Err(TickError::InvalidTaskId(id.to_owned()));
        }
        let store = Store::new(self.kv);
        let mut stats = TickStats::default();
        let seq = tick.expected_seq;
        let stale = |store: &Store<'_, K>, mut stats: TickStats| {
            store.count_into(&mut stats);
            Ok(TickReport { outcome: TickOutcome::Stale, stats, warnings: Vec::new(), resident: None })
        };
        if seq == 0 {
            return stale(&store, stats);
        }
        // One read: is the seq committed, the checkpoint, the claim; where
        // the store has transactions and the message says how long the step
        // may take, the same request claims the seq while it is free.
        let ahead = ClaimAhead::of(tick, now_ms);
        let opened = store.open(id, seq, ahead.as_ref()).await?;
        if opened.committed {
            return stale(&store, stats);
        }

        // sync: the checkpoint, then the log from its cursor, in batches.
        let mut resident = match opened.meta {
            Some(meta) if meta.seq < seq && meta.resident.seq == Some(meta.seq) => meta.resident,
            _ => Resident::default(),
        };
        let mut from = resident.seq.map_or(0, |s| s + 1);
        if seq - from > MAX_FOLD_PER_TICK {
            // A checkpoint lost or far behind: rebuild it a bounded chunk
            // at a time, each in its own tick, before this tick's step.
            let to = from + MAX_FOLD_PER_TICK;
            fold(&store, id, from, to, &mut resident, &mut stats).await?;
            let checkpoint = meta_of(&resident, now_ms, Some(now_ms));
            if store.put_meta(id, &checkpoint).await.is_ok() {
                let mut warnings = Vec::new();
                // Nothing will commit this seq in this tick: a claim taken
                // ahead goes, so the next tick can take it.
                if opened.claimed_ahead.is_some()
                    && let Err(e) = store.delete(&crate::claim_key(id, seq)).await
                {
                    warnings.push(format!("claim taken ahead not removed: {e}"));
                }
                stats.enqueues += 1;
                if let Err(e) = self.queue.enqueue(tick, 0).await {
                    warnings.push(format!("the rest of the checkpoint's rebuild not enqueued: {e}"));
                }
                store.count_into(&mut stats);
                let outcome = TickOutcome::Continue { next: tick.clone(), delay_ms: 0 };
                return Ok(TickReport { outcome, stats, warnings, resident: None });
            }
            // A checkpoint that cannot be written (over the value limit, a
            // store failure) would be rebuilt again and again: this tick
            // folds the rest itself, as without the bound.
            from = to;
        }
        fold(&store, id, from, seq, &mut resident, &mut stats).await?;

        // decide
        let step = next_step(&resident, now_ms, &self.limits);
        if let Step::Quiet(terminal) = step {
            let mut warnings = Vec::new();
            if let Err(e) = store.delete(&active_key(id)).await {
                warnings.push(format!("due marker not removed: {e}"));
            }
            // Nothing will commit this seq: a claim taken ahead goes, so an
            // approval's tick finds the seq free.
            if opened.claimed_ahead.is_some()
                && let Err(e) = store.delete(&crate::claim_key(id, seq)).await
            {
                warnings.push(format!("claim taken ahead not removed: {e}"));
            }
            store.count_into(&mut stats);
            return Ok(TickReport { outcome: quiet(terminal), stats, warnings, resident: Some(resident) });
        }

        // claim: before any external effect, until the step's own bound.
        let bound = step.bound_ms(&resident, now_ms, &self.limits);
        let claimed = match (opened.claimed_ahead, bound, &ahead) {
            // Taken ahead: kept, or moved on when the step may take longer
            // than the hint said.
            (Some(mine), Some(bound), Some(ahead)) if now_ms.saturating_add(bound) > ahead.deadline_ms() => {
                match store.extend_claim(id, seq, &mine, now_ms.saturating_add(bound)).await? {
                    Some(longer) => Claimed::Ours(longer),
                    None => Claimed::Held { until_ms: ahead.deadline_ms() },
                }
            }
            (Some(mine), _, _) => Claimed::Ours(mine),
            (None, None, _) => Claimed::Unneeded,
            (None, Some(bound), _) => store.claim(id, seq, opened.claim, now_ms, now_ms.saturating_add(bound)).await?,
        };
        let claim = match claimed {
            Claimed::Ours(bytes) => Some(bytes),
            Claimed::Unneeded => None,
            Claimed::Held { until_ms } => {
                store.count_into(&mut stats);
                let outcome = TickOutcome::Busy { until_ms };
                return Ok(TickReport { outcome, stats, warnings: Vec::new(), resident: None });
            }
        };

        // act
        let cx = StepContext { resident: &resident, seq, now_ms, limits: &self.limits, key: format!("{id}:{seq}") };
        let acted = act(&step, &cx, &self.ports, &mut stats).await?;
        let mut warnings = Vec::new();
        if let Some(bound) = &acted.waiting {
            warnings.push(format!("waiting in queued: {bound}"));
        }
        if acted.again {
            // Nothing to commit (running checks polled): hold the claim
            // until the same seq's next tick is due, so a duplicate of this
            // one meanwhile finds it busy and the sweep leaves the seq
            // alone, then run that tick.
            let until = now_ms.saturating_add(acted.delay_ms);
            if let Some(mine) = &claim {
                let _ = store.release_claim(id, seq, mine, until).await;
            }
            let tick = Tick::new(id.to_owned(), seq);
            stats.enqueues += 1;
            if let Err(e) = self.queue.enqueue(&tick, acted.delay_ms).await {
                warnings.push(format!("next poll not enqueued: {e}"));
            }
            store.count_into(&mut stats);
            let outcome = TickOutcome::Continue { next: tick, delay_ms: acted.delay_ms };
            return Ok(TickReport { outcome, stats, warnings, resident: Some(resident) });
        }
        let mut facts = acted.facts;
        let mut delay_ms = acted.delay_ms;
        if let Some(bytes) = oversized(seq, now_ms, &facts) {
            // Never cut: the run ends, saying how large the step's record was.
            let reason = format!(
                "the step's record is {bytes} bytes, over the {MAX_VALUE_BYTES}-byte value limit of the smallest store (Fermyon Cloud, Akamai Functions)"
            );
            let failed = act(&Step::Fail { reason }, &cx, &self.ports, &mut stats).await?;
            (facts, delay_ms) = (failed.facts, failed.delay_ms);
        }
        if let Some(counted) = meter {
            metered(&resident, seq, now_ms, &mut facts, counted())?;
        }
        let entry = Entry { seq, at_ms: now_ms, facts };
        let mut next = resident.clone();
        next.apply(&entry)?;

        // commit: only while the claim is still ours, and only if the seq
        // is free; with the checkpoint in the same request where the store
        // has multi-key transactions (a task's Durable Object).
        let following = next_step(&next, now_ms + delay_ms, &self.limits);
        let due = (!matches!(following, Step::Quiet(_))).then_some(now_ms + delay_ms);
        let meta = meta_of(&next, now_ms, due);
        let views = views.map(|views| views(&next)).unwrap_or_default();
        let committed = match store.commit_at_once(id, &entry, claim.as_deref(), &meta, &views).await {
            // The checkpoint (and with it the next tick's due time) is in the commit.
            Ok(Some(committed)) => Ok((committed, true)),
            Ok(None) => self.commit(&store, id, &entry, claim.as_deref()).await.map(|c| (c, false)),
            Err(e) => Err(e),
        };
        let (committed, due_in_checkpoint) = match committed {
            Ok(committed) => committed,
            Err(e) => {
                // Nothing was committed: let the redelivery take the claim at
                // once (best effort; a store that is down keeps it until its
                // deadline, and the sweep re-drives the seq then).
                if let Some(mine) = &claim {
                    let _ = store.release_claim(id, seq, mine, now_ms).await;
                }
                return Err(e.into());
            }
        };
        if !committed {
            store.count_into(&mut stats);
            return Ok(TickReport { outcome: TickOutcome::Stale, stats, warnings: Vec::new(), resident: None });
        }

        // yield
        // The checkpoint carries the next tick's due time: in the commit
        // where the store writes a task's keys together, right after it
        // otherwise (before the enqueue, so a sweep meanwhile reads the
        // due time of the tick about to be sent).
        // With the listing's summary when it changed, in one request where
        // the store writes several keys at once (Spin's `set-many`): none of
        // these writes decides anything, each may land alone.
        if !due_in_checkpoint {
            let meta_key = crate::meta_key(id);
            let checkpoint = serde_json::to_vec(&meta).ok().filter(|bytes| bytes.len() <= MAX_VALUE_BYTES);
            if checkpoint.is_none() {
                warnings.push(format!("meta not written: over the {MAX_VALUE_BYTES}-byte value limit"));
            }
            let pairs: Vec<(&str, &[u8])> = checkpoint
                .as_deref()
                .map(|bytes| (meta_key.as_str(), bytes))
                .into_iter()
                .chain(views.iter().map(|(key, value)| (key.as_str(), value.as_slice())))
                .collect();
            if !pairs.is_empty()
                && let Err(e) = store.put_many(&pairs).await
            {
                warnings.push(format!("meta and views not written: {e}"));
            }
        }
        let outcome = if let Step::Quiet(terminal) = following {
            if let Err(e) = store.delete(&active_key(id)).await {
                warnings.push(format!("active marker not removed: {e}"));
            }
            quiet(terminal)
        } else {
            // The next tick may claim its seq in its first request.
            let claim_ms = following.bound_ms(&next, now_ms + delay_ms, &self.limits);
            let tick = Tick { claim_ms, ..Tick::new(id.to_owned(), seq + 1) };
            stats.enqueues += 1;
            if let Err(e) = self.queue.enqueue(&tick, delay_ms).await {
                warnings.push(format!("next tick not enqueued: {e}"));
            }
            TickOutcome::Continue { next: tick, delay_ms }
        };
        store.count_into(&mut stats);
        Ok(TickReport { outcome, stats, warnings, resident: Some(next) })
    }
}

impl<K: KeyValue, D, W, P, Q> Engine<'_, K, D, W, P, Q> {
    /// Marks our claim committing, then inserts the entry; `false` when the
    /// claim was superseded or the seq was taken meanwhile.
    async fn commit(
        &self,
        store: &Store<'_, K>,
        id: &str,
        entry: &Entry,
        claim: Option<&[u8]>,
    ) -> Result<bool, StoreError> {
        if let Some(mine) = claim
            && !store.begin_commit(id, entry.seq, mine).await?
        {
            return Ok(false);
        }
        Ok(store.append(id, entry).await? == Append::Committed)
    }
}

/// The most log entries a tick folds past its checkpoint before it acts.
/// A tick that finds more (its checkpoint lost, or far behind) folds this
/// many, writes the checkpoint there and runs again, as a fresh tick of the
/// same seq (handed to a fresh invocation on Spin): no invocation decodes
/// a whole long log. 256 entries are four batch reads and about 1.5 ms of
/// wasm CPU (docs/cost.md); a tick after any commit folds none.
pub const MAX_FOLD_PER_TICK: u64 = 256;

/// Folds log entries `from..to` of task `id` into `resident`.
async fn fold<K: KeyValue>(
    store: &Store<'_, K>,
    id: &str,
    from: u64,
    to: u64,
    resident: &mut Resident,
    stats: &mut TickStats,
) -> Result<(), TickError> {
    let folded = store
        .entries(id, from, to, |entry| {
            stats.entries_folded += 1;
            resident.apply(&entry)
        })
        .await;
    match folded {
        Ok(Ok(())) => Ok(()),
        Ok(Err(0)) => Err(TickError::UnknownTask(id.to_owned())),
        Ok(Err(at)) => Err(TickError::NotVisible { task_id: id.to_owned(), seq: at }),
        Err(EntriesError::Store(e)) => Err(e.into()),
        Err(EntriesError::Fold(e)) => Err(e.into()),
    }
}

/// The size of the entry of `facts` when it is over [`MAX_VALUE_BYTES`]
/// (with room for the metered fact a host adds). Written to a `Vec` as the
/// store writes it: a writer of its own would build a second copy of every
/// fact's serializer into the wasm (5.7 KB gzip, measured).
fn oversized(seq: u64, at_ms: u64, facts: &[Fact]) -> Option<usize> {
    /// An [`Entry`] by reference: the same JSON, without copying the facts.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Borrowed<'a> {
        seq: u64,
        at_ms: u64,
        facts: &'a [Fact],
    }
    const METERED_ROOM: usize = 1_024;
    let bytes = serde_json::to_vec(&Borrowed { seq, at_ms, facts }).map_or(usize::MAX, |b| b.len());
    (bytes.saturating_add(METERED_ROOM) > MAX_VALUE_BYTES).then_some(bytes)
}

/// Puts the tick's `cost` first among its `facts`; a conclusion among
/// them is given the cost the facts before it add up to, as
/// [`crate::log::replay`] rebuilds it.
fn metered(resident: &Resident, seq: u64, now_ms: u64, facts: &mut Vec<Fact>, cost: RunCost) -> Result<(), FoldError> {
    facts.insert(0, Fact::Metered { cost });
    if let Some(at) = facts.iter().position(|f| matches!(f, Fact::Concluded { .. })) {
        let mut ended = resident.clone();
        ended.apply(&Entry { seq, at_ms: now_ms, facts: facts[..at].to_vec() })?;
        if let Fact::Concluded { evidence, .. } = &mut facts[at] {
            evidence.cost = crate::conclude::evidence_cost(&ended);
        }
    }
    Ok(())
}

fn quiet(terminal: TerminalState) -> TickOutcome {
    match terminal {
        TerminalState::NeedsHuman => TickOutcome::Waiting,
        other => TickOutcome::Terminal(other),
    }
}

/// The listing summary and checkpoint of `resident`.
pub(crate) fn meta_of(resident: &Resident, now_ms: u64, due_ms: Option<u64>) -> Meta {
    let origin = resident.origin().expect("entry 0 folded");
    Meta {
        seq: resident.seq.unwrap_or(0),
        state: resident.state,
        repository: origin.repository.to_owned(),
        trigger: origin.trigger,
        // Until the policy gate decides, the least a run may do.
        mode: origin.mode.unwrap_or(agent_zero_contracts::RunMode::Observe),
        created_ms: resident.created_ms,
        updated_ms: now_ms,
        quiet: due_ms.is_none(),
        due_ms,
        resident: resident.clone(),
    }
}
