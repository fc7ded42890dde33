//! Creating a task, reading it back, and a person's approval.

use agent_zero_contracts::TaskState;
use agent_zero_ports::KeyValue;

use crate::conclude::conclude;
use crate::fact::{ApprovalDecision, Entry, Fact, Received, Stimulus};
use crate::ports::{Queue, Tick};
use crate::resident::{FoldError, Resident};
use crate::step::{Limits, next_step};
use crate::store::{Append, Store, StoreError, is_valid_task_id};
use crate::tick::meta_of;

/// Most entries read past the checkpoint when loading a task.
const MAX_PROBE: u64 = 512;

/// Why a task could not be created, loaded or decided.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The id is not 1..=128 bytes of `[A-Za-z0-9._-]`.
    #[error("invalid task id `{0}`: 1 to 128 letters, digits, `.`, `_` or `-`")]
    InvalidTaskId(String),
    /// A task with this id exists (a redelivered webhook): 409.
    #[error("task `{0}` already exists")]
    Exists(String),
    /// No such task: 404.
    #[error("task `{0}` does not exist")]
    NotFound(String),
    /// The task is not waiting for a person: 409.
    #[error("task `{task_id}` is {state}, not needs-human")]
    NotAwaitingHuman { task_id: String, state: TaskState },
    /// Another writer appended first (a tick): 409.
    #[error("task `{0}` changed while deciding; reload and retry")]
    Conflict(String),
    /// The approver was shown another decision than the one waiting (a
    /// repair replaced it since): 409, naming both digests.
    #[error(
        "task `{task_id}` waits on decision {current}, not the {shown} you were shown: reload it, read its changes and decide again"
    )]
    ShownChanged { task_id: String, shown: String, current: String },
    /// Another decision on this task won: 409, naming it.
    #[error("task `{task_id}` was already {} by {principal}", decided_verb(*decision))]
    AlreadyDecided { task_id: String, principal: String, decision: ApprovalDecision },
    /// The store failed; nothing was committed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The log does not fold.
    #[error(transparent)]
    Fold(#[from] FoldError),
}

/// Creates a task from its stimulus at `now_ms` and enqueues its first
/// tick. The pending marker is written before the enqueue, so a crash in
/// between is recovered by the sweep.
pub async fn create<K: KeyValue, Q: Queue>(
    kv: &K,
    queue: &Q,
    stimulus: Stimulus,
    now_ms: u64,
) -> Result<Tick, TaskError> {
    let id = stimulus.task_id.clone();
    begin(kv, queue, id, Fact::Created { stimulus: Box::new(stimulus) }, now_ms).await
}

/// Records a webhook delivery as a task awaiting its policy gate at
/// `now_ms` and enqueues the admission tick: everything that needs GitHub
/// happens in ticks, so a delivery is never lost to a GitHub outage. Of
/// any number of concurrent copies exactly one is created; the rest are
/// [`TaskError::Exists`].
pub async fn receive<K: KeyValue, Q: Queue>(
    kv: &K,
    queue: &Q,
    received: Received,
    now_ms: u64,
) -> Result<Tick, TaskError> {
    let id = received.task_id.clone();
    begin(kv, queue, id, Fact::Received { received: Box::new(received) }, now_ms).await
}

async fn begin<K: KeyValue, Q: Queue>(
    kv: &K,
    queue: &Q,
    id: String,
    first: Fact,
    now_ms: u64,
) -> Result<Tick, TaskError> {
    if !is_valid_task_id(&id) {
        return Err(TaskError::InvalidTaskId(id));
    }
    let store = Store::new(kv);
    let entry = Entry { seq: 0, at_ms: now_ms, facts: vec![first] };
    let mut resident = Resident::default();
    resident.apply(&entry)?;
    commit_runnable(&store, &id, &entry, &resident, now_ms).await?.map_err(|()| TaskError::Exists(id.clone()))?;
    let tick = first_tick(id, 1, &resident, now_ms);
    // A failed enqueue leaves the pending marker: the sweep delivers it.
    let _ = queue.enqueue(&tick, 0).await;
    Ok(tick)
}

/// What a host builds a tick's ports from, before the engine folds the log.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Start {
    /// The run's stimulus, with its policy snapshot.
    Run(Box<Stimulus>),
    /// A delivery still awaiting its policy gate (no policy yet).
    Awaiting(Box<Received>),
}

/// What started the task, in one KV read (two for an admitted delivery:
/// its entry 0 and the admission at entry 1). Neither ever changes, so a
/// host can build a tick's ports from it before the engine folds the log.
/// `None` when the task does not exist.
pub async fn start<K: KeyValue>(kv: &K, task_id: &str) -> Result<Option<Start>, TaskError> {
    if !is_valid_task_id(task_id) {
        return Err(TaskError::InvalidTaskId(task_id.to_owned()));
    }
    let store = Store::new(kv);
    let Some(entry) = store.entry(task_id, 0).await? else { return Ok(None) };
    let mut resident = Resident::default();
    resident.apply(&entry)?;
    if let Some(stimulus) = resident.stimulus {
        return Ok(Some(Start::Run(stimulus)));
    }
    let Some(received) = resident.intake.received else { return Ok(None) };
    // The admission, if any, is the first fact after entry 0: nothing else
    // can be committed while the delivery awaits its gate.
    let admitted = store.entry(task_id, 1).await?.and_then(|e| {
        e.facts.into_iter().find_map(|f| match f {
            Fact::Admitted { stimulus } => Some(stimulus),
            _ => None,
        })
    });
    Ok(Some(match admitted {
        Some(stimulus) => Start::Run(stimulus),
        None => Start::Awaiting(received),
    }))
}

/// The stimulus of an admitted task ([`start`]); `None` when the task does
/// not exist or still awaits its policy gate.
pub async fn stimulus<K: KeyValue>(kv: &K, task_id: &str) -> Result<Option<Stimulus>, TaskError> {
    Ok(match start(kv, task_id).await? {
        Some(Start::Run(stimulus)) => Some(*stimulus),
        _ => None,
    })
}

/// The task folded up to its last visible entry (checkpoint, then probing
/// forward), or `None` when it does not exist.
pub async fn load<K: KeyValue>(kv: &K, task_id: &str) -> Result<Option<Resident>, TaskError> {
    if !is_valid_task_id(task_id) {
        return Err(TaskError::InvalidTaskId(task_id.to_owned()));
    }
    let store = Store::new(kv);
    load_from(&store, task_id).await
}

async fn load_from<K: KeyValue>(store: &Store<'_, K>, id: &str) -> Result<Option<Resident>, TaskError> {
    let mut resident = match store.meta(id).await.map_err(StoreError::from)? {
        Some(meta) if meta.resident.seq == Some(meta.seq) => meta.resident,
        _ => Resident::default(),
    };
    for _ in 0..MAX_PROBE {
        let next = resident.seq.map_or(0, |s| s + 1);
        match store.entry(id, next).await? {
            Some(entry) => resident.apply(&entry)?,
            None => break,
        }
    }
    Ok(resident.origin().is_some().then_some(resident))
}

const fn decided_verb(decision: ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::Approve => "approved",
        ApprovalDecision::Reject => "rejected",
    }
}

/// Records `principal`'s decision on a `needs-human` task and enqueues the
/// tick that acts on it.
///
/// - approve: `needs-human -> planning`; the write is authorised again
///   with the approval standing in for the high-impact link (every other
///   link still holds), then executed, verified and reviewed as usual.
/// - reject: `needs-human -> failed` with the reason "rejected by …"; the
///   tick publishes the new ending. Nothing is written.
///
/// The principal is the authenticated caller's name, never a wire field.
/// An approval covers the decision waiting now, whose digest
/// ([`crate::decision_digest`]) it records; `shown`, when given, is the
/// digest of the decision the person was shown, and an approval of another
/// is [`TaskError::ShownChanged`].
#[allow(clippy::too_many_arguments)]
pub async fn approve<K: KeyValue, Q: Queue>(
    kv: &K,
    queue: &Q,
    task_id: &str,
    principal: &str,
    decision: ApprovalDecision,
    comment: Option<String>,
    shown: Option<&str>,
    now_ms: u64,
) -> Result<Tick, TaskError> {
    if !is_valid_task_id(task_id) {
        return Err(TaskError::InvalidTaskId(task_id.to_owned()));
    }
    let store = Store::new(kv);
    let resident = load_from(&store, task_id).await?.ok_or_else(|| TaskError::NotFound(task_id.to_owned()))?;
    if resident.state != TaskState::NeedsHuman {
        if let Some((principal, decision)) = resident.approval.decided.clone() {
            return Err(TaskError::AlreadyDecided { task_id: task_id.to_owned(), principal, decision });
        }
        return Err(TaskError::NotAwaitingHuman { task_id: task_id.to_owned(), state: resident.state });
    }
    let Some(stimulus) = resident.stimulus.as_deref() else {
        // Waiting for a person is a state only an admitted run reaches.
        return Err(TaskError::NotAwaitingHuman { task_id: task_id.to_owned(), state: resident.state });
    };
    let current = resident.attempt.decision.as_ref().map(crate::decision_digest);
    let approved = match (decision, shown, &current) {
        (ApprovalDecision::Reject, ..) => None,
        (ApprovalDecision::Approve, Some(shown), Some(current)) if shown != current => {
            return Err(TaskError::ShownChanged {
                task_id: task_id.to_owned(),
                shown: shown.to_owned(),
                current: current.clone(),
            });
        }
        (ApprovalDecision::Approve, ..) => current,
    };
    let seq = resident.seq.map_or(0, |s| s + 1);
    let mut facts = vec![Fact::Approval { principal: principal.to_owned(), decision, comment, shown: approved }];
    if decision == ApprovalDecision::Reject {
        let reason = format!("rejected by {principal}");
        facts.push(Fact::Failure { reason: reason.clone() });
        let mut ended = resident.clone();
        ended.apply(&Entry { seq, at_ms: now_ms, facts: facts.clone() })?;
        let (result, evidence) = conclude(
            &ended,
            stimulus,
            agent_zero_contracts::TerminalState::Failed,
            &format!("A person declined the change: {reason}"),
        );
        facts.push(Fact::Concluded { result: Box::new(result), evidence: Box::new(evidence) });
    }
    let entry = Entry { seq, at_ms: now_ms, facts };
    let mut next = resident.clone();
    next.apply(&entry)?;
    if commit_runnable(&store, task_id, &entry, &next, now_ms).await?.is_err() {
        // Exactly one decision commits at this seq: name the one that did.
        let winner = store.entry(task_id, seq).await?.and_then(|e| {
            e.facts.into_iter().find_map(|f| match f {
                Fact::Approval { principal, decision, .. } => Some((principal, decision)),
                _ => None,
            })
        });
        return Err(match winner {
            Some((principal, decision)) => {
                TaskError::AlreadyDecided { task_id: task_id.to_owned(), principal, decision }
            }
            None => TaskError::Conflict(task_id.to_owned()),
        });
    }
    let tick = first_tick(task_id.to_owned(), seq + 1, &next, now_ms);
    let _ = queue.enqueue(&tick, 0).await;
    Ok(tick)
}

/// The tick that runs `after`'s next step, due now, with that step's bound
/// under the default limits so it can claim its seq in its first request
/// ([`Tick::claim_ms`]; a host's own limits may differ: a longer step moves
/// the claim on, one request more, and a shorter one holds it a little
/// longer than it needs).
fn first_tick(task_id: String, seq: u64, after: &Resident, now_ms: u64) -> Tick {
    let limits = Limits::default();
    let claim_ms = next_step(after, now_ms, &limits).bound_ms(after, now_ms, &limits);
    Tick { claim_ms, ..Tick::new(task_id, seq) }
}

/// Commits `entry`, after which `after` has a tick due now: `Err(())`,
/// with nothing written, when its seq was taken. The task is first named
/// active; where the store writes a task's keys together, the entry goes
/// in one request with the checkpoint, which carries the due time;
/// elsewhere the entry is inserted, then the checkpoint rewritten.
async fn commit_runnable<K: KeyValue>(
    store: &Store<'_, K>,
    id: &str,
    entry: &Entry,
    after: &Resident,
    now_ms: u64,
) -> Result<Result<(), ()>, StoreError> {
    let meta = meta_of(after, now_ms, Some(now_ms));
    store.mark_active(id, now_ms).await?;
    if store.commits_at_once(id)
        && let Some(committed) = store.commit_at_once(id, entry, None, &meta, &[]).await?
    {
        return Ok(if committed { Ok(()) } else { Err(()) });
    }
    if store.append(id, entry).await? == Append::Taken {
        return Ok(Err(()));
    }
    let _ = store.put_meta(id, &meta).await;
    Ok(Ok(()))
}
