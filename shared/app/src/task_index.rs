//! The task listing index: newest first, filtered by repository and state,
//! at a cost per page that does not grow with the number of tasks.
//!
//! KV layout (`{when}` is `9999999999999 - created_ms`, 13 digits, so
//! ascending key order is newest first; `{repo}` is the first 16 bytes of
//! SHA-256 of the lowercase `owner/name`, hex, so every key fits 255 bytes;
//! `{bucket}` is [`bucket`] of the state: `queued`, `running`,
//! `needs-human`, `completed`, `failed` or `ignored`):
//!
//! | key | written |
//! |---|---|
//! | `index/created/{when}-{id}` | once, at creation |
//! | `index/repo/{repo}/{when}-{id}` | once, at creation |
//! | `index/state/{bucket}/{when}-{id}` | moved (put new, delete old) when the bucket changes |
//! | `index/repo-state/{repo}/{bucket}/{when}-{id}` | moved with the state key |
//! | `index/failed/{failed}-{id}` | once, when the task moves to `failed` (`{failed}` like `{when}`, from the failure time) |
//! | `index/repo-failed/{repo}/{failed}-{id}` | with the failed key |
//! | `task/{id}/summary` | a [`TaskSummary`], with the task's own keys (its Durable Object on Cloudflare) |
//!
//! The summary lives with the task: a tick writes it in its commit when
//! anything listed changed (`Engine::tick_with`'s views), so it never
//! disagrees with the log, and costs no request of its own on Cloudflare.
//! The index keys move only when the bucket changes (about twice a run),
//! after the commit; the summary records the bucket they were last moved
//! to (`indexed`), rewritten last, so a crash mid-move is redone by the
//! next tick, which reads the summary with its other keys. A page is one
//! KV list (`limit` keys) plus one summary read per key; a key whose
//! summary disagrees (a move not visible yet, or a fine state the filter
//! does not want) is skipped, so a page may hold fewer than `limit` items.
//! Nothing is a counter: the dashboard's counters (`crate::task_counters`)
//! count the keys of one bucket each, and the failures of the last day
//! from the failed keys, newest failure first. Summaries written before
//! they moved to the task's keys are read from `index/summary/{id}` until
//! the task's next change.

use agent_zero_contracts::{ForgeKind, RunMode, TaskState, Trigger, Verdict, rfc3339};
use agent_zero_engine::{Origin, Resident, Stimulus};
use agent_zero_evidence::TaskListItem;
use agent_zero_ports::{KeyValue, KvError};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// Most items on one page.
pub const MAX_PAGE: usize = 100;
/// Items on a page when the caller does not say.
pub const DEFAULT_PAGE: usize = 20;
/// Most bytes of a title kept in the summary.
const MAX_TITLE_BYTES: usize = 256;

/// One row of the listing: what the index keeps per task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSummary {
    pub id: String,
    /// `owner/name` (GitLab: `namespace/project`).
    pub repository: String,
    /// The forge the repository lives on; left out for GitHub (and absent
    /// from rows written before 2026-12-07, which read as GitHub's).
    #[serde(default, skip_serializing_if = "ForgeKind::is_github")]
    pub forge: ForgeKind,
    pub state: TaskState,
    pub trigger: Trigger,
    pub mode: RunMode,
    /// `api:<principal>`, `github:<delivery>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// True only for a completed task whose result is verified.
    #[serde(default)]
    pub verified: bool,
    /// Untrusted: the issue or finding title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC: when the summary last changed.
    pub updated_at: String,
    /// Milliseconds since the epoch (orders the index keys). Never on the
    /// wire; read from the stored form, which [`Stored`] writes.
    #[serde(skip_serializing)]
    created_ms: u64,
    /// Milliseconds since the epoch when the task moved to `failed` (orders
    /// its failed keys); kept while it stays failed. Like `createdMs`, only
    /// in the stored form; absent for a task that failed before this was
    /// recorded (it has no failed key either).
    #[serde(default, skip_serializing)]
    failed_ms: Option<u64>,
    /// The bucket the index keys were last moved to, in the stored form
    /// only; `None` for a summary stored before buckets (its keys are
    /// under the state itself).
    #[serde(default, skip_serializing)]
    indexed: Option<String>,
}

/// The listing's coarse state: what the index keys are filed under. The
/// lifecycle's working states are one bucket, so a run moves its keys
/// about twice, not at every step.
pub fn bucket(state: TaskState) -> &'static str {
    match state {
        TaskState::Queued => "queued",
        TaskState::NeedsHuman => "needs-human",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Ignored => "ignored",
        _ => "running",
    }
}

impl TaskSummary {
    /// The summary of a freshly created task.
    pub fn of_stimulus(stimulus: &Stimulus, now_ms: u64) -> Self {
        Self {
            id: stimulus.task_id.clone(),
            repository: stimulus.repository.clone(),
            forge: stimulus.input.forge,
            state: TaskState::Queued,
            trigger: stimulus.trigger,
            mode: stimulus.mode,
            source: stimulus.source.clone(),
            verdict: None,
            verified: false,
            title: stimulus.input.issue.as_ref().map(|i| cap(&i.title.text)),
            created_at: rfc3339(now_ms),
            updated_at: rfc3339(now_ms),
            created_ms: now_ms,
            failed_ms: None,
            indexed: None,
        }
    }

    /// The summary of a task from where it came from (a delivery that
    /// awaits its policy gate is listed as `observe`, the least a run does).
    pub fn of_origin(origin: &Origin<'_>, now_ms: u64) -> Self {
        Self {
            id: origin.task_id.to_owned(),
            repository: origin.repository.to_owned(),
            forge: origin.forge,
            state: TaskState::Queued,
            trigger: origin.trigger,
            mode: origin.mode.unwrap_or(RunMode::Observe),
            source: origin.source.map(str::to_owned),
            verdict: None,
            verified: false,
            title: origin.title.map(cap),
            created_at: rfc3339(now_ms),
            updated_at: rfc3339(now_ms),
            created_ms: now_ms,
            failed_ms: None,
            indexed: None,
        }
    }

    /// The summary of a folded task (`None` before entry 0).
    pub fn of_resident(resident: &Resident, now_ms: u64) -> Option<Self> {
        let origin = resident.origin()?;
        let mut summary = Self::of_origin(&origin, resident.created_ms);
        summary.state = resident.state;
        summary.updated_at = rfc3339(now_ms);
        summary.verdict = resident.attempt.finding.as_ref().map(|f| f.verdict);
        if let Some(concluded) = resident.conclusion.concluded.as_deref() {
            summary.verdict = Some(concluded.0.verdict);
            summary.verified = concluded.0.verified && resident.state == TaskState::Completed;
        }
        if summary.title.is_none() {
            summary.title = resident.attempt.finding.as_ref().map(|f| cap(&f.claim.title));
        }
        Some(summary)
    }

    /// The dashboard row of this summary.
    pub fn to_list_item(&self) -> TaskListItem {
        TaskListItem {
            id: self.id.clone(),
            repository: self.repository.clone(),
            state: self.state,
            trigger: self.trigger,
            mode: self.mode,
            verdict: self.verdict,
            verified: self.verified,
            updated_at: self.updated_at.clone(),
            title: self.title.clone(),
        }
    }

    /// Same listing-relevant content (ignores `updatedAt`).
    fn same_as(&self, other: &Self) -> bool {
        let listed = |s: &Self| Self { updated_at: String::new(), indexed: None, ..s.clone() };
        listed(self) == listed(other)
    }

    /// This summary as it follows `stored`: the failure time kept while it
    /// stays failed (or `now_ms` once it moves there), the index's bucket
    /// carried.
    fn following(mut self, stored: Option<&Self>, now_ms: u64) -> Self {
        self.failed_ms = match stored {
            _ if self.state != TaskState::Failed => None,
            Some(old) if old.state == TaskState::Failed => old.failed_ms,
            _ => Some(now_ms),
        };
        self.indexed = stored.and_then(|old| old.indexed.clone());
        self
    }
}

fn cap(text: &str) -> String {
    let mut end = text.len().min(MAX_TITLE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Why the index could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The KV backend failed.
    #[error("task index: {0}")]
    Kv(#[from] KvError),
    /// A `cursor` that this listing did not hand out (or for another filter).
    #[error("cursor: {0}")]
    InvalidCursor(&'static str),
}

/// Which tasks to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// `owner/name`, compared ASCII case-insensitively.
    pub repository: Option<String>,
    pub state: Option<TaskState>,
}

/// One page of the listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub items: Vec<TaskSummary>,
    /// Pass back as `cursor` for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

fn when(created_ms: u64) -> String {
    format!("{:013}", 9_999_999_999_999u64.saturating_sub(created_ms))
}

fn repo_hash(repository: &str) -> String {
    let digest = sha2::Sha256::digest(repository.to_ascii_lowercase().as_bytes());
    hex::encode(&digest[..16])
}

/// Where a task's summary lives: with its own keys.
pub(crate) fn summary_key(id: &str) -> String {
    format!("task/{id}/summary")
}

/// Where a summary lived before it moved to the task's keys.
fn legacy_summary_key(id: &str) -> String {
    format!("index/summary/{id}")
}

/// The listing prefix for `filter`.
fn prefix(filter: &Filter) -> String {
    match (&filter.repository, filter.state) {
        (None, None) => "index/created/".to_owned(),
        (Some(r), None) => format!("index/repo/{}/", repo_hash(r)),
        (None, Some(s)) => format!("index/state/{}/", bucket(s)),
        (Some(r), Some(s)) => format!("index/repo-state/{}/{}/", repo_hash(r), bucket(s)),
    }
}

/// The write-once keys of a task.
fn fixed_keys(s: &TaskSummary) -> [String; 2] {
    let tail = format!("{}-{}", when(s.created_ms), s.id);
    [format!("index/created/{tail}"), format!("index/repo/{}/{tail}", repo_hash(&s.repository))]
}

/// The keys of a failure (none before the task failed).
fn failed_keys(s: &TaskSummary) -> Vec<String> {
    let Some(failed_ms) = s.failed_ms.filter(|_| s.state == TaskState::Failed) else { return Vec::new() };
    let tail = format!("{}-{}", when(failed_ms), s.id);
    vec![format!("index/failed/{tail}"), format!("index/repo-failed/{}/{tail}", repo_hash(&s.repository))]
}

/// The listing prefix of failures, newest first: all, or one repository's.
pub(crate) fn failed_prefix(repository: Option<&str>) -> String {
    match repository {
        None => "index/failed/".to_owned(),
        Some(r) => format!("index/repo-failed/{}/", repo_hash(r)),
    }
}

/// The listing prefix of tasks in `state`'s bucket: all, or one repository's.
pub(crate) fn state_prefix(repository: Option<&str>, state: TaskState) -> String {
    prefix(&Filter { repository: repository.map(str::to_owned), state: Some(state) })
}

/// The milliseconds a failed key (after its prefix) says the task failed at.
pub(crate) fn failed_at(tail: &str) -> Option<u64> {
    let when: u64 = tail.get(..13)?.parse().ok()?;
    Some(9_999_999_999_999u64.saturating_sub(when))
}

/// The keys that move with the bucket (or, `bucket` a state's own name,
/// where a summary stored before buckets filed them).
fn state_keys(s: &TaskSummary, bucket: &str) -> [String; 2] {
    let tail = format!("{}-{}", when(s.created_ms), s.id);
    [format!("index/state/{bucket}/{tail}"), format!("index/repo-state/{}/{bucket}/{tail}", repo_hash(&s.repository))]
}

/// The keys `stored` has its rows under: its bucket's, or for a summary
/// stored before buckets, its state's.
fn stored_state_keys(stored: &TaskSummary) -> [String; 2] {
    match &stored.indexed {
        Some(bucket) => state_keys(stored, bucket),
        None => state_keys(stored, stored.state.as_str()),
    }
}

/// Stored form: the summary plus its creation time, failure time and
/// bucket (not on the wire). Read back as a [`TaskSummary`], which reads
/// them: a flattened field's reader buffers the whole object and reads it
/// a second time.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Stored<'a> {
    #[serde(flatten)]
    summary: &'a TaskSummary,
    created_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    indexed: Option<&'a str>,
}

fn stored_bytes(summary: &TaskSummary) -> Vec<u8> {
    let stored = Stored {
        summary,
        created_ms: summary.created_ms,
        failed_ms: summary.failed_ms,
        indexed: summary.indexed.as_deref(),
    };
    serde_json::to_vec(&stored).unwrap_or_default()
}

fn summary_of(bytes: &[u8]) -> Option<TaskSummary> {
    agent_zero_codecs::json::from_slice::<TaskSummary>(bytes).ok()
}

/// A summary as stored, with its bytes at [`summary_key`]; `None` bytes
/// when it is where summaries lived before (`index/summary/{id}`).
type StoredSummary = (TaskSummary, Option<Vec<u8>>);

/// The summary of task `id` as stored: from the task's keys, else where
/// summaries lived before.
async fn stored_summary<K: KeyValue>(kv: &K, id: &str) -> Result<Option<StoredSummary>, KvError> {
    if let Some(bytes) = kv.get(&summary_key(id)).await? {
        return Ok(summary_of(&bytes).map(|s| (s, Some(bytes))));
    }
    let legacy = kv.get(&legacy_summary_key(id)).await?;
    Ok(legacy.and_then(|bytes| summary_of(&bytes)).map(|s| (s, None)))
}

pub(crate) async fn read_summary<K: KeyValue>(kv: &K, id: &str) -> Result<Option<TaskSummary>, KvError> {
    Ok(stored_summary(kv, id).await?.map(|(summary, _)| summary))
}

/// Moves `summary`'s index keys from where `stored` has them (creating
/// them when `stored` is `None`); `summary.indexed` is then its bucket.
async fn move_keys<K: KeyValue>(
    kv: &K,
    stored: Option<&TaskSummary>,
    summary: &mut TaskSummary,
) -> Result<(), KvError> {
    // `failed` is a bucket of its own: its failed keys are filed as the
    // task moves into it.
    let to = bucket(summary.state);
    match stored {
        None => {
            for key in fixed_keys(summary).iter().chain(&state_keys(summary, to)).chain(&failed_keys(summary)) {
                kv.put(key, b"").await?;
            }
        }
        Some(old) if old.indexed.as_deref() != Some(to) => {
            let new = state_keys(summary, to);
            for key in new.iter().chain(&failed_keys(summary)) {
                kv.put(key, b"").await?;
            }
            // A summary filed before buckets may be under the same keys.
            for key in stored_state_keys(old).into_iter().filter(|key| !new.contains(key)) {
                kv.delete(&key).await?;
            }
        }
        Some(_) => {}
    }
    summary.indexed = Some(to.to_owned());
    Ok(())
}

/// Brings the index in line with `summary`: creates the task's keys when
/// it has none, moves its state keys when its bucket changed (and writes
/// its failed keys when it moved to `failed`), then writes the summary
/// when anything listed changed. Idempotent.
pub async fn record<K: KeyValue>(kv: &K, summary: &TaskSummary) -> Result<(), IndexError> {
    let stored = stored_summary(kv, &summary.id).await?;
    record_over(kv, stored, summary).await
}

/// [`record`] over the summary as it is stored (`stored`, just read).
async fn record_over<K: KeyValue>(
    kv: &K,
    stored: Option<StoredSummary>,
    summary: &TaskSummary,
) -> Result<(), IndexError> {
    let old = stored.as_ref().map(|(old, _)| old);
    let now = crate::dashboard::parse_rfc3339_ms(&summary.updated_at).unwrap_or(summary.created_ms);
    let mut summary = summary.clone().following(old, now);
    let moved = old.is_none_or(|old| old.indexed.as_deref() != Some(bucket(summary.state)));
    if !moved && old.is_some_and(|old| old.same_as(&summary)) {
        return Ok(());
    }
    move_keys(kv, old, &mut summary).await?;
    kv.put(&summary_key(&summary.id), &stored_bytes(&summary)).await?;
    if stored.as_ref().is_some_and(|(_, bytes)| bytes.is_none()) {
        kv.delete(&legacy_summary_key(&summary.id)).await?;
    }
    Ok(())
}

/// Indexes a task `runtime::create` just created (webhook or API), before
/// its first tick: call it with the stimulus and the `now_ms` given to
/// `create`. A task already indexed is left alone.
pub async fn record_created<K: KeyValue>(kv: &K, stimulus: &Stimulus, now_ms: u64) -> Result<(), IndexError> {
    if stored_summary(kv, &stimulus.task_id).await?.is_some() {
        return Ok(());
    }
    record_over(kv, None, &TaskSummary::of_stimulus(stimulus, now_ms)).await
}

/// Indexes a delivery `runtime::receive` just recorded, before its
/// admission tick; a task already indexed is left alone.
pub async fn record_received<K: KeyValue>(kv: &K, resident: &Resident, now_ms: u64) -> Result<(), IndexError> {
    let Some(origin) = resident.origin() else { return Ok(()) };
    if stored_summary(kv, origin.task_id).await?.is_some() {
        return Ok(());
    }
    record_over(kv, None, &TaskSummary::of_origin(&origin, now_ms)).await
}

/// Removes every index key of task `id` (retention); nothing when it is
/// not indexed.
pub(crate) async fn forget_task<K: KeyValue>(kv: &K, id: &str) -> Result<(), KvError> {
    let Some(summary) = read_summary(kv, id).await? else { return Ok(()) };
    forget(kv, &summary).await
}

/// Removes the index keys and summary of `summary`'s task, wherever a
/// version of this code filed them; the summary last.
pub(crate) async fn forget<K: KeyValue>(kv: &K, summary: &TaskSummary) -> Result<(), KvError> {
    let filed = [bucket(summary.state), summary.state.as_str()];
    let moving = filed.iter().flat_map(|at| state_keys(summary, at));
    for key in fixed_keys(summary).into_iter().chain(moving).chain(failed_keys(summary)) {
        kv.delete(&key).await?;
    }
    kv.delete(&legacy_summary_key(&summary.id)).await?;
    kv.delete(&summary_key(&summary.id)).await
}

/// Brings the index in line with a task as it is (`after`), outside a
/// tick: [`record`] of its summary.
pub async fn record_tick<K: KeyValue>(kv: &K, after: &Resident, now_ms: u64) -> Result<(), IndexError> {
    match TaskSummary::of_resident(after, now_ms) {
        Some(summary) => record(kv, &summary).await,
        None => Ok(()),
    }
}

/// What a tick does for the index: the summary it writes with its commit
/// ([`Self::view`]), then the keys it moves after ([`Self::after`]).
#[derive(Debug)]
pub(crate) struct TickIndex {
    stored: Option<StoredSummary>,
    now_ms: u64,
    /// The summary bytes the commit carried, if it carried one.
    written: std::cell::RefCell<Option<(TaskSummary, Vec<u8>)>>,
}

impl TickIndex {
    /// Reads the summary of the tick's task (read ahead on Cloudflare).
    pub(crate) async fn read<K: KeyValue>(kv: &K, id: &str, now_ms: u64) -> Self {
        // Unreadable is as absent: the tick rewrites it.
        let stored = stored_summary(kv, id).await.ok().flatten();
        Self { stored, now_ms, written: Default::default() }
    }

    /// The summary of the task after the tick, to write with its commit
    /// when anything listed changed.
    pub(crate) fn view(&self, after: &Resident) -> Vec<(String, Vec<u8>)> {
        let Some(summary) = TaskSummary::of_resident(after, self.now_ms) else { return Vec::new() };
        let old = self.stored.as_ref().map(|(old, _)| old);
        let summary = summary.following(old, self.now_ms);
        if old.is_some_and(|old| old.same_as(&summary)) {
            return Vec::new();
        }
        let bytes = stored_bytes(&summary);
        *self.written.borrow_mut() = Some((summary.clone(), bytes.clone()));
        vec![(summary_key(&summary.id), bytes)]
    }

    /// After the tick: moves the index keys when the bucket changed, then
    /// records the move in the summary, only if it is still the one this
    /// tick left (a compare-and-swap: a later tick's summary is never
    /// overwritten; it redoes a move this one did not record). Called
    /// only for a tick that left `after` (committed, or had nothing to
    /// commit): [`Self::view`] ran only if it committed.
    pub(crate) async fn after<K: KeyValue>(&self, kv: &K, after: &Resident) -> Result<(), IndexError> {
        // The summary at the task's key now, and its bytes (`None`: absent).
        let written = self.written.borrow_mut().take();
        let (mut summary, current) = match (written, &self.stored) {
            (Some((summary, bytes)), _) => (summary, Some(bytes)),
            (None, Some((stored, bytes))) => (stored.clone(), bytes.clone()),
            (None, None) => match TaskSummary::of_resident(after, self.now_ms) {
                Some(summary) => (summary.following(None, self.now_ms), None),
                None => return Ok(()),
            },
        };
        let old = self.stored.as_ref().map(|(old, _)| old);
        let filed = old.is_some_and(|old| old.indexed.as_deref() == Some(bucket(summary.state)));
        if filed && current.is_some() {
            return Ok(());
        }
        move_keys(kv, old, &mut summary).await?;
        kv.compare_and_swap(&summary_key(&summary.id), current.as_deref(), &stored_bytes(&summary)).await?;
        if self.stored.as_ref().is_some_and(|(_, bytes)| bytes.is_none()) {
            kv.delete(&legacy_summary_key(&summary.id)).await?;
        }
        Ok(())
    }
}

/// One page of tasks matching `filter`, newest first.
pub async fn list<K: KeyValue>(
    kv: &K,
    filter: &Filter,
    cursor: Option<&str>,
    limit: usize,
) -> Result<Page, IndexError> {
    let prefix = prefix(filter);
    let backend_cursor = cursor.map(|c| decode_cursor(c, &prefix)).transpose()?;
    let listed = kv.list(&prefix, backend_cursor.as_deref(), limit.clamp(1, MAX_PAGE)).await?;
    let mut items = Vec::with_capacity(listed.keys.len());
    for key in &listed.keys {
        // `{when:13}-{id}` after the prefix.
        let Some(id) = key.strip_prefix(prefix.as_str()).and_then(|tail| tail.get(14..)) else { continue };
        let Some(summary) = read_summary(kv, id).await? else { continue };
        let repository_matches = filter.repository.as_ref().is_none_or(|r| r.eq_ignore_ascii_case(&summary.repository));
        if repository_matches && filter.state.is_none_or(|s| s == summary.state) {
            items.push(summary);
        }
    }
    Ok(Page { items, next_cursor: listed.cursor.map(|c| encode_cursor(&prefix, &c)) })
}

fn encode_cursor(prefix: &str, backend: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{prefix}\n{backend}"))
}

fn decode_cursor(cursor: &str, prefix: &str) -> Result<String, IndexError> {
    let bytes =
        URL_SAFE_NO_PAD.decode(cursor).map_err(|_| IndexError::InvalidCursor("not a cursor this API handed out"))?;
    let text = String::from_utf8(bytes).map_err(|_| IndexError::InvalidCursor("not a cursor this API handed out"))?;
    let (for_prefix, backend) =
        text.split_once('\n').ok_or(IndexError::InvalidCursor("not a cursor this API handed out"))?;
    if for_prefix != prefix {
        return Err(IndexError::InvalidCursor("the cursor belongs to a different filter"));
    }
    if backend.is_empty() {
        return Err(IndexError::InvalidCursor("not a cursor this API handed out"));
    }
    Ok(backend.to_owned())
}

#[cfg(test)]
#[path = "task_index_tests.rs"]
mod tests;
