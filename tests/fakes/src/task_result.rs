//! The task result the engine holds beside a recorded evidence bundle, for
//! tests that publish a bundle (each forge's publication takes both).

use agent_zero_contracts::{EvidenceBundle, TaskResult, is_verified};

/// The task result the engine would hold next to `bundle`.
pub fn task_result_of(bundle: &EvidenceBundle) -> TaskResult {
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
