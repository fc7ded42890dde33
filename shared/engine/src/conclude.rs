//! The terminal result and its evidence, built from the resident model
//! alone (so the same log always concludes the same way).

use agent_zero_contracts::{
    AgentDecision, BoundedCriteria, Coverage, EvidenceBundle, OmittedItem, Refusal, RunCost, RunnerDescription,
    TaskResult, TaskState, TerminalState, Verdict, is_verified,
};

use crate::fact::{Stimulus, WriteOutcome};
use crate::resident::{FINDING_INCONCLUSIVE, REPAIRS_EXHAUSTED, Resident, review_refusal, stop_reason};

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
    let criteria = decision.map(AgentDecision::bounded_acceptance_criteria).unwrap_or_default();
    let acceptance_criteria = criteria.kept.clone();
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
        _ if state == TerminalState::NeedsHuman => stop_reason(resident),
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
                .chain(criteria_omitted(&criteria))
                .collect(),
        },
        summary,
        review: crate::review::ledger(resident),
        tree: attempt.tree.clone(),
        cost: evidence_cost(resident),
        witness: crate::witness::concluded(resident),
    };
    (result, evidence)
}

/// What the bounds on the model's acceptance criteria left out, if anything.
fn criteria_omitted(criteria: &BoundedCriteria) -> Option<OmittedItem> {
    use agent_zero_contracts::{MAX_ACCEPTANCE_CRITERIA, MAX_CRITERION_CHARS};
    (criteria.dropped + criteria.cut > 0).then(|| OmittedItem {
        kind: "model".into(),
        subject: "acceptance criteria".into(),
        reason: format!(
            "{} criteria past the first {MAX_ACCEPTANCE_CRITERIA} dropped, {} cut at {MAX_CRITERION_CHARS} characters",
            criteria.dropped, criteria.cut
        ),
    })
}

/// What approving a `needs-human` task does, by the stop it waits at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalEffect {
    /// The approval stands in for the stop, and the run goes on to write
    /// the change shown (every other link of the chain still holds).
    Writes,
    /// Nothing can be written past this stop (an inconclusive finding, no
    /// checks, nothing to write): the approval accepts the conclusion and
    /// the task ends without writing.
    AcceptsConclusion,
    /// The repairs were used up: the approval buys one more attempt, a
    /// repair from the failing output, under the same chain.
    Retries,
}

impl ApprovalEffect {
    /// Every effect.
    pub const ALL: &'static [Self] = &[Self::Writes, Self::AcceptsConclusion, Self::Retries];

    /// The stable kebab-case name (the API's `pendingDecision.approving`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Writes => "writes",
            Self::AcceptsConclusion => "accepts-conclusion",
            Self::Retries => "retries",
        }
    }

    /// What the approver is told before deciding.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Writes => "Approving writes the change below, verifies it with the checks, and publishes it.",
            Self::AcceptsConclusion => {
                "Approving accepts this conclusion: the task ends as it stands and nothing is written."
            }
            Self::Retries => {
                "Approving buys one more attempt: the model repairs the change below from the failing checks' \
                 output, under the same write checks (a change that needs a person stops again)."
            }
        }
    }
}

/// Why a `needs-human` task waits, and what approving it does; `None` for
/// a task that does not wait.
pub fn awaiting(resident: &Resident) -> Option<(Refusal, ApprovalEffect)> {
    let stop = stop_reason(resident)?;
    let effect = match stop.code.as_str() {
        REPAIRS_EXHAUSTED => ApprovalEffect::Retries,
        FINDING_INCONCLUSIVE => ApprovalEffect::AcceptsConclusion,
        _ if resident.path.iter().rev().nth(1) == Some(&TaskState::Reviewing) => ApprovalEffect::Writes,
        code => match agent_zero_agent::RefusalCode::parse(code) {
            Some(link) if link.needs_human() => ApprovalEffect::Writes,
            _ => ApprovalEffect::AcceptsConclusion,
        },
    };
    Some((stop, effect))
}

/// What the evidence says a run cost: the metered ticks' operations with
/// the run's model usage; `None` when no tick was metered.
pub(crate) fn evidence_cost(resident: &Resident) -> Option<RunCost> {
    resident.cost.map(|c| c.with_usage(&resident.usage))
}
