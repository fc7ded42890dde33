//! The task listing index: newest first, filtered by repository and state,
//! at a cost per page that does not grow with the number of tasks.
//!
//! KV layout (`{when}` is `9999999999999 - created_ms`, 13 digits, so
//! ascending key order is newest first; `{repo}` is the first 16 bytes of
//! SHA-256 of the lowercase `owner/name`, hex, so every key fits 255 bytes):
//!
//! | key | written |
//! |---|---|
//! | `index/created/{when}-{id}` | once, at creation |
//! | `index/repo/{repo}/{when}-{id}` | once, at creation |
//! | `index/state/{state}/{when}-{id}` | moved (put new, delete old) on a state change |
//! | `index/repo-state/{repo}/{state}/{when}-{id}` | moved with the state key |
//! | `index/failed/{failed}-{id}` | once, when the task moves to `failed` (`{failed}` like `{when}`, from the failure time) |
//! | `index/repo-failed/{repo}/{failed}-{id}` | with the failed key |
//! | `index/summary/{id}` | a [`TaskSummary`], rewritten last on every change |
//!
//! One writer per task moves its keys (creation, then the task's own ticks
//! and approvals, which the engine serialises). The summary is written
//! last, so a crash mid-move is redone by the next sync, which compares the
//! summary with the task's state. A page is one KV list (`limit` keys) plus
//! one summary read per key; an index key whose summary disagrees (a move
//! not visible yet) is skipped, so a page may hold fewer than `limit` items.
//! Nothing is a counter, and no key is written more than once per tick:
//! the dashboard's counters (`crate::task_counters`) count keys of one
//! listing per state, and the failures of the last day from the failed
//! keys, newest failure first.

use agent_zero_contracts::{RunMode, TaskState, Trigger, Verdict, rfc3339};
use agent_zero_engine::{Origin, Resident, Stimulus};
use agent_zero_evidence::TaskListItem;
use agent_zero_ports::{KeyValue, KvError};
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
    /// `owner/name`.
    pub repository: String,
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
}

impl TaskSummary {
    /// The summary of a freshly created task.
    pub fn of_stimulus(stimulus: &Stimulus, now_ms: u64) -> Self {
        Self {
            id: stimulus.task_id.clone(),
            repository: stimulus.repository.clone(),
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
        }
    }

    /// The summary of a task from where it came from (a delivery that
    /// awaits its policy gate is listed as `observe`, the least a run does).
    pub fn of_origin(origin: &Origin<'_>, now_ms: u64) -> Self {
        Self {
            id: origin.task_id.to_owned(),
            repository: origin.repository.to_owned(),
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
        Self { updated_at: String::new(), ..self.clone() } == Self { updated_at: String::new(), ..other.clone() }
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

fn summary_key(id: &str) -> String {
    format!("index/summary/{id}")
}

/// The listing prefix for `filter`.
fn prefix(filter: &Filter) -> String {
    match (&filter.repository, filter.state) {
        (None, None) => "index/created/".to_owned(),
        (Some(r), None) => format!("index/repo/{}/", repo_hash(r)),
        (None, Some(s)) => format!("index/state/{s}/"),
        (Some(r), Some(s)) => format!("index/repo-state/{}/{s}/", repo_hash(r)),
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

/// The listing prefix of tasks in `state`: all, or one repository's.
pub(crate) fn state_prefix(repository: Option<&str>, state: TaskState) -> String {
    prefix(&Filter { repository: repository.map(str::to_owned), state: Some(state) })
}

/// The milliseconds a failed key (after its prefix) says the task failed at.
pub(crate) fn failed_at(tail: &str) -> Option<u64> {
    let when: u64 = tail.get(..13)?.parse().ok()?;
    Some(9_999_999_999_999u64.saturating_sub(when))
}

/// The keys that move with the state.
fn state_keys(s: &TaskSummary, state: TaskState) -> [String; 2] {
    let tail = format!("{}-{}", when(s.created_ms), s.id);
    [format!("index/state/{state}/{tail}"), format!("index/repo-state/{}/{state}/{tail}", repo_hash(&s.repository))]
}

/// Stored form: the summary plus its creation time (not on the wire).
/// Read back as a [`TaskSummary`], which reads `createdMs`: a flattened
/// field's reader buffers the whole object and reads it a second time.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    #[serde(flatten)]
    summary: TaskSummary,
    created_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_ms: Option<u64>,
}

pub(crate) async fn read_summary<K: KeyValue>(kv: &K, id: &str) -> Result<Option<TaskSummary>, KvError> {
    let Some(bytes) = kv.get(&summary_key(id)).await? else { return Ok(None) };
    Ok(agent_zero_contracts::json::from_slice::<TaskSummary>(&bytes).ok())
}

async fn write_summary<K: KeyValue>(kv: &K, summary: &TaskSummary) -> Result<(), KvError> {
    let stored = Stored { summary: summary.clone(), created_ms: summary.created_ms, failed_ms: summary.failed_ms };
    let bytes = serde_json::to_vec(&stored).map_err(|e| KvError::Backend(e.to_string()))?;
    kv.put(&summary_key(&summary.id), &bytes).await
}

/// Brings the index in line with `summary`: creates the task's keys when
/// it has none, moves its state keys when the state changed (and writes
/// its failed keys when it moved to `failed`, at the summary's update
/// time), rewrites the summary when anything listed changed. Idempotent.
pub async fn record<K: KeyValue>(kv: &K, summary: &TaskSummary) -> Result<(), IndexError> {
    let old = read_summary(kv, &summary.id).await?;
    let mut summary = summary.clone();
    summary.failed_ms = match &old {
        _ if summary.state != TaskState::Failed => None,
        Some(old) if old.state == TaskState::Failed => old.failed_ms,
        _ => Some(crate::dashboard::parse_rfc3339_ms(&summary.updated_at).unwrap_or(summary.created_ms)),
    };
    let summary = &summary;
    match &old {
        None => {
            for key in
                fixed_keys(summary).iter().chain(&state_keys(summary, summary.state)).chain(&failed_keys(summary))
            {
                kv.put(key, b"").await?;
            }
        }
        Some(old) if old.same_as(summary) => return Ok(()),
        Some(old) if old.state != summary.state => {
            for key in state_keys(summary, summary.state).iter().chain(&failed_keys(summary)) {
                kv.put(key, b"").await?;
            }
            for key in state_keys(summary, old.state).iter().chain(&failed_keys(old)) {
                kv.delete(key).await?;
            }
        }
        Some(_) => {}
    }
    write_summary(kv, summary).await?;
    Ok(())
}

/// Indexes a task `runtime::create` just created (webhook or API), before
/// its first tick: call it with the stimulus and the `now_ms` given to
/// `create`. A task already indexed is left alone.
pub async fn record_created<K: KeyValue>(kv: &K, stimulus: &Stimulus, now_ms: u64) -> Result<(), IndexError> {
    if read_summary(kv, &stimulus.task_id).await?.is_some() {
        return Ok(());
    }
    record(kv, &TaskSummary::of_stimulus(stimulus, now_ms)).await
}

/// Indexes a delivery `runtime::receive` just recorded, before its
/// admission tick; a task already indexed is left alone.
pub async fn record_received<K: KeyValue>(kv: &K, resident: &Resident, now_ms: u64) -> Result<(), IndexError> {
    let Some(origin) = resident.origin() else { return Ok(()) };
    if read_summary(kv, origin.task_id).await?.is_some() {
        return Ok(());
    }
    record(kv, &TaskSummary::of_origin(&origin, now_ms)).await
}

/// Removes every index key of task `id` (retention); nothing when it is
/// not indexed.
pub(crate) async fn forget_task<K: KeyValue>(kv: &K, id: &str) -> Result<(), KvError> {
    let Some(summary) = read_summary(kv, id).await? else { return Ok(()) };
    for key in fixed_keys(&summary).iter().chain(&state_keys(&summary, summary.state)).chain(&failed_keys(&summary)) {
        kv.delete(key).await?;
    }
    kv.delete(&summary_key(&summary.id)).await
}

/// Removes the keys of a task whose creation failed after it was indexed.
pub(crate) async fn forget<K: KeyValue>(kv: &K, summary: &TaskSummary) {
    for key in fixed_keys(summary).iter().chain(&state_keys(summary, summary.state)).chain(&failed_keys(summary)) {
        let _ = kv.delete(key).await;
    }
    let _ = kv.delete(&summary_key(&summary.id)).await;
}

/// Updates the index after a tick, from the task as the tick left it
/// ([`agent_zero_engine::TickReport::resident`]): no log read. Best
/// effort: a failure leaves the old row until the next tick records it.
pub async fn record_tick<K: KeyValue>(kv: &K, after: &Resident, now_ms: u64) -> Result<(), IndexError> {
    match TaskSummary::of_resident(after, now_ms) {
        Some(summary) => record(kv, &summary).await,
        None => Ok(()),
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
    agent_zero_contracts::base64::encode_url(format!("{prefix}\n{backend}"))
}

fn decode_cursor(cursor: &str, prefix: &str) -> Result<String, IndexError> {
    let bytes = agent_zero_contracts::base64::decode_url(cursor)
        .map_err(|_| IndexError::InvalidCursor("not a cursor this API handed out"))?;
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
