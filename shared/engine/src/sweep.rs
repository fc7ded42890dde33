//! The sweep: ticks lost between a commit and its enqueue (a crash, a
//! failed enqueue) are found and delivered again, through the `active/`
//! keys and each such task's checkpoint, which carries the due time (the
//! layout: [`crate::store`]). Where a store's checkpoint follows its entry
//! (Spin's), a `pending/` marker left by an earlier version is turned into
//! its task's `active/` key first.

use agent_zero_ports::KeyValue;

use crate::ports::{Queue, Tick};
use crate::store::{ACTIVE_PREFIX, Overdue, Store, StoreError, TickStats, is_valid_task_id, parse_pending_key};

/// How a sweep pages and what it treats as overdue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepOptions {
    /// A tick is overdue this long after its due time (covers queue
    /// latency and KV propagation, about 60 s on Cloudflare).
    pub grace_ms: u64,
    /// Most pending markers examined in one sweep (bounds its KV cost).
    pub max_markers: usize,
}

impl Default for SweepOptions {
    fn default() -> Self {
        Self { grace_ms: 90_000, max_markers: 200 }
    }
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickSweep {
    pub enqueued: Vec<Tick>,
    /// Overdue markers left alone because a live claim holds their seq.
    pub claimed: u32,
    pub stats: TickStats,
}

/// Re-delivers every overdue tick. A checkpoint whose next seq is already
/// committed (stale, or lost with the crash that lost the enqueue) means
/// the successor of the last entry is the one due (a finished task's
/// successor tick is a quiet no-op that clears its `active/` key). A seq
/// whose claim is live is left alone whatever `grace_ms` says: its tick is
/// still within its own bound (a long model call, the checks).
pub async fn sweep<K: KeyValue, Q: Queue>(
    kv: &K,
    queue: &Q,
    now_ms: u64,
    options: SweepOptions,
) -> Result<TickSweep, StoreError> {
    let store = Store::new(kv);
    // Stores that write a task's keys together never had markers.
    if !store.commits_at_once("any") {
        adopt_pending_markers(&store, now_ms, options.max_markers).await?;
    }
    sweep_active(&store, queue, now_ms, options).await
}

/// Written once no `pending/` marker is left, so later sweeps read one key
/// instead of listing (a list enumerates the whole store on Spin).
const PENDING_ADOPTED_KEY: &str = "sweep/pending-adopted";

/// Turns each `pending/` marker an earlier version left into its task's
/// `active/` key, then removes it: a task in flight across the upgrade
/// keeps its re-drive (its checkpoint says when it is due, and a task
/// found quiet loses the key after the grace). Once a sweep finds none
/// left, [`PENDING_ADOPTED_KEY`] records it and later sweeps only read it.
async fn adopt_pending_markers<K: KeyValue>(store: &Store<'_, K>, now_ms: u64, max: usize) -> Result<(), StoreError> {
    if store.get_many(&[PENDING_ADOPTED_KEY]).await?.into_iter().flatten().next().is_some() {
        return Ok(());
    }
    let markers = listed(store, crate::store::PENDING_PREFIX, max).await?;
    for key in &markers {
        if let Some((id, _)) = parse_pending_key(key) {
            store.mark_active(id, now_ms).await?;
        }
        store.delete(key).await?;
    }
    if markers.is_empty() {
        store.put(PENDING_ADOPTED_KEY, now_ms.to_string().as_bytes()).await?;
    }
    Ok(())
}

/// The sweep where each task's checkpoint carries its due time: one list of
/// `active/`, then per listed task one read of its checkpoint and, when
/// its tick is overdue, one batch read of that seq's entry and claim.
async fn sweep_active<K: KeyValue, Q: Queue>(
    store: &Store<'_, K>,
    queue: &Q,
    now_ms: u64,
    options: SweepOptions,
) -> Result<TickSweep, StoreError> {
    let mut report = TickSweep::default();
    for key in &listed(store, ACTIVE_PREFIX, options.max_markers).await? {
        let Some(id) = key.strip_prefix(ACTIVE_PREFIX).filter(|id| is_valid_task_id(id)) else { continue };
        match store.overdue(id, now_ms, options.grace_ms).await? {
            Overdue::No => {}
            Overdue::Quiet => {
                // Left by a crash after the commit that made the task
                // quiet, or written for a commit still in flight (a
                // creation, an approval): removed only once older than
                // the grace, so the commit it announces has landed.
                let since = store.active_since(key).await?;
                if since.is_none_or(|at| at.saturating_add(options.grace_ms) <= now_ms) {
                    store.delete(key).await?;
                }
            }
            Overdue::Claimed => report.claimed += 1,
            Overdue::Due(seq) => report.enqueue(queue, Tick::new(id.to_owned(), seq)).await,
        }
    }
    store.count_into(&mut report.stats);
    Ok(report)
}

impl TickSweep {
    /// Enqueues `tick` now, counting the attempt and recording it if sent.
    async fn enqueue<Q: Queue>(&mut self, queue: &Q, tick: Tick) {
        self.stats.enqueues += 1;
        if queue.enqueue(&tick, 0).await.is_ok() {
            self.enqueued.push(tick);
        }
    }
}

/// The keys under `prefix`, page by page (at most 1,000 a list) until at
/// least `max` are read or none are left: what one sweep examines.
async fn listed<K: KeyValue>(store: &Store<'_, K>, prefix: &str, max: usize) -> Result<Vec<String>, StoreError> {
    let mut keys = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list(prefix, cursor.as_deref(), max.clamp(1, 1000)).await?;
        keys.extend(page.keys);
        cursor = page.cursor;
        if cursor.is_none() || keys.len() >= max {
            return Ok(keys);
        }
    }
}
