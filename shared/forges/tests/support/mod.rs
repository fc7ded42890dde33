//! What the forges' publication tests share: the evidence crate's verified
//! golden bundle, and the task result it records.

use agent_zero_contracts::{EvidenceBundle, TaskResult, is_verified};

/// The verified golden bundle of the evidence crate (issue acme/widgets#42).
pub(crate) fn golden_bundle() -> EvidenceBundle {
    let path = format!("{}/../evidence/tests/golden/verified/bundle.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The task result `bundle` records.
pub(crate) fn result_of(bundle: &EvidenceBundle) -> TaskResult {
    TaskResult {
        id: bundle.task_id.clone(),
        state: bundle.state,
        verdict: bundle.verdict,
        verified: is_verified(bundle.state, &bundle.changed_files, &bundle.checks) && bundle.verified,
        finding: bundle.finding.clone(),
        plan: bundle.plan.clone(),
        acceptance_criteria: bundle.acceptance_criteria.clone(),
        checks: bundle.checks.clone(),
        changed_files: bundle.changed_files.clone(),
        attempts: bundle.attempts,
        events: bundle.transitions.clone(),
        runner: bundle.runner.clone(),
        usage: bundle.usage.clone(),
        summary: bundle.summary.clone(),
    }
}
