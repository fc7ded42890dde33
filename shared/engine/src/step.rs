//! Decide: from the folded state, the one step a tick takes next, with the
//! data it acts on. Pure; the only place that checks what a state needs.

use agent_zero_contracts::{
    AgentDecision, EvidenceBundle, Finding, ModelFinding, ProposedChange, TaskResult, TaskState, TerminalState,
};

use crate::fact::{LeaseRecord, PublicationOutcome, Received};
use crate::resident::{ChecksJob, Resident};

/// Engine-wide bounds (the policy bounds come from the stimulus).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Runaway guard: a task still running after this many committed
    /// ticks is a loop bug or a stuck model, not progress.
    pub max_ticks: u64,
    /// Consecutive sandbox errors tolerated in one state.
    pub max_sandbox_errors: u32,
    /// Publication attempts before the engine gives up (recorded).
    pub max_publish_attempts: u32,
    /// First retry delay; doubles per consecutive failure.
    pub backoff_ms: u64,
    /// Longest retry delay.
    pub max_backoff_ms: u64,
    /// Bound on one model call (`AGENT_ZERO_MODEL_TIMEOUT_MS`); a model
    /// step may make two (the primary, then the fallback).
    pub model_call_ms: u64,
    /// Bound on one sandbox batch other than the checks (lease, list, read,
    /// write, diff, release).
    pub sandbox_call_ms: u64,
    /// Bound on one publication (comment, check run, branch, pull request).
    pub publish_ms: u64,
    /// Added to every step's bound before its claim expires.
    pub claim_margin_ms: u64,
    /// Whether the checks are started as a background job and polled by
    /// later ticks ([`crate::Workspace::start_checks`]), so no tick lasts as
    /// long as the checks: what a host with a short wall clock needs.
    /// `false` runs them in one tick, bounded by what is left of
    /// `agent.timeoutMs`.
    pub checks_in_background: bool,
    /// The shortest wait before polling running checks again; the wait
    /// grows with the checks' age, up to a minute (`act/verify.rs`).
    pub check_poll_ms: u64,
    /// How long a delivery may wait for its policy (GitHub unreachable)
    /// before the task fails; within GitHub's 3-day redelivery window.
    pub admission_ms: u64,
    /// Longest retry delay while waiting for the policy.
    pub max_admission_backoff_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_ticks: 48,
            max_sandbox_errors: 3,
            max_publish_attempts: 3,
            backoff_ms: 1_000,
            max_backoff_ms: 60_000,
            model_call_ms: 120_000,
            sandbox_call_ms: 300_000,
            publish_ms: 120_000,
            claim_margin_ms: 30_000,
            checks_in_background: false,
            check_poll_ms: 1_000,
            admission_ms: 24 * 3_600_000,
            max_admission_backoff_ms: 300_000,
        }
    }
}

/// What is left at `now_ms` of the run's `agent.timeoutMs` (at least 1):
/// the bound of a lease and of the checks.
/// A `queued` task has not started: all of it is left.
pub(crate) fn remaining_ms(resident: &Resident, now_ms: u64) -> u64 {
    let timeout = resident.stimulus.as_ref().map_or(0, |s| s.policy.agent.timeout_ms);
    timeout.saturating_sub(elapsed_ms(resident, now_ms)).max(1)
}

/// How long the run has been going at `now_ms`: since it left `queued`
/// (a wait for a running slot is not the run's), none while it is there.
fn elapsed_ms(resident: &Resident, now_ms: u64) -> u64 {
    if resident.state == TaskState::Queued { 0 } else { now_ms.saturating_sub(resident.started_ms) }
}

impl Step<'_> {
    /// How long this step may take at `now_ms`, from its own bound, when it
    /// has external effects (and so takes a claim first); `None` for the
    /// pure steps. The checks are bounded by what is left of the run's
    /// `agent.timeoutMs`.
    pub fn bound_ms(&self, resident: &Resident, now_ms: u64, limits: &Limits) -> Option<u64> {
        let bound = match self {
            Self::Understand | Self::Plan { replan: true, .. } => limits.model_call_ms.saturating_mul(2),
            Self::Verify { .. } if limits.checks_in_background => limits.sandbox_call_ms,
            Self::Verify { .. } => remaining_ms(resident, now_ms),
            Self::Lease
            | Self::Discover { .. }
            | Self::Validate { .. }
            | Self::Execute { .. }
            | Self::Review { .. }
            | Self::Release { .. } => limits.sandbox_call_ms,
            // One run of the witness (each of its two ticks runs one) and
            // the sandbox calls around it.
            Self::Witness { .. } => {
                let each = resident.stimulus.as_ref().map_or(0, |s| s.policy.review.witness.timeout_ms);
                limits.sandbox_call_ms.saturating_add(each)
            }
            Self::Admit { .. } | Self::Publish { .. } => limits.publish_ms,
            Self::Plan { replan: false, .. } | Self::Fail { .. } | Self::Quiet(_) => return None,
        };
        Some(bound.saturating_add(limits.claim_margin_ms))
    }
}

/// The next step of a task, holding what it acts on. [`next_step`] is the
/// one place that checks the log's invariants: a step's data is there, or
/// the step is [`Step::Fail`] naming what the log lacks.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<'a> {
    /// Read the repository policy and admit or decline a received delivery.
    Admit { received: &'a Received },
    /// Lease a sandbox (and leave `queued`).
    Lease,
    /// List files, read manifests, resolve checks (and the PR diff).
    Discover { lease: &'a LeaseRecord },
    /// Ask the model to interpret the input.
    Understand,
    /// Read the cited files and validate the model's claim.
    Validate { lease: &'a LeaseRecord, claim: &'a ModelFinding },
    /// Run the finding's witness at the pull request's head and base
    /// (`act/witness.rs`), before planning; or an issue run's, before its
    /// fix is written and then on the verified fix (`act/witness_fix.rs`).
    Witness { lease: &'a LeaseRecord },
    /// Authorise the write of `decision` (`replan`: after a failed
    /// verification, ask the model for a new decision first).
    Plan { replan: bool, decision: &'a AgentDecision, finding: &'a Finding },
    /// Write the authorised changes (`reapply` after a lost lease).
    Execute { lease: &'a LeaseRecord, changes: &'a [ProposedChange], reapply: bool },
    /// Run the checks, or start them in the background (`job: None`), or
    /// poll the job that runs them.
    Verify { lease: &'a LeaseRecord, job: Option<&'a ChecksJob> },
    /// Inspect the diff.
    Review { lease: &'a LeaseRecord },
    /// End the run now (guard, exhausted retries, or a log that lacks what
    /// its state needs).
    Fail { reason: String },
    /// Release the sandbox lease.
    Release { lease: &'a LeaseRecord },
    /// Publish the concluded result.
    Publish { result: &'a TaskResult, evidence: &'a EvidenceBundle },
    /// Nothing to do until a person decides (`needs-human`), or ever.
    Quiet(TerminalState),
}

/// The step `resident` needs at `now_ms`.
pub fn next_step<'a>(resident: &'a Resident, now_ms: u64, limits: &Limits) -> Step<'a> {
    let state = resident.state;
    if let Some(terminal) = state.terminal() {
        return chores(resident, terminal, limits);
    }
    let Some(stimulus) = resident.stimulus.as_deref() else {
        return admission(resident, now_ms, limits);
    };
    let policy = &stimulus.policy;
    // Counted from the admission, or from the last approval: a person's
    // decision starts the run's next leg.
    let since = resident.intake.admitted_seq.max(resident.approval.resumed_seq);
    let ticks = resident.seq.unwrap_or(0).saturating_sub(since);
    if ticks >= limits.max_ticks {
        return Step::Fail {
            reason: format!(
                "runaway guard: {ticks} ticks without reaching a terminal state (maxTicks {})",
                limits.max_ticks
            ),
        };
    }
    let elapsed = elapsed_ms(resident, now_ms);
    if elapsed > policy.agent.timeout_ms {
        return Step::Fail {
            reason: format!("timed out: {elapsed} ms elapsed, agent.timeoutMs is {}", policy.agent.timeout_ms),
        };
    }
    let attempt = &resident.attempt;
    if attempt.model_failures >= resident.max_attempts {
        let last = attempt.last_violation.as_deref().unwrap_or("the model was unavailable");
        return Step::Fail {
            reason: format!(
                "no usable model answer in {} attempt(s) (agent.maxAttempts): {last}",
                attempt.model_failures
            ),
        };
    }
    if resident.sandbox.errors >= limits.max_sandbox_errors {
        return Step::Fail {
            reason: format!("the sandbox failed {} times in a row while {state}", resident.sandbox.errors),
        };
    }
    let decision = attempt.decision.as_ref();
    match (state, resident.sandbox.lease.as_ref()) {
        (TaskState::Queued, _) => Step::Lease,
        (TaskState::Understanding, _) => Step::Understand,
        (TaskState::Planning, lease) if crate::witness::owed(resident) => match lease {
            Some(lease) => Step::Witness { lease },
            None => Step::Lease,
        },
        (TaskState::Planning, _) => match (decision, attempt.finding.as_ref()) {
            (Some(decision), Some(finding)) => {
                Step::Plan { replan: resident.attempts() > 0 && !attempt.fresh_decision, decision, finding }
            }
            (None, _) => inconsistent(state, "a model decision"),
            (Some(_), None) => inconsistent(state, "a validated finding"),
        },
        // Every other state works in the sandbox.
        (_, None) => Step::Lease,
        (TaskState::Discovering, Some(lease)) => Step::Discover { lease },
        (TaskState::Validating, Some(lease)) => match decision {
            Some(decision) => Step::Validate { lease, claim: &decision.finding },
            None => inconsistent(state, "a model decision"),
        },
        // An issue run's witness runs before the fix is written, then on the verified fix.
        (TaskState::Executing, Some(lease)) if crate::witness::owed_before_fix(resident) => Step::Witness { lease },
        (TaskState::Executing, Some(lease)) => execute(resident, lease, false),
        (TaskState::Verifying | TaskState::Reviewing, Some(lease))
            if resident.sandbox.applied_on.as_deref() != Some(lease.id.as_str()) =>
        {
            // The lease holding this attempt's changes was lost: write them again first.
            execute(resident, lease, true)
        }
        (TaskState::Verifying, Some(lease)) => {
            let attempt = resident.attempts();
            let job = resident.sandbox.checks_job.as_ref().filter(|j| j.lease == lease.id && j.attempt == attempt);
            Step::Verify { lease, job }
        }
        (TaskState::Reviewing, Some(lease)) if crate::witness::owed_after_fix(resident) => Step::Witness { lease },
        (TaskState::Reviewing, Some(lease)) => Step::Review { lease },
        // Answered by `chores` above, before any guard.
        (TaskState::Completed | TaskState::NeedsHuman | TaskState::Failed | TaskState::Ignored, Some(_)) => {
            Step::Fail { reason: format!("the task is {state}: no step runs it") }
        }
    }
}

/// A delivery awaiting its policy gate: GitHub may be down for a while.
fn admission<'a>(resident: &'a Resident, now_ms: u64, limits: &Limits) -> Step<'a> {
    let intake = &resident.intake;
    let Some(received) = intake.received.as_deref() else {
        return Step::Fail { reason: "the task log holds neither a stimulus nor a received delivery".into() };
    };
    let waited = now_ms.saturating_sub(resident.created_ms);
    if intake.errors > 0 && waited > limits.admission_ms {
        let last = intake.last_error.as_deref().unwrap_or("unknown");
        return Step::Fail {
            reason: format!("the repository policy could not be read for {} s: {last}", waited / 1_000),
        };
    }
    Step::Admit { received }
}

/// Writing the decision's changes (again, with `reapply`).
fn execute<'a>(resident: &'a Resident, lease: &'a LeaseRecord, reapply: bool) -> Step<'a> {
    match &resident.attempt.decision {
        Some(decision) => Step::Execute { lease, changes: &decision.changes, reapply },
        None => inconsistent(resident.state, "a model decision"),
    }
}

/// The failure of a log whose `state` lacks what it needs (not written
/// by this engine, or edited).
fn inconsistent<'a>(state: TaskState, lacking: &str) -> Step<'a> {
    Step::Fail { reason: format!("the task log is inconsistent: the task is {state} without {lacking}") }
}

/// After the ending: conclude (done in the ending tick), release, publish.
fn chores<'a>(resident: &'a Resident, terminal: TerminalState, limits: &Limits) -> Step<'a> {
    if let Some(lease) = resident.sandbox.lease.as_ref().filter(|_| !resident.sandbox.released) {
        return Step::Release { lease };
    }
    let conclusion = &resident.conclusion;
    let published = matches!(conclusion.published, Some(PublicationOutcome::Published { .. }));
    if let Some(concluded) = conclusion.concluded.as_deref()
        && !published
        && conclusion.publish_attempts < limits.max_publish_attempts
    {
        let (result, evidence) = concluded;
        return Step::Publish { result, evidence };
    }
    Step::Quiet(terminal)
}

/// The retry delay after `failures` consecutive failures to read a policy.
pub(crate) fn admission_backoff(limits: &Limits, failures: u32) -> u64 {
    let factor = 1u64 << failures.saturating_sub(1).min(16);
    limits.backoff_ms.saturating_mul(factor).min(limits.max_admission_backoff_ms)
}

/// The retry delay after `failures` consecutive failures.
pub(crate) fn backoff(limits: &Limits, failures: u32) -> u64 {
    let factor = 1u64 << failures.saturating_sub(1).min(16);
    limits.backoff_ms.saturating_mul(factor).min(limits.max_backoff_ms)
}
