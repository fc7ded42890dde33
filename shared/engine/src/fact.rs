//! What a task log holds: facts, grouped into one entry per committed tick.
//!
//! An entry is one KV value under a write-once key, so a tick's facts are
//! committed together or not at all: nothing half-written can be folded.

use agent_zero_agent::Policy;
use agent_zero_contracts::{
    AgentDecision, CheckResult, EvidenceBundle, FeedbackItem, Finding, ForgeKind, IssueRef, OmittedItem,
    PullRequestRef, Refusal, RunMode, RunnerDescription, TaskResult, TaskState, TreeFile, Trigger, UntrustedText,
    Usage,
};
use serde::{Deserialize, Serialize};

/// One committed tick: the facts it observed, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Position in the log; entry 0 is the stimulus.
    pub seq: u64,
    /// The tick's clock reading (milliseconds since the Unix epoch).
    pub at_ms: u64,
    pub facts: Vec<Fact>,
}

/// The stimulus that created a task: everything a run may use, fixed at
/// creation so a replayed fold always sees the same input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stimulus {
    pub task_id: String,
    /// `owner/name`.
    pub repository: String,
    pub trigger: Trigger,
    /// The effective mode (already restricted by policy and grants).
    pub mode: RunMode,
    /// Where the task came from (`github:<delivery>`, `api:<principal>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub input: TaskInput,
    /// The repository policy as it was when the task was created.
    #[serde(deserialize_with = "agent_zero_agent::policy::record")]
    pub policy: Policy,
}

/// The normalised, untrusted input of a task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskInput {
    #[serde(default)]
    pub feedback: Vec<FeedbackItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<IssueRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_body: Option<UntrustedText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<PullRequestRef>,
    /// Files the requester scoped the task to (widen the write scope).
    #[serde(default)]
    pub files: Vec<String>,
    /// The GitHub App installation that delivered the task (App credentials
    /// are per installation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation_id: Option<u64>,
    /// The forge the repository lives on: its adapter reads, checks out and
    /// publishes (GitHub when the record names none).
    #[serde(default, skip_serializing_if = "ForgeKind::is_github")]
    pub forge: ForgeKind,
}

/// A delivery recorded at intake, before its policy gate. Intake answers
/// as soon as this is committed (GitHub never retries a failed delivery);
/// reading the repository's policy and deciding whether the delivery
/// becomes a run is the task's first tick ([`Fact::Admitted`] or
/// [`Fact::Declined`]), with retries while GitHub cannot be reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Received {
    pub task_id: String,
    /// `owner/name`.
    pub repository: String,
    pub trigger: Trigger,
    /// `github:<delivery>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Untrusted: the issue or pull request title, for listings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What intake parsed from the delivery, for the host's admission port
    /// (untrusted, opaque to the engine). Logs written before 2026-12-07
    /// name it `seed`.
    #[serde(alias = "seed")]
    pub delivery: serde_json::Value,
}

impl Received {
    /// The forge the delivery came from: GitLab's, Gitea's and Forgejo's
    /// arrivals name theirs (`forge`); GitHub's parsed deliveries name none.
    pub fn forge(&self) -> agent_zero_contracts::ForgeKind {
        self.delivery
            .get("forge")
            .and_then(serde_json::Value::as_str)
            .and_then(agent_zero_contracts::ForgeKind::parse)
            .unwrap_or_default()
    }
}

/// A file of the change read back from the sandbox after the checks passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadBack {
    pub file: TreeFile,
    /// The content, only when it is not what the run wrote (a check
    /// rewrote it); otherwise the written content is the verified one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// What the policy gate decided about a [`Received`] delivery.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Admission {
    /// It becomes a run with this stimulus (policy snapshot, mode).
    Admitted(Box<Stimulus>),
    /// The policy does not act on it: `reason` is a stable code.
    Declined { reason: String, message: String },
}

/// A sandbox lease as recorded: its id, what the boundary allowed and,
/// from our own provisioning, where its sandbox is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRecord {
    pub id: String,
    pub runner: RunnerDescription,
    /// What a later tick needs to reach the sandbox without asking the
    /// lease coordinator. Absent from records written before it (a later
    /// tick then asks the coordinator); only the workspace port's `lease`
    /// answer sets it, never anything a task was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<LeasedSandbox>,
}

/// Where a leased sandbox is, as the provider reported it when it was
/// provisioned ([`LeaseRecord::sandbox`]); credential-free.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeasedSandbox {
    /// The provider's sandbox id.
    pub external_id: String,
    /// The checkout's root inside the sandbox (`""`: checkout-relative paths).
    #[serde(default)]
    pub root: String,
    /// The lease's ceiling: past it the lease is gone.
    pub expires_at_ms: u64,
}

/// Which lifecycle step asked the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelPurpose {
    Understand,
    Plan,
}

/// What one model call produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum ModelOutcome {
    /// A decision that matched the schema.
    Decided { decision: AgentDecision, usage: Usage },
    /// An answer that broke the schema; the next call shows the model its
    /// own violation.
    Unusable { violation: String, usage: Usage },
    /// No answer (transport, quota, refusal to serve).
    Unavailable { reason: String },
}

/// The write authorisation outcome recorded at planning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum WriteOutcome {
    /// Every link of the chain passed.
    Allowed,
    /// A link refused: the run reports without writing (ends `completed`).
    Refused { refusal: Refusal },
    /// A link requires a person (ends `needs-human`).
    NeedsHuman { refusal: Refusal },
}

/// A person's answer to a `needs-human` task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalDecision {
    Approve,
    Reject,
}

/// The result of one publication attempt (a failed publication never
/// fails the run: the evidence is already committed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum PublicationOutcome {
    Published { reference: String },
    Failed { reason: String },
}

/// One observed fact. The fold over these is the truth of a task.
/// Read tag first and unbuffered (`fact_de.rs`), as are the outcomes above.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "fact", rename_all = "kebab-case")]
#[allow(clippy::large_enum_variant)]
pub enum Fact {
    /// The stimulus; always alone in entry 0.
    Created { stimulus: Box<Stimulus> },
    /// A delivery awaiting its policy gate; always alone in entry 0.
    Received { received: Box<Received> },
    /// The policy gate admitted the delivery: the run's stimulus.
    Admitted { stimulus: Box<Stimulus> },
    /// The policy gate declined the delivery (beside `queued -> ignored`).
    Declined { reason: String, message: String },
    /// The policy could not be read (GitHub unreachable): retried with backoff.
    AdmissionError { reason: String },
    /// A lifecycle move the machine allowed.
    Transition {
        from: TaskState,
        to: TaskState,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
    },
    /// A sandbox was leased.
    Leased { lease: LeaseRecord },
    /// The sandbox could not serve a step (counted; bounded retries).
    SandboxError { operation: String, reason: String },
    /// What discovery found: the file list, the checks to run, the diff
    /// of a pull request under review, and what was left out.
    Discovered {
        files: Vec<String>,
        checks: Vec<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
        #[serde(default)]
        omitted: Vec<OmittedItem>,
        /// A pull-request review's ledger of the changed files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        review: Option<agent_zero_contracts::ReviewLedger>,
    },
    /// One model call.
    ModelCall { purpose: ModelPurpose, outcome: ModelOutcome },
    /// The validated finding (verdict decided by repository evidence).
    Finding {
        finding: Finding,
        /// What validation did not read (cited files past the limit).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        omitted: Vec<OmittedItem>,
        /// The documentation the repository runs or includes, read from its
        /// configuration and crate roots: a change to it is high-impact.
        #[serde(default, skip_serializing_if = "agent_zero_agent::DocUse::is_empty")]
        doc_use: agent_zero_agent::DocUse,
        /// The cited files that hold a verified quote themselves: each
        /// earns write scope on its own (absent from logs before it
        /// existed: then only named files earn scope).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        quoted_files: Vec<String>,
    },
    /// What the finding's witness showed at the pull request's head and
    /// base (`act/witness.rs`): recorded once per attempt, before planning.
    Witnessed { witness: agent_zero_contracts::WitnessRun },
    /// The write authorisation outcome.
    WriteDecision { outcome: WriteOutcome },
    /// Proposed files written into the sandbox checkout.
    Applied { files: Vec<String> },
    /// One attempt's checks were started in the sandbox as background job
    /// `job` on lease `lease`; later ticks poll it until [`Fact::Checked`]
    /// (or a `checks-lost` sandbox error).
    ChecksStarted { attempt: u32, job: String, lease: String },
    /// One batch of checks (one attempt's verification).
    Checked { attempt: u32, results: Vec<CheckResult> },
    /// The diff inspection at review.
    Reviewed {
        changed_files: Vec<String>,
        out_of_scope: Vec<String>,
        /// New files the checks wrote (caches, build output): listed in the
        /// evidence, never judged, never published.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        byproducts: Vec<String>,
        /// The run's files as the sandbox held them after the checks: what
        /// is published.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tree: Vec<ReadBack>,
    },
    /// A person decided a `needs-human` task.
    Approval {
        principal: String,
        decision: ApprovalDecision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
        /// The digest of the decision the person approved
        /// ([`crate::decision_digest`]): the approval covers it and nothing
        /// else. Absent in logs written before approvals were bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shown: Option<String>,
    },
    /// The terminal result and its evidence.
    Concluded { result: Box<TaskResult>, evidence: Box<EvidenceBundle> },
    /// The sandbox lease was released.
    Released,
    /// One publication attempt.
    Published { outcome: PublicationOutcome },
    /// Why the run failed (always beside a transition to `failed`).
    Failure { reason: String },
    /// What the tick cost its host, counted at the ports up to its commit
    /// (with what earlier ticks spent after theirs); first in its entry.
    /// Stored without its zero counts ([`sparse_cost`]).
    Metered {
        #[serde(serialize_with = "sparse_cost")]
        cost: agent_zero_contracts::RunCost,
    },
}

/// A tick's cost as its entry stores it: the counts that are not zero.
/// Most of a tick's counts are (a tick reaches one or two ports), and a
/// cold tick decodes every entry of the log: a 1,000-entry log is about
/// 30% fewer bytes to read this way. `RunCost` reads a missing count as 0,
/// so entries written whole (before 2026-12-06) read as they did.
fn sparse_cost<S: serde::Serializer>(cost: &agent_zero_contracts::RunCost, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::Error;
    let serde_json::Value::Object(mut counts) = serde_json::to_value(cost).map_err(S::Error::custom)? else {
        return Err(S::Error::custom("a run's cost is an object"));
    };
    counts.retain(|_, count| count.as_u64() != Some(0));
    counts.serialize(s)
}
