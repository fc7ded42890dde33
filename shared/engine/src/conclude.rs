//! The terminal result and its evidence, built from the resident model
//! alone (so the same log always concludes the same way).

use agent_zero_contracts::{
    Coverage, EvidenceBundle, OmittedItem, Refusal, RunnerDescription, TaskResult, TerminalState, Verdict, is_verified,
};

use crate::fact::{Stimulus, WriteOutcome};
use crate::resident::{Attempt, Resident};

/// Builds the [`TaskResult`] and [`EvidenceBundle`] of a resident whose
/// state is `state`, admitted with `stimulus` (its own: only an admitted
/// run concludes). `verified` comes from [`is_verified`] and nowhere else.
pub fn conclude(
    resident: &Resident,
    stimulus: &Stimulus,
    state: TerminalState,
    summary: &str,
) -> (TaskResult, EvidenceBundle) {
    let attempt = &resident.attempt;
    let verdict = attempt.finding.as_ref().map_or(Verdict::Inconclusive, |f| f.verdict);
    let verified = is_verified(state, &attempt.changed_files, &attempt.check_results);
    let decision = attempt.decision.as_ref();
    let plan = decision.map(|d| d.plan.clone()).unwrap_or_default();
    let acceptance_criteria = decision.map(|d| d.acceptance_criteria.clone()).unwrap_or_default();
    let runner = resident.sandbox.runner.clone().unwrap_or_else(RunnerDescription::none);
    let summary = match &stimulus.source {
        Some(source) => format!("{summary} ({source})"),
        None => summary.to_owned(),
    };
    let result = TaskResult {
        id: stimulus.task_id.clone(),
        state,
        verdict,
        verified,
        finding: attempt.finding.clone(),
        plan: plan.clone(),
        acceptance_criteria: acceptance_criteria.clone(),
        checks: attempt.check_results.clone(),
        changed_files: attempt.changed_files.clone(),
        attempts: resident.attempts(),
        events: resident.events.clone(),
        runner: runner.clone(),
        usage: resident.usage.clone(),
        summary: summary.clone(),
    };
    let refusal = match &attempt.write {
        Some(WriteOutcome::Refused { refusal } | WriteOutcome::NeedsHuman { refusal }) => Some(refusal.clone()),
        _ => None,
    };
    let evidence = EvidenceBundle {
        task_id: stimulus.task_id.clone(),
        repository: stimulus.repository.clone(),
        state,
        verdict,
        verified,
        mode: stimulus.mode,
        trigger: stimulus.trigger,
        source: stimulus.source.clone(),
        issue: stimulus.input.issue.clone(),
        pull_request: stimulus.input.pull_request.clone(),
        runner,
        finding: attempt.finding.clone(),
        plan,
        acceptance_criteria,
        changed_files: attempt.changed_files.clone(),
        checks: attempt.check_results.clone(),
        attempts: resident.attempts(),
        transitions: resident.events.clone(),
        usage: resident.usage.clone(),
        refusal: refusal.or_else(|| review_refusal(attempt)),
        // What the policy asked that the edge did not honour as written (a
        // file written for the reference), then what the run left out.
        coverage: Coverage {
            omitted: stimulus
                .policy
                .warnings()
                .into_iter()
                .map(|w| OmittedItem { kind: "policy".into(), subject: w.field, reason: w.message })
                .chain(resident.discovery.omitted.iter().cloned())
                .collect(),
        },
        summary,
        review: crate::review::ledger(resident),
        tree: attempt.tree.clone(),
        cost: crate::tick::evidence_cost(resident),
    };
    (result, evidence)
}

/// The review stop, recorded like a refusal so the report says why.
fn review_refusal(attempt: &Attempt) -> Option<Refusal> {
    if !attempt.reviewed {
        return None;
    }
    if !attempt.out_of_scope.is_empty() {
        let message =
            format!("the diff changes files outside the authorised change: {}", attempt.out_of_scope.join(", "));
        return Some(Refusal { code: "diff-out-of-scope".into(), message });
    }
    if attempt.changed_files.is_empty() {
        let message = "every check passed but the checkout is unchanged, so nothing was fixed".into();
        return Some(Refusal { code: "no-change".into(), message });
    }
    None
}
