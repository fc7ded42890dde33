//! An issue run's witness (`docs/witness.md`): the model's test for the
//! bug it claims, run once at the commit before the fix is written
//! (it should fail) and once on the verified fix (it should pass).
//!
//! Two ticks, each one bounded command (`review.witness.timeoutMs`): the
//! first, in `executing` before the change is written, records
//! [`WitnessOutcome::FailedBeforeFix`] (or a final outcome when it passed,
//! timed out, or could not run); the second, in `reviewing` after the checks
//! passed and before the diff is read, the final outcome. Each writes the
//! witness, runs the policy's command with its path appended, and removes it
//! (or puts back the file it replaced), so the checks, the diff and the
//! published tree never see it.

use agent_zero_contracts::{CheckResult, WitnessOutcome, WitnessRun};

use super::witness_run::{bounded, run_alone};
use super::{Acted, Run};
use crate::fact::{Fact, LeaseRecord};
use crate::ports::Workspace;
use crate::resident::FoldError;
use crate::store::TickStats;
use crate::witness::{check, digest, not_run};

/// Which of the two runs a tick makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    /// At the commit, before the fix is written.
    Before,
    /// On the verified fix.
    After,
}

pub(super) async fn witness_fix<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    side: Side,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let r = run.r;
    let Some(finding) = r.attempt.finding.as_ref() else {
        return Acted::now(Vec::new());
    };
    let record = |witness: WitnessRun| Acted::now(vec![Fact::Witnessed { witness }]);
    let decision = r.attempt.decision.as_ref();
    let witness = match (side, &r.attempt.witness) {
        (Side::Before, _) => decision.and_then(|d| d.witness.first()),
        // The witness that ran before the fix, as the current decision
        // holds it: a repair's decision that changed it is not that witness.
        (Side::After, Some(before)) => {
            decision.and_then(|d| d.witness.iter().find(|w| Some(digest(&w.content)) == before.sha256))
        }
        (Side::After, None) => return Acted::now(Vec::new()),
    };
    let Some(witness) = witness else {
        return record(match (side, &r.attempt.witness) {
            (Side::After, Some(before)) => WitnessRun {
                outcome: WitnessOutcome::CouldNotRun,
                reason: "the repair's decision changed the witness after it ran before the fix, so it was not run \
                         after it"
                    .into(),
                ..before.clone()
            },
            _ => not_run(finding, WitnessOutcome::Absent, "the claim came without a witness".into(), None),
        });
    };
    let changes: Vec<&str> = decision.map(|d| d.changes.iter().map(|c| c.path.as_str()).collect()).unwrap_or_default();
    let policy = &run.stimulus.policy.review;
    let refused = if changes.contains(&witness.path.as_str()) {
        Some(format!("the witness path `{}` is a file the fix changes", witness.path))
    } else {
        check(witness, &r.discovery.files, &[], policy).err().map(|e| e.to_string())
    };
    if let Some(reason) = refused {
        let rejected = not_run(finding, WitnessOutcome::Rejected, reason, Some(witness));
        return record(WitnessRun { before: r.attempt.witness.as_ref().and_then(|w| w.before.clone()), ..rejected });
    }
    let label = if side == Side::Before { "witness-before" } else { "witness-after" };
    let result = match run_alone(run, lease, workspace, stats, witness, label).await {
        Ok(Ok(result)) => bounded(result),
        // The checkout is as it was: the witness could not run, and the run
        // goes on without it.
        Ok(Err(e)) => {
            let reason = format!("could not run in the sandbox: {e}");
            let not = not_run(finding, WitnessOutcome::CouldNotRun, reason, Some(witness));
            return record(WitnessRun { before: r.attempt.witness.as_ref().and_then(|w| w.before.clone()), ..not });
        }
        // Where the checkout stands is unknown: retried (bounded).
        Err(e) => return run.sandbox_failed("witness", e),
    };
    let timeout_ms = policy.witness.timeout_ms;
    let recorded = match side {
        Side::Before => {
            let outcome = if result.timed_out {
                WitnessOutcome::TimedOut
            } else if result.passed() {
                WitnessOutcome::PassedBeforeFix
            } else {
                WitnessOutcome::FailedBeforeFix
            };
            WitnessRun {
                finding_id: finding.id.clone(),
                outcome,
                reason: reason(outcome, Some(&result), None, timeout_ms),
                path: Some(witness.path.clone()),
                sha256: Some(digest(&witness.content)),
                head: None,
                base: None,
                head_sha: None,
                base_sha: None,
                before: Some(result),
                after: None,
                withheld: false,
            }
        }
        Side::After => {
            let Some(before) = r.attempt.witness.clone() else { return Acted::now(Vec::new()) };
            let outcome =
                before.before.as_ref().map_or(WitnessOutcome::CouldNotRun, |b| WitnessOutcome::judge_fix(b, &result));
            let reason = reason(outcome, before.before.as_ref(), Some(&result), timeout_ms);
            WitnessRun { outcome, reason, after: Some(result), ..before }
        }
    };
    record(recorded)
}

/// Why, in a sentence.
fn reason(
    outcome: WitnessOutcome,
    before: Option<&CheckResult>,
    after: Option<&CheckResult>,
    timeout_ms: u64,
) -> String {
    let exit = |r: Option<&CheckResult>| r.map_or(0, |r| r.exit_code);
    match outcome {
        WitnessOutcome::Reproduced => {
            format!("the witness failed before the fix (exit {}) and passed after it", exit(before))
        }
        WitnessOutcome::FailedBeforeFix => format!(
            "the witness failed before the fix (exit {}); it had not run after the fix when the run ended",
            exit(before)
        ),
        WitnessOutcome::PassedBeforeFix => "the witness passed before the fix: the claimed bug did not show".into(),
        WitnessOutcome::FailedAfterFix => {
            format!(
                "the witness still failed after the verified fix (exit {}): the fix does not make it pass",
                exit(after)
            )
        }
        WitnessOutcome::TimedOut => {
            let at = if after.is_some_and(|a| a.timed_out) { "after" } else { "before" };
            format!("the witness was stopped {at} the fix at review.witness.timeoutMs ({timeout_ms} ms)")
        }
        other => format!("the witness {other}"),
    }
}
