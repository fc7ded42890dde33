//! The resident model: the task log folded into memory, and nothing else.
//!
//! [`fold`] from entry 0 (a cold start) and [`Resident::apply`] from a
//! checkpoint (a warm tick) are the same code, so there is no separate
//! recovery path that could drift from the live one.

use agent_zero_agent::LifecycleMachine;
use agent_zero_contracts::{
    AgentDecision, CheckResult, EvidenceBundle, Finding, OmittedItem, RunnerDescription, TaskEvent, TaskResult,
    TaskState, Usage, rfc3339,
};
use serde::{Deserialize, Serialize};

use crate::fact::{
    ApprovalDecision, Entry, Fact, Lease, ModelOutcome, PublicationOutcome, Received, Stimulus, WriteOutcome,
};

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

/// Everything a tick needs to decide, derived only from the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resident {
    /// The last folded seq; `None` before entry 0.
    pub seq: Option<u64>,
    /// The run's input: entry 0 of a task created with it, or the
    /// admission of a [`Received`] delivery. `None` while a delivery
    /// awaits its policy gate.
    pub stimulus: Option<Box<Stimulus>>,
    /// The delivery a webhook task started from (entry 0), if it did.
    #[serde(default)]
    pub received: Option<Box<Received>>,
    /// Consecutive failures to read the policy at admission.
    #[serde(default)]
    pub admission_errors: u32,
    /// The last of those failures.
    #[serde(default)]
    pub admission_error: Option<String>,
    /// Why the policy gate declined the delivery (`reason`, `message`).
    #[serde(default)]
    pub declined: Option<(String, String)>,
    pub state: TaskState,
    /// Every state entered, in order (replayed into the machine).
    pub path: Vec<TaskState>,
    pub events: Vec<TaskEvent>,
    pub created_ms: u64,
    /// When the run began: creation, or a delivery's admission. The run's
    /// `agent.timeoutMs` counts from here.
    #[serde(default)]
    pub started_ms: u64,
    /// The seq of the admission; ticks before it (waiting for GitHub) do
    /// not count against the runaway guard.
    #[serde(default)]
    pub admitted_seq: u64,
    /// When the task last entered a finished state (`completed`, `failed`,
    /// `ignored`): its retention counts from here. `None` while it runs or
    /// waits for a person.
    #[serde(default)]
    pub ended_ms: Option<u64>,
    pub lease: Option<Lease>,
    /// The runner of the most recent lease (kept after release, for evidence).
    pub runner: Option<RunnerDescription>,
    /// Lease id the current attempt's changes were written to.
    pub applied_on: Option<String>,
    /// Consecutive sandbox errors in the current state.
    pub sandbox_errors: u32,
    /// Consecutive lease refusals (pool quota full): waited out with
    /// backoff, bounded by `agent.timeoutMs`, never counted as errors.
    #[serde(default)]
    pub lease_waits: u32,
    pub discovered: bool,
    pub files: Vec<String>,
    pub checks: Vec<Vec<String>>,
    pub diff: Option<String>,
    /// A pull-request review's ledger of the changed files.
    #[serde(default)]
    pub review: Option<agent_zero_contracts::ReviewLedger>,
    pub omitted: Vec<OmittedItem>,
    pub decision: Option<AgentDecision>,
    /// True when `decision` was produced since the last repair began.
    pub fresh_decision: bool,
    /// Consecutive unusable/unavailable model answers in the current state.
    pub model_failures: u32,
    pub last_violation: Option<String>,
    pub usage: Usage,
    pub finding: Option<Finding>,
    pub write: Option<WriteOutcome>,
    pub applied: Vec<String>,
    pub check_results: Vec<CheckResult>,
    pub changed_files: Vec<String>,
    pub out_of_scope: Vec<String>,
    pub reviewed: bool,
    /// The run's files as the sandbox held them after the checks.
    #[serde(default)]
    pub tree: Vec<agent_zero_contracts::TreeFile>,
    /// `(path, content)` of the run's files a check rewrote: the verified
    /// content, published instead of what was written.
    #[serde(default)]
    pub rewritten: Vec<(String, String)>,
    /// The approval that resumed the task, if one did (and still applies).
    pub approved_by: Option<String>,
    /// The last decision a person made on this task, and who made it.
    #[serde(default)]
    pub decided: Option<(String, ApprovalDecision)>,
    pub concluded: Option<Box<(TaskResult, EvidenceBundle)>>,
    pub released: bool,
    pub published: Option<PublicationOutcome>,
    pub publish_attempts: u32,
    pub failure: Option<String>,
    /// `agent.maxAttempts` of the stimulus policy.
    pub max_attempts: u32,
}

impl Default for Resident {
    fn default() -> Self {
        Self {
            seq: None,
            stimulus: None,
            received: None,
            admission_errors: 0,
            admission_error: None,
            declined: None,
            state: TaskState::Queued,
            path: Vec::new(),
            events: Vec::new(),
            created_ms: 0,
            started_ms: 0,
            admitted_seq: 0,
            ended_ms: None,
            decided: None,
            lease: None,
            runner: None,
            applied_on: None,
            sandbox_errors: 0,
            lease_waits: 0,
            discovered: false,
            files: Vec::new(),
            checks: Vec::new(),
            diff: None,
            review: None,
            omitted: Vec::new(),
            decision: None,
            fresh_decision: false,
            model_failures: 0,
            last_violation: None,
            usage: Usage::default(),
            finding: None,
            write: None,
            applied: Vec::new(),
            check_results: Vec::new(),
            changed_files: Vec::new(),
            out_of_scope: Vec::new(),
            reviewed: false,
            tree: Vec::new(),
            rewritten: Vec::new(),
            approved_by: None,
            concluded: None,
            released: false,
            published: None,
            publish_attempts: 0,
            failure: None,
            max_attempts: 1,
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
    /// The stimulus (present once entry 0 is folded and, for a webhook
    /// delivery, once it was admitted: [`crate::next_step`] admits first).
    pub fn stimulus(&self) -> &Stimulus {
        self.stimulus.as_deref().expect("entry 0 folded and the delivery admitted before any decision")
    }

    /// Where the task came from, whether or not it was admitted yet.
    pub fn origin(&self) -> Option<Origin<'_>> {
        if let Some(s) = self.stimulus.as_deref() {
            return Some(Origin {
                task_id: &s.task_id,
                repository: &s.repository,
                trigger: s.trigger,
                mode: Some(s.mode),
                source: s.source.as_deref(),
                title: s.input.issue.as_ref().map(|i| i.title.text.as_str()),
            });
        }
        self.received.as_deref().map(|r| Origin {
            task_id: &r.task_id,
            repository: &r.repository,
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
        self.state.is_terminal() && self.concluded.is_some()
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
                    self.received = Some(received.clone());
                    machine = Some(LifecycleMachine::new(self.max_attempts));
                }
                Fact::Admitted { stimulus } => {
                    if self.received.is_none() || self.stimulus.is_some() || self.state != TaskState::Queued {
                        return Err(malformed("an admission of a task that awaits none"));
                    }
                    if stimulus.task_id != self.received.as_ref().map_or("", |r| r.task_id.as_str()) {
                        return Err(malformed("an admission of another task"));
                    }
                    self.max_attempts = stimulus.policy.agent.max_attempts.max(1);
                    self.stimulus = Some(stimulus.clone());
                    // The machine's attempt bound comes from the admitted policy.
                    machine = Some(LifecycleMachine::new(self.max_attempts));
                    self.admission_errors = 0;
                    self.admission_error = None;
                    self.started_ms = entry.at_ms;
                    self.admitted_seq = seq;
                }
                Fact::Declined { reason, message } => self.declined = Some((reason.clone(), message.clone())),
                Fact::AdmissionError { reason } => {
                    self.admission_errors += 1;
                    self.admission_error = Some(reason.clone());
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
                    self.enter(*to, message, *attempt, entry.at_ms);
                }
                Fact::Leased { lease } => {
                    self.runner = Some(lease.runner.clone());
                    self.lease = Some(lease.clone());
                    self.released = false;
                    self.sandbox_errors = 0;
                    self.lease_waits = 0;
                }
                Fact::SandboxError { operation, .. } if operation == LEASE_REFUSED => {
                    self.lease_waits += 1;
                }
                Fact::SandboxError { operation, .. } => {
                    self.sandbox_errors += 1;
                    if operation == "lease-gone" {
                        self.lease = None;
                    }
                }
                Fact::Discovered { files, checks, diff, omitted, review } => {
                    self.review.clone_from(review);
                    self.discovered = true;
                    self.files.clone_from(files);
                    self.checks.clone_from(checks);
                    self.diff.clone_from(diff);
                    self.omitted.extend(omitted.iter().cloned());
                }
                Fact::ModelCall { outcome, .. } => match outcome {
                    ModelOutcome::Decided { decision, usage } => {
                        self.usage = self.usage.add(usage);
                        self.decision = Some(decision.clone());
                        self.fresh_decision = true;
                        self.model_failures = 0;
                        self.last_violation = None;
                    }
                    ModelOutcome::Unusable { violation, usage } => {
                        self.usage = self.usage.add(usage);
                        self.model_failures += 1;
                        self.last_violation = Some(violation.clone());
                    }
                    ModelOutcome::Unavailable { .. } => self.model_failures += 1,
                },
                Fact::Finding { finding, omitted } => {
                    self.finding = Some(finding.clone());
                    self.omitted.extend(omitted.iter().cloned());
                }
                Fact::WriteDecision { outcome } => self.write = Some(outcome.clone()),
                Fact::Applied { files } => {
                    self.applied.clone_from(files);
                    self.applied_on = self.lease.as_ref().map(|l| l.id.clone());
                }
                Fact::Checked { results, .. } => self.check_results.clone_from(results),
                Fact::Reviewed { changed_files, out_of_scope, byproducts, tree } => {
                    self.reviewed = true;
                    self.tree = tree.iter().map(|r| r.file.clone()).collect();
                    self.rewritten =
                        tree.iter().filter_map(|r| r.content.clone().map(|c| (r.file.path.clone(), c))).collect();
                    self.changed_files.clone_from(changed_files);
                    self.out_of_scope.clone_from(out_of_scope);
                    self.omitted.extend(byproducts.iter().map(|path| OmittedItem {
                        kind: "byproduct".into(),
                        subject: path.clone(),
                        reason: "written by the repository's checks, not tracked at the leased commit: not part of the change, never published".into(),
                    }));
                }
                Fact::Approval { principal, decision, .. } => {
                    let machine = machine.as_mut().ok_or_else(|| malformed("approval before the stimulus"))?;
                    let moved = match decision {
                        ApprovalDecision::Approve => machine.approve(),
                        ApprovalDecision::Reject => machine.deny(),
                    };
                    let to = moved.map_err(|e| FoldError::Transition { seq, reason: e.to_string() })?;
                    let verb = if *decision == ApprovalDecision::Approve { "approved" } else { "rejected" };
                    self.enter(to, &format!("{verb} by {principal}"), None, entry.at_ms);
                    self.approved_by = (*decision == ApprovalDecision::Approve).then(|| principal.clone());
                    self.decided = Some((principal.clone(), *decision));
                    // A new ending will be concluded and published.
                    self.concluded = None;
                    self.published = None;
                    self.publish_attempts = 0;
                }
                Fact::Concluded { result, evidence } => {
                    self.concluded = Some(Box::new(((**result).clone(), (**evidence).clone())));
                }
                Fact::Released => {
                    self.lease = None;
                    self.released = true;
                }
                Fact::Published { outcome } => {
                    self.publish_attempts += 1;
                    self.published = Some(outcome.clone());
                }
                Fact::Failure { reason } => self.failure = Some(reason.clone()),
            }
        }
        self.seq = Some(seq);
        Ok(())
    }

    fn enter(&mut self, to: TaskState, message: &str, attempt: Option<u32>, at_ms: u64) {
        if to == TaskState::Planning && self.state == TaskState::Verifying {
            self.fresh_decision = false;
        }
        self.state = to;
        self.ended_ms = (to.is_terminal() && to != TaskState::NeedsHuman).then_some(at_ms);
        self.path.push(to);
        self.events.push(TaskEvent { state: to, message: message.to_owned(), timestamp: rfc3339(at_ms), attempt });
        self.model_failures = 0;
        self.last_violation = None;
        self.sandbox_errors = 0;
    }
}

/// Where a task came from: its stimulus, or the delivery awaiting
/// admission (whose mode the policy has not decided yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin<'a> {
    pub task_id: &'a str,
    pub repository: &'a str,
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
