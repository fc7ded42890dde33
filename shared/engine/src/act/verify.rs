//! Verify: run the repository's checks against the written change, then
//! review it, repair it, or give up after `agent.maxAttempts`.

use agent_zero_contracts::{TaskState, TerminalState, all_checks_passed};

use super::{Acted, Run};
use crate::fact::{Fact, LeaseRecord};
use crate::ports::Workspace;
use crate::resident::FoldError;
use crate::store::TickStats;

pub(super) async fn verify<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let r = run.r;
    let checks = &r.discovery.checks;
    stats.sandbox_calls += 1;
    let results = match workspace.run(lease, checks, run.remaining_ms(), &run.cx.key).await {
        Ok(results) => results,
        Err(e) => return run.sandbox_failed("run-checks", e),
    };
    let attempt = r.attempts();
    let passed = all_checks_passed(&results) && results.len() == checks.len();
    let mut facts = vec![Fact::Checked { attempt, results }];
    if passed {
        facts.push(run.transition(TaskState::Reviewing, "Inspecting the resulting diff", Some(attempt)));
        Acted::now(facts)
    } else if attempt < r.max_attempts {
        facts.push(run.transition(TaskState::Planning, "Replanning after failed verification", Some(attempt + 1)));
        Acted::now(facts)
    } else {
        let reason =
            format!("verification still fails after {attempt} attempt(s) (agent.maxAttempts {})", r.max_attempts);
        run.finish(facts, TerminalState::Failed, &reason, Some(reason.clone()))
    }
}
