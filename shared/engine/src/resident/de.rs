//! How a checkpoint's [`Resident`] is read: one flat object, as it is
//! written (the parts are `#[serde(flatten)]` on the way out). serde's own
//! reader for flattened parts buffers the whole checkpoint and reads every
//! field type a second time from that buffer; this one reads each key
//! straight from the JSON into the part that owns it. The struct literals
//! below name every field, so a part's new field fails the build until it
//! is read here too.

use agent_zero_contracts::{
    AgentDecision, CheckResult, EvidenceBundle, Finding, OmittedItem, ReviewLedger, RunCost, RunnerDescription,
    TaskEvent, TaskResult, TaskState, TreeFile, Usage,
};
use serde::{Deserialize, Deserializer};

use super::{Approval, Arrival, Attempt, Conclusion, Discovery, Resident, Sandbox};
use crate::fact::{ApprovalDecision, LeaseRecord, PublicationOutcome, Received, Stimulus, WriteOutcome};

impl<'de> Deserialize<'de> for Resident {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Flat::deserialize(deserializer).map(Self::from)
    }
}

/// Every key of a checkpoint, with the defaults of the part it belongs to.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Flat {
    seq: Option<u64>,
    stimulus: Option<Box<Stimulus>>,
    state: TaskState,
    path: Vec<TaskState>,
    events: Vec<TaskEvent>,
    created_ms: u64,
    #[serde(default)]
    started_ms: u64,
    #[serde(default)]
    ended_ms: Option<u64>,
    max_attempts: u32,
    usage: Usage,
    #[serde(default)]
    cost: Option<RunCost>,
    // Arrival (the `intake` part)
    #[serde(default)]
    received: Option<Box<Received>>,
    #[serde(default)]
    admission_errors: u32,
    #[serde(default)]
    admission_error: Option<String>,
    #[serde(default)]
    declined: Option<(String, String)>,
    #[serde(default)]
    admitted_seq: u64,
    // Sandbox
    #[serde(default)]
    lease: Option<LeaseRecord>,
    #[serde(default)]
    runner: Option<RunnerDescription>,
    #[serde(default)]
    applied_on: Option<String>,
    #[serde(default)]
    sandbox_errors: u32,
    #[serde(default)]
    lease_waits: u32,
    #[serde(default)]
    released: bool,
    #[serde(default)]
    checks_job: Option<super::parts::ChecksJob>,
    // Discovery
    #[serde(default)]
    discovered: bool,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    checks: Vec<Vec<String>>,
    #[serde(default)]
    diff: Option<String>,
    #[serde(default)]
    review: Option<ReviewLedger>,
    #[serde(default)]
    omitted: Vec<OmittedItem>,
    #[serde(default)]
    doc_use: agent_zero_agent::DocUse,
    // Attempt
    #[serde(default)]
    decision: Option<AgentDecision>,
    #[serde(default)]
    fresh_decision: bool,
    #[serde(default)]
    model_failures: u32,
    #[serde(default)]
    last_violation: Option<String>,
    #[serde(default)]
    finding: Option<Finding>,
    #[serde(default)]
    quoted_files: Vec<String>,
    #[serde(default)]
    witness: Option<agent_zero_contracts::WitnessRun>,
    #[serde(default)]
    write: Option<WriteOutcome>,
    #[serde(default)]
    applied: Vec<String>,
    #[serde(default)]
    check_results: Vec<CheckResult>,
    #[serde(default)]
    changed_files: Vec<String>,
    #[serde(default)]
    out_of_scope: Vec<String>,
    #[serde(default)]
    reviewed: bool,
    #[serde(default)]
    tree: Vec<TreeFile>,
    #[serde(default)]
    rewritten: Vec<(String, String)>,
    // Approval
    #[serde(default)]
    approved_by: Option<String>,
    #[serde(default)]
    approved_digest: Option<String>,
    #[serde(default)]
    lifted: Vec<String>,
    #[serde(default)]
    resumed_seq: u64,
    #[serde(default)]
    decided: Option<(String, ApprovalDecision)>,
    // Conclusion
    #[serde(default)]
    concluded: Option<Box<(TaskResult, EvidenceBundle)>>,
    #[serde(default)]
    published: Option<PublicationOutcome>,
    #[serde(default)]
    publish_attempts: u32,
    #[serde(default)]
    failure: Option<String>,
}

impl From<Flat> for Resident {
    fn from(flat: Flat) -> Self {
        Self {
            seq: flat.seq,
            stimulus: flat.stimulus,
            state: flat.state,
            path: flat.path,
            events: flat.events,
            created_ms: flat.created_ms,
            started_ms: flat.started_ms,
            ended_ms: flat.ended_ms,
            max_attempts: flat.max_attempts,
            usage: flat.usage,
            cost: flat.cost,
            intake: Arrival {
                received: flat.received,
                errors: flat.admission_errors,
                last_error: flat.admission_error,
                declined: flat.declined,
                admitted_seq: flat.admitted_seq,
            },
            sandbox: Sandbox {
                lease: flat.lease,
                runner: flat.runner,
                applied_on: flat.applied_on,
                errors: flat.sandbox_errors,
                lease_waits: flat.lease_waits,
                released: flat.released,
                checks_job: flat.checks_job,
            },
            discovery: Discovery {
                discovered: flat.discovered,
                files: flat.files,
                checks: flat.checks,
                diff: flat.diff,
                review: flat.review,
                omitted: flat.omitted,
                doc_use: flat.doc_use,
            },
            attempt: Attempt {
                decision: flat.decision,
                fresh_decision: flat.fresh_decision,
                model_failures: flat.model_failures,
                last_violation: flat.last_violation,
                finding: flat.finding,
                quoted_files: flat.quoted_files,
                witness: flat.witness,
                write: flat.write,
                applied: flat.applied,
                check_results: flat.check_results,
                changed_files: flat.changed_files,
                out_of_scope: flat.out_of_scope,
                reviewed: flat.reviewed,
                tree: flat.tree,
                rewritten: flat.rewritten,
            },
            approval: Approval {
                approved_by: flat.approved_by,
                approved_digest: flat.approved_digest,
                lifted: flat.lifted,
                resumed_seq: flat.resumed_seq,
                decided: flat.decided,
            },
            conclusion: Conclusion {
                concluded: flat.concluded,
                published: flat.published,
                publish_attempts: flat.publish_attempts,
                failure: flat.failure,
            },
        }
    }
}
