//! The resident model: the task log folded into memory, and nothing else.
//!
//! [`fold`] from entry 0 (a cold start) and [`Resident::apply`] from a
//! checkpoint (a warm tick) are the same code, so there is no separate
//! recovery path that could drift from the live one.
//!
//! The [`Resident`] holds the run's input and lifecycle; every other
//! concern is a part of its own ([`Arrival`], [`Sandbox`], [`Discovery`],
//! [`Attempt`], [`Approval`], [`Conclusion`]), each changed only by the
//! facts of that concern.

use agent_zero_agent::LifecycleMachine;
use agent_zero_contracts::{OmittedItem, RunCost, TaskEvent, TaskState, Usage, rfc3339};
use serde::Serialize;

pub use self::parts::{Approval, Arrival, Attempt, ChecksJob, Conclusion, Discovery, Sandbox};
use crate::fact::{ApprovalDecision, Entry, Fact, ModelOutcome, Stimulus};

mod de;
mod parts;
mod stop;

pub(crate) use self::stop::{FINDING_INCONCLUSIVE, REPAIRS_EXHAUSTED, review_refusal, stop_reason};

/// Why a log cannot be folded: it was not written by this engine, or
/// entries are missing. Never a policy outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FoldError {
    /// Entries must be folded in order, starting at 0.
    #[error("log entry {got} folded after {after:?}: entries must be consecutive")]
    OutOfOrder { got: u64, after: Option<u64> },
    /// Entry 0 must hold the stimulus, and only entry 0.
    #[error("log entry {seq}: {reason}")]
    Malformed { seq: u64, reason: String },
    /// A transition the lifecycle machine refuses.
    #[error("log entry {seq}: {reason}")]
    Transition { seq: u64, reason: String },
}

/// The `SandboxError.operation` of a lease the pool refused for quota: the
/// task waits for a slot instead of failing.
pub(crate) const LEASE_REFUSED: &str = "lease-refused";

/// The `SandboxError.operation` of a background job of checks that was
/// lost (its process gone, its sandbox restarted, or past its deadline):
/// counted like any sandbox error, and the next tick starts the checks again.
pub(crate) const CHECKS_LOST: &str = "checks-lost";

/// Everything a tick needs to decide, derived only from the log: the
/// run's input and lifecycle here, each other concern in its own part.
/// Read back key by key by the flat reader in `resident/de.rs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resident {
    /// The last folded seq; `None` before entry 0.
    pub seq: Option<u64>,
    /// The run's input: entry 0 of a task created with it, or the
    /// admission of a [`Received`](crate::Received) delivery. `None` while a delivery
    /// awaits its policy gate.
    pub stimulus: Option<Box<Stimulus>>,
    pub state: TaskState,
    /// Every state entered, in order (replayed into the machine).
    pub path: Vec<TaskState>,
    pub events: Vec<TaskEvent>,
    pub created_ms: u64,
    /// When the run began: creation, or a delivery's admission. The run's
    /// `agent.timeoutMs` counts from here.
    #[serde(default)]
    pub started_ms: u64,
    /// When the task last entered a finished state (`completed`, `failed`,
    /// `ignored`): its retention counts from here. `None` while it runs or
    /// waits for a person.
    #[serde(default)]
    pub ended_ms: Option<u64>,
    /// `agent.maxAttempts` of the stimulus policy.
    pub max_attempts: u32,
    /// The model tokens (and dollars) the run used, over every call.
    pub usage: Usage,
    /// What the metered ticks cost their host, added up ([`Fact::Metered`]);
    /// `None` when no tick was metered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<RunCost>,
    /// The delivery before it became a run.
    #[serde(flatten)]
    pub intake: Arrival,
    /// The sandbox lease and how the sandbox served.
    #[serde(flatten)]
    pub sandbox: Sandbox,
    /// What discovery found in the checkout.
    #[serde(flatten)]
    pub discovery: Discovery,
    /// The current attempt: decision, finding, writes and checks.
    #[serde(flatten)]
    pub attempt: Attempt,
    /// A person's answer to `needs-human`.
    #[serde(flatten)]
    pub approval: Approval,
    /// The recorded ending and its publication.
    #[serde(flatten)]
    pub conclusion: Conclusion,
}

impl Default for Resident {
    fn default() -> Self {
        Self {
            seq: None,
            stimulus: None,
            state: TaskState::Queued,
            path: Vec::new(),
            events: Vec::new(),
            created_ms: 0,
            started_ms: 0,
            ended_ms: None,
            max_attempts: 1,
            usage: Usage::default(),
            cost: None,
            intake: Arrival::default(),
            sandbox: Sandbox::default(),
            discovery: Discovery::default(),
            attempt: Attempt::default(),
            approval: Approval::default(),
            conclusion: Conclusion::default(),
        }
    }
}

/// Folds a whole log from the beginning.
pub fn fold(entries: &[Entry]) -> Result<Resident, FoldError> {
    let mut resident = Resident::default();
    for entry in entries {
        resident.apply(entry)?;
    }
    Ok(resident)
}

impl Resident {
    /// Where the task came from, whether or not it was admitted yet.
    pub fn origin(&self) -> Option<Origin<'_>> {
        if let Some(s) = self.stimulus.as_deref() {
            return Some(Origin {
                task_id: &s.task_id,
                repository: &s.repository,
                forge: s.input.forge,
                trigger: s.trigger,
                mode: Some(s.mode),
                source: s.source.as_deref(),
                title: s.input.issue.as_ref().map(|i| i.title.text.as_str()),
            });
        }
        self.intake.received.as_deref().map(|r| Origin {
            task_id: &r.task_id,
            repository: &r.repository,
            forge: r.forge(),
            trigger: r.trigger,
            mode: None,
            source: r.source.as_deref(),
            title: r.title.as_deref(),
        })
    }

    /// The lifecycle machine, rebuilt by replaying every state entered.
    pub fn machine(&self) -> Result<LifecycleMachine, FoldError> {
        let mut machine = LifecycleMachine::new(self.max_attempts);
        for (index, next) in self.path.iter().enumerate() {
            let seq = index as u64;
            step_machine(&mut machine, *next).map_err(|reason| FoldError::Transition { seq, reason })?;
        }
        Ok(machine)
    }

    /// Executed attempts so far.
    pub fn attempts(&self) -> u32 {
        self.path.iter().filter(|s| **s == TaskState::Executing).count() as u32
    }

    /// Whether the lifecycle has ended and its result is recorded.
    pub fn is_concluded(&self) -> bool {
        self.state.is_terminal() && self.conclusion.concluded.is_some()
    }

    /// Applies one entry. Entries must come in seq order.
    pub fn apply(&mut self, entry: &Entry) -> Result<(), FoldError> {
        let expected = self.seq.map_or(0, |s| s + 1);
        if entry.seq != expected {
            return Err(FoldError::OutOfOrder { got: entry.seq, after: self.seq });
        }
        let seq = entry.seq;
        let malformed = |reason: &str| FoldError::Malformed { seq, reason: reason.to_owned() };
        if (seq == 0) != matches!(entry.facts.first(), Some(Fact::Created { .. } | Fact::Received { .. })) {
            return Err(malformed("entry 0, and only entry 0, starts with the stimulus or the received delivery"));
        }
        let mut machine = if seq == 0 { None } else { Some(self.machine()?) };
        for fact in &entry.facts {
            match fact {
                Fact::Created { stimulus } => {
                    if seq != 0 {
                        return Err(malformed("a second stimulus"));
                    }
                    self.max_attempts = stimulus.policy.agent.max_attempts.max(1);
                    self.created_ms = entry.at_ms;
                    self.started_ms = entry.at_ms;
                    self.stimulus = Some(stimulus.clone());
                    machine = Some(LifecycleMachine::new(self.max_attempts));
                }
                Fact::Received { received } => {
                    if seq != 0 {
                        return Err(malformed("a second received delivery"));
                    }
                    self.created_ms = entry.at_ms;
                    self.intake.received = Some(received.clone());
                    machine = Some(LifecycleMachine::new(self.max_attempts));
                }
                Fact::Admitted { stimulus } => {
                    if self.intake.received.is_none() || self.stimulus.is_some() || self.state != TaskState::Queued {
                        return Err(malformed("an admission of a task that awaits none"));
                    }
                    if stimulus.task_id != self.intake.received.as_ref().map_or("", |r| r.task_id.as_str()) {
                        return Err(malformed("an admission of another task"));
                    }
                    self.max_attempts = stimulus.policy.agent.max_attempts.max(1);
                    self.stimulus = Some(stimulus.clone());
                    // The machine's attempt bound comes from the admitted policy.
                    machine = Some(LifecycleMachine::new(self.max_attempts));
                    self.intake.errors = 0;
                    self.intake.last_error = None;
                    self.started_ms = entry.at_ms;
                    self.intake.admitted_seq = seq;
                }
                Fact::Declined { reason, message } => self.intake.declined = Some((reason.clone(), message.clone())),
                Fact::AdmissionError { reason } => {
                    self.intake.errors += 1;
                    self.intake.last_error = Some(reason.clone());
                }
                Fact::Transition { from, to, message, attempt } => {
                    let machine = machine.as_mut().ok_or_else(|| malformed("transition before the stimulus"))?;
                    if *from == TaskState::NeedsHuman {
                        return Err(malformed("only an approval fact leaves needs-human"));
                    }
                    if *from != machine.state() {
                        let reason = format!("transition from {from} while the task is {}", machine.state());
                        return Err(FoldError::Transition { seq, reason });
                    }
                    step_machine(machine, *to).map_err(|reason| FoldError::Transition { seq, reason })?;
                    // The run's time starts when it leaves `queued` for
                    // work: a wait for a running slot is not the run's.
                    if *from == TaskState::Queued && !to.is_terminal() {
                        self.started_ms = entry.at_ms;
                    }
                    self.enter(*to, message, *attempt, entry.at_ms);
                }
                Fact::Leased { lease } => {
                    // Checks started on another lease are not on this one.
                    self.sandbox.checks_job = None;
                    self.sandbox.runner = Some(lease.runner.clone());
                    self.sandbox.lease = Some(lease.clone());
                    self.sandbox.released = false;
                    self.sandbox.errors = 0;
                    self.sandbox.lease_waits = 0;
                }
                Fact::SandboxError { operation, .. } if operation == LEASE_REFUSED => {
                    self.sandbox.lease_waits += 1;
                }
                Fact::SandboxError { operation, .. } => {
                    self.sandbox.errors += 1;
                    if operation == "lease-gone" {
                        self.sandbox.lease = None;
                        self.sandbox.checks_job = None;
                    }
                    if operation == CHECKS_LOST {
                        self.sandbox.checks_job = None;
                    }
                }
                Fact::Discovered { files, checks, diff, omitted, review } => {
                    self.discovery.review.clone_from(review);
                    self.discovery.discovered = true;
                    self.discovery.files.clone_from(files);
                    self.discovery.checks.clone_from(checks);
                    self.discovery.diff.clone_from(diff);
                    self.discovery.omitted.extend(omitted.iter().cloned());
                }
                Fact::ModelCall { outcome, .. } => match outcome {
                    ModelOutcome::Decided { decision, usage } => {
                        self.usage = self.usage.add(usage);
                        // An approval covers the decision it was shown: a new
                        // one (a repair's) needs a new approval.
                        if self.approval.approved_digest.as_deref() != Some(&crate::decision_digest(decision)) {
                            self.approval.approved_by = None;
                            self.approval.approved_digest = None;
                            self.approval.lifted.clear();
                        }
                        self.attempt.decision = Some(decision.clone());
                        self.attempt.fresh_decision = true;
                        self.attempt.model_failures = 0;
                        self.attempt.last_violation = None;
                    }
                    ModelOutcome::Unusable { violation, usage } => {
                        self.usage = self.usage.add(usage);
                        self.attempt.model_failures += 1;
                        self.attempt.last_violation = Some(violation.clone());
                    }
                    ModelOutcome::Unavailable { .. } => self.attempt.model_failures += 1,
                },
                Fact::Finding { finding, omitted, doc_use, quoted_files } => {
                    self.discovery.doc_use = doc_use.clone();
                    self.attempt.finding = Some(finding.clone());
                    self.attempt.quoted_files.clone_from(quoted_files);
                    self.discovery.omitted.extend(omitted.iter().cloned());
                }
                Fact::Witnessed { witness } => self.attempt.witness = Some(witness.clone()),
                Fact::WriteDecision { outcome } => self.attempt.write = Some(outcome.clone()),
                Fact::Applied { files } => {
                    self.attempt.applied.clone_from(files);
                    self.sandbox.applied_on = self.sandbox.lease.as_ref().map(|l| l.id.clone());
                }
                Fact::ChecksStarted { attempt, job, lease } => {
                    self.sandbox.checks_job = Some(ChecksJob {
                        attempt: *attempt,
                        job: job.clone(),
                        lease: lease.clone(),
                        started_ms: entry.at_ms,
                    });
                }
                Fact::Checked { results, .. } => {
                    self.attempt.check_results.clone_from(results);
                    self.sandbox.checks_job = None;
                }
                Fact::Reviewed { changed_files, out_of_scope, byproducts, tree } => {
                    self.attempt.reviewed = true;
                    self.attempt.tree = tree.iter().map(|r| r.file.clone()).collect();
                    self.attempt.rewritten =
                        tree.iter().filter_map(|r| r.content.clone().map(|c| (r.file.path.clone(), c))).collect();
                    self.attempt.changed_files.clone_from(changed_files);
                    self.attempt.out_of_scope.clone_from(out_of_scope);
                    self.discovery.omitted.extend(byproducts.iter().map(|path| OmittedItem {
                        kind: "byproduct".into(),
                        subject: path.clone(),
                        reason: "written by the repository's checks, not tracked at the leased commit: not part of the change, never published".into(),
                    }));
                }
                Fact::Approval { principal, decision, shown, .. } => {
                    let machine = machine.as_mut().ok_or_else(|| malformed("approval before the stimulus"))?;
                    // What the person decided on: the stop the task waits at.
                    let stop = stop_reason(self).map(|r| r.code);
                    let moved = match decision {
                        ApprovalDecision::Approve => machine.approve(),
                        ApprovalDecision::Reject => machine.deny(),
                    };
                    let to = moved.map_err(|e| FoldError::Transition { seq, reason: e.to_string() })?;
                    let verb = if *decision == ApprovalDecision::Approve { "approved" } else { "rejected" };
                    self.enter(to, &format!("{verb} by {principal}"), None, entry.at_ms);
                    let approved = *decision == ApprovalDecision::Approve;
                    if self.approval.approved_digest != *shown {
                        self.approval.lifted.clear();
                    }
                    if approved {
                        self.approval.lifted.extend(stop.clone());
                        // The run resumes on its own clock: `agent.timeoutMs`
                        // and the runaway guard count from the approval, not
                        // from the first start.
                        self.started_ms = entry.at_ms;
                        self.approval.resumed_seq = seq;
                    } else {
                        self.approval.lifted.clear();
                    }
                    if approved && stop.as_deref() == Some(REPAIRS_EXHAUSTED) {
                        // Another try is a repair: a new decision from the
                        // failing output, not the same change again.
                        self.attempt.fresh_decision = false;
                    }
                    self.approval.approved_by = approved.then(|| principal.clone());
                    self.approval.approved_digest = shown.clone().filter(|_| approved);
                    self.approval.decided = Some((principal.clone(), *decision));
                    // A new ending will be concluded and published.
                    self.conclusion.concluded = None;
                    self.conclusion.published = None;
                    self.conclusion.publish_attempts = 0;
                }
                Fact::Concluded { result, evidence } => {
                    self.conclusion.concluded = Some(Box::new(((**result).clone(), (**evidence).clone())));
                }
                Fact::Released => {
                    self.sandbox.lease = None;
                    self.sandbox.released = true;
                }
                Fact::Published { outcome } => {
                    self.conclusion.publish_attempts += 1;
                    self.conclusion.published = Some(outcome.clone());
                }
                Fact::Failure { reason } => self.conclusion.failure = Some(reason.clone()),
                Fact::Metered { cost } => self.cost = Some(self.cost.unwrap_or_default().add(cost)),
            }
        }
        self.seq = Some(seq);
        Ok(())
    }

    fn enter(&mut self, to: TaskState, message: &str, attempt: Option<u32>, at_ms: u64) {
        if to == TaskState::Planning && self.state == TaskState::Verifying {
            self.attempt.fresh_decision = false;
        }
        if to != TaskState::Verifying {
            self.sandbox.checks_job = None;
        }
        self.state = to;
        self.ended_ms = (to.is_terminal() && to != TaskState::NeedsHuman).then_some(at_ms);
        self.path.push(to);
        self.events.push(TaskEvent { state: to, message: message.to_owned(), timestamp: rfc3339(at_ms), attempt });
        self.attempt.model_failures = 0;
        self.attempt.last_violation = None;
        self.sandbox.errors = 0;
    }
}

/// Where a task came from: its stimulus, or the delivery awaiting
/// admission (whose mode the policy has not decided yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin<'a> {
    pub task_id: &'a str,
    pub repository: &'a str,
    /// The forge the repository lives on.
    pub forge: agent_zero_contracts::ForgeKind,
    pub trigger: agent_zero_contracts::Trigger,
    /// `None` until the policy gate decided it.
    pub mode: Option<agent_zero_contracts::RunMode>,
    pub source: Option<&'a str>,
    /// Untrusted: the issue title, when there is one.
    pub title: Option<&'a str>,
}

/// One move of the machine, the way the log records it: `failed` is
/// always reachable, a human decision leaves `needs-human`.
fn step_machine(machine: &mut LifecycleMachine, next: TaskState) -> Result<(), String> {
    let result = match (machine.state(), next) {
        (TaskState::NeedsHuman, TaskState::Planning) => machine.approve(),
        (TaskState::NeedsHuman, TaskState::Failed) => machine.deny(),
        (from, TaskState::Failed) if !from.is_terminal() => Ok(machine.fail()),
        _ => machine.to(next),
    };
    result.map(|_| ()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use agent_zero_contracts::{RunMode, Trigger};

    use super::*;
    use crate::fact::TaskInput;

    fn created() -> Entry {
        let stimulus = Stimulus {
            task_id: "t".into(),
            repository: "a/b".into(),
            trigger: Trigger::Feedback,
            mode: RunMode::Observe,
            source: None,
            input: TaskInput::default(),
            policy: agent_zero_agent::Policy::default(),
        };
        Entry { seq: 0, at_ms: 5, facts: vec![Fact::Created { stimulus: Box::new(stimulus) }] }
    }

    fn moved(seq: u64, from: TaskState, to: TaskState) -> Entry {
        Entry { seq, at_ms: 6, facts: vec![Fact::Transition { from, to, message: String::new(), attempt: None }] }
    }

    #[test]
    fn folds_in_order_through_the_machine() {
        let r = fold(&[created(), moved(1, TaskState::Queued, TaskState::Discovering)]).unwrap();
        assert_eq!((r.state, r.seq, r.created_ms), (TaskState::Discovering, Some(1), 5));
        assert_eq!(r.machine().unwrap().state(), TaskState::Discovering);
    }

    #[test]
    fn refuses_logs_this_engine_never_writes() {
        let skip = fold(&[created(), moved(2, TaskState::Queued, TaskState::Discovering)]);
        assert!(matches!(skip, Err(FoldError::OutOfOrder { got: 2, .. })), "{skip:?}");
        let no_stimulus = fold(&[moved(0, TaskState::Queued, TaskState::Discovering)]);
        assert!(matches!(no_stimulus, Err(FoldError::Malformed { seq: 0, .. })));
        let second = fold(&[created(), Entry { seq: 1, ..created() }]);
        assert!(matches!(second, Err(FoldError::Malformed { seq: 1, .. })));
        let undefined = fold(&[created(), moved(1, TaskState::Queued, TaskState::Completed)]);
        assert!(matches!(undefined, Err(FoldError::Transition { seq: 1, .. })), "{undefined:?}");
        let wrong_from = fold(&[created(), moved(1, TaskState::Planning, TaskState::Executing)]);
        assert!(matches!(wrong_from, Err(FoldError::Transition { .. })));
        // Terminal states are left only through an approval fact.
        let failed = [
            created(),
            moved(1, TaskState::Queued, TaskState::Failed),
            moved(2, TaskState::Failed, TaskState::Planning),
        ];
        assert!(fold(&failed).is_err());
    }
}
