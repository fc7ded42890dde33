//! Decide: from the folded state, the one step a tick takes next. Pure.

use agent_zero_contracts::{TaskState, TerminalState};

use crate::resident::Resident;

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
            admission_ms: 24 * 3_600_000,
            max_admission_backoff_ms: 300_000,
        }
    }
}

/// What is left at `now_ms` of the run's `agent.timeoutMs` (at least 1):
/// the bound of a lease and of the checks.
pub(crate) fn remaining_ms(resident: &Resident, now_ms: u64) -> u64 {
    let timeout = resident.stimulus.as_ref().map_or(0, |s| s.policy.agent.timeout_ms);
    timeout.saturating_sub(now_ms.saturating_sub(resident.started_ms)).max(1)
}

impl Step {
    /// How long this step may take at `now_ms`, from its own bound, when it
    /// has external effects (and so takes a claim first); `None` for the
    /// pure steps. The checks are bounded by what is left of the run's
    /// `agent.timeoutMs`.
    pub fn bound_ms(&self, resident: &Resident, now_ms: u64, limits: &Limits) -> Option<u64> {
        let bound = match self {
            Self::Understand | Self::Plan { replan: true } => limits.model_call_ms.saturating_mul(2),
            Self::Verify => remaining_ms(resident, now_ms),
            Self::Lease | Self::Discover | Self::Validate | Self::Execute { .. } | Self::Review | Self::Release => {
                limits.sandbox_call_ms
            }
            Self::Admit | Self::Publish => limits.publish_ms,
            Self::Plan { replan: false } | Self::Fail { .. } | Self::Quiet(_) => return None,
        };
        Some(bound.saturating_add(limits.claim_margin_ms))
    }
}

/// The next step of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Read the repository policy and admit or decline a received delivery.
    Admit,
    /// Lease a sandbox (and leave `queued`).
    Lease,
    /// List files, read manifests, resolve checks (and the PR diff).
    Discover,
    /// Ask the model to interpret the input.
    Understand,
    /// Read the cited files and validate the finding.
    Validate,
    /// Authorise the write (after a model re-plan on repair).
    Plan { replan: bool },
    /// Write the authorised changes (`reapply` after a lost lease).
    Execute { reapply: bool },
    /// Run the checks.
    Verify,
    /// Inspect the diff.
    Review,
    /// End the run now (guard or exhausted retries).
    Fail { reason: String },
    /// Release the sandbox lease.
    Release,
    /// Publish the concluded result.
    Publish,
    /// Nothing to do until a person decides (`needs-human`), or ever.
    Quiet(TerminalState),
}

/// The step `resident` needs at `now_ms`.
pub fn next_step(resident: &Resident, now_ms: u64, limits: &Limits) -> Step {
    let state = resident.state;
    if state.is_terminal() {
        return chores(resident, limits);
    }
    if resident.stimulus.is_none() {
        // A delivery awaiting its policy gate: GitHub may be down for a while.
        let waited = now_ms.saturating_sub(resident.created_ms);
        if resident.admission_errors > 0 && waited > limits.admission_ms {
            let last = resident.admission_error.as_deref().unwrap_or("unknown");
            return Step::Fail {
                reason: format!("the repository policy could not be read for {} s: {last}", waited / 1_000),
            };
        }
        return Step::Admit;
    }
    let policy = &resident.stimulus().policy;
    let ticks = resident.seq.unwrap_or(0).saturating_sub(resident.admitted_seq);
    if ticks >= limits.max_ticks {
        return Step::Fail {
            reason: format!(
                "runaway guard: {ticks} ticks without reaching a terminal state (maxTicks {})",
                limits.max_ticks
            ),
        };
    }
    let elapsed = now_ms.saturating_sub(resident.started_ms);
    if elapsed > policy.agent.timeout_ms {
        return Step::Fail {
            reason: format!("timed out: {elapsed} ms elapsed, agent.timeoutMs is {}", policy.agent.timeout_ms),
        };
    }
    if resident.model_failures >= resident.max_attempts {
        let last = resident.last_violation.as_deref().unwrap_or("the model was unavailable");
        return Step::Fail {
            reason: format!(
                "no usable model answer in {} attempt(s) (agent.maxAttempts): {last}",
                resident.model_failures
            ),
        };
    }
    if resident.sandbox_errors >= limits.max_sandbox_errors {
        return Step::Fail {
            reason: format!("the sandbox failed {} times in a row while {state}", resident.sandbox_errors),
        };
    }
    let needs_sandbox = matches!(
        state,
        TaskState::Discovering
            | TaskState::Validating
            | TaskState::Executing
            | TaskState::Verifying
            | TaskState::Reviewing
    );
    if state == TaskState::Queued || (needs_sandbox && resident.lease.is_none()) {
        return Step::Lease;
    }
    let lease_id = resident.lease.as_ref().map(|l| l.id.as_str());
    match state {
        TaskState::Queued => Step::Lease,
        TaskState::Discovering => Step::Discover,
        TaskState::Understanding => Step::Understand,
        TaskState::Validating => Step::Validate,
        TaskState::Planning => Step::Plan { replan: resident.attempts() > 0 && !resident.fresh_decision },
        TaskState::Executing => Step::Execute { reapply: false },
        TaskState::Verifying | TaskState::Reviewing if resident.applied_on.as_deref() != lease_id => {
            // The lease holding this attempt's changes was lost: write them again first.
            Step::Execute { reapply: true }
        }
        TaskState::Verifying => Step::Verify,
        TaskState::Reviewing => Step::Review,
        TaskState::Completed | TaskState::NeedsHuman | TaskState::Failed | TaskState::Ignored => {
            chores(resident, limits)
        }
    }
}

/// After the ending: conclude (done in the ending tick), release, publish.
fn chores(resident: &Resident, limits: &Limits) -> Step {
    let terminal = resident.state.terminal().expect("called for terminal states");
    if resident.lease.is_some() && !resident.released {
        return Step::Release;
    }
    let published = matches!(resident.published, Some(crate::fact::PublicationOutcome::Published { .. }));
    if resident.concluded.is_some() && !published && resident.publish_attempts < limits.max_publish_attempts {
        return Step::Publish;
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
