//! The parts of the [`Resident`](super::Resident), one concern each. Each
//! is folded from the facts of its concern only; together they are the
//! checkpoint's JSON, flattened, so a checkpoint written before the split
//! reads back unchanged.

use agent_zero_contracts::{
    AgentDecision, CheckResult, EvidenceBundle, Finding, OmittedItem, ReviewLedger, RunnerDescription, TaskResult,
    TreeFile,
};
use serde::{Deserialize, Serialize};

use crate::fact::{ApprovalDecision, LeaseRecord, PublicationOutcome, Received, WriteOutcome};

/// A webhook delivery before it became a run: what arrived, the policy
/// gate's retries, and its answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Arrival {
    /// The delivery a webhook task started from (entry 0), if it did.
    pub received: Option<Box<Received>>,
    /// Consecutive failures to read the policy at admission.
    #[serde(rename = "admissionErrors")]
    pub errors: u32,
    /// The last of those failures.
    #[serde(rename = "admissionError")]
    pub last_error: Option<String>,
    /// Why the policy gate declined the delivery (`reason`, `message`).
    pub declined: Option<(String, String)>,
    /// The seq of the admission; ticks before it (waiting for GitHub) do
    /// not count against the runaway guard.
    pub admitted_seq: u64,
}

/// The sandbox the run holds: its lease, and how the sandbox has served.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Sandbox {
    /// The live lease; `None` before the first, after release, and once
    /// the sandbox reported it gone.
    pub lease: Option<LeaseRecord>,
    /// The runner of the most recent lease (kept after release, for evidence).
    pub runner: Option<RunnerDescription>,
    /// Lease id the current attempt's changes were written to.
    pub applied_on: Option<String>,
    /// Consecutive sandbox errors in the current state.
    #[serde(rename = "sandboxErrors")]
    pub errors: u32,
    /// Consecutive lease refusals (pool quota full): waited out with
    /// backoff, bounded by `agent.timeoutMs`, never counted as errors.
    pub lease_waits: u32,
    /// Whether the last lease was released (cleared by the next lease).
    pub released: bool,
    /// The checks running in the sandbox as a background job, until their
    /// results are recorded (or the job is lost, or the lease changes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks_job: Option<ChecksJob>,
}

/// A background job of checks ([`crate::fact::Fact::ChecksStarted`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChecksJob {
    pub attempt: u32,
    pub job: String,
    /// The lease it runs on.
    pub lease: String,
    /// When it was started (the entry that recorded it).
    #[serde(default)]
    pub started_ms: u64,
}

/// What discovery found in the checkout (and, in `omitted`, everything
/// any step left out).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Discovery {
    /// Whether discovery ran.
    pub discovered: bool,
    /// Every file of the leased checkout.
    pub files: Vec<String>,
    /// The checks to run (argv each): the policy's, or the repository's own.
    pub checks: Vec<Vec<String>>,
    /// A pull request's diff (`base...head`), for a review.
    pub diff: Option<String>,
    /// A pull-request review's ledger of the changed files.
    pub review: Option<ReviewLedger>,
    /// What the run left out: by discovery, validation and review.
    pub omitted: Vec<OmittedItem>,
    /// The documentation the repository runs or includes (validation reads
    /// it): a change to it is high-impact.
    #[serde(skip_serializing_if = "agent_zero_agent::DocUse::is_empty")]
    pub doc_use: agent_zero_agent::DocUse,
}

/// The current attempt: the model's decision, the validated finding, and
/// what writing and checking the change produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Attempt {
    /// The model's last usable decision.
    pub decision: Option<AgentDecision>,
    /// True when `decision` was produced since the last repair began.
    pub fresh_decision: bool,
    /// Consecutive unusable/unavailable model answers in the current state.
    pub model_failures: u32,
    /// The schema violation of the last unusable answer, shown to the model.
    pub last_violation: Option<String>,
    /// The claim as validation judged it.
    pub finding: Option<Finding>,
    /// The cited files holding a verified quote of the claim.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quoted_files: Vec<String>,
    /// What the finding's witness showed (absent from checkpoints written
    /// before witnesses existed: none was run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<agent_zero_contracts::WitnessRun>,
    /// The write authorisation of the plan.
    pub write: Option<WriteOutcome>,
    /// The paths written into the sandbox.
    pub applied: Vec<String>,
    /// The last batch of checks.
    pub check_results: Vec<CheckResult>,
    /// The judged files of the review's diff.
    pub changed_files: Vec<String>,
    /// Changed files outside the authorised change.
    pub out_of_scope: Vec<String>,
    /// Whether the diff was reviewed.
    pub reviewed: bool,
    /// The run's files as the sandbox held them after the checks.
    pub tree: Vec<TreeFile>,
    /// `(path, content)` of the run's files a check rewrote: the verified
    /// content, published instead of what was written.
    pub rewritten: Vec<(String, String)>,
}

/// A person's answer to a `needs-human` task.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Approval {
    /// The approval that resumed the task, if one did (and still applies).
    pub approved_by: Option<String>,
    /// The digest of the decision that approval covers: a write is
    /// approved only while the decision it authorises has this digest.
    /// (Absent from checkpoints without one, as before it existed.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_digest: Option<String>,
    /// The stops (their codes: a write link's, `finding-inconclusive`,
    /// `repairs-exhausted`, ...) a person approved for the decision of
    /// `approved_digest`, in order: each stands in for its own stop only,
    /// and a new decision clears them with the digest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lifted: Vec<String>,
    /// The seq of the last approval: the run resumed there, and the
    /// runaway guard counts its ticks from it (0 before any).
    #[serde(skip_serializing_if = "is_zero")]
    pub resumed_seq: u64,
    /// The last decision a person made on this task, and who made it.
    pub decided: Option<(String, ApprovalDecision)>,
}

/// How the run ended: the recorded conclusion and its publication.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Conclusion {
    /// The terminal result and its evidence, once recorded (cleared when a
    /// person's decision opens a new ending).
    pub concluded: Option<Box<(TaskResult, EvidenceBundle)>>,
    /// The last publication attempt's outcome.
    pub published: Option<PublicationOutcome>,
    /// Publication attempts of the current conclusion.
    pub publish_attempts: u32,
    /// Why the run failed, when it did.
    pub failure: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
