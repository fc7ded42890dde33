//! Verify: run the repository's checks against the written change, then
//! review it, repair it, or stop for a person after `agent.maxAttempts`.
//!
//! Where a host's invocations are shorter than a check run
//! ([`crate::Limits::checks_in_background`]), the checks are started as a
//! background job in the sandbox ([`Fact::ChecksStarted`]) and every later
//! tick polls it: a poll that finds them running commits nothing and runs
//! the same seq's tick again after [`crate::Limits::check_poll_ms`], so the
//! log grows by one entry for the start and one for the results, whatever
//! the checks' length.

use agent_zero_contracts::{CheckResult, TaskState, TerminalState, all_checks_passed};
use sha2::{Digest, Sha256};

use super::{Acted, Run};
use crate::fact::{Fact, LeaseRecord};
use crate::ports::{ChecksPoll, Workspace};
use crate::resident::{CHECKS_LOST, ChecksJob, FoldError};
use crate::step::backoff;
use crate::store::TickStats;

pub(super) async fn verify<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    job: Option<&ChecksJob>,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let r = run.r;
    let checks = &r.discovery.checks;
    let limits = run.cx.limits;
    stats.sandbox_calls += 1;
    if !limits.checks_in_background {
        return match workspace.run(lease, checks, run.check_budget_ms(), &run.cx.key).await {
            Ok(results) => checked(run, results),
            Err(e) => run.sandbox_failed("run-checks", e),
        };
    }
    let Some(job) = job else {
        // Each command is bounded by the attempt's share of what is left
        // of the run, as the synchronous checks are; a job still running
        // when the run's `agent.timeoutMs` is up ends with the run (its
        // lease released).
        let name = job_name(&lease.id, r.attempts(), run.cx.seq);
        return match workspace.start_checks(lease, checks, run.check_budget_ms(), &name).await {
            Ok(()) => {
                let started = Fact::ChecksStarted { attempt: r.attempts(), job: name, lease: lease.id.clone() };
                Acted::after(vec![started], limits.check_poll_ms)
            }
            Err(e) => run.sandbox_failed("start-checks", e),
        };
    };
    match workspace.poll_checks(lease, checks, run.remaining_ms(), &job.job).await {
        Ok(ChecksPoll::Running) => {
            Acted::again(poll_delay(limits.check_poll_ms, run.cx.now_ms.saturating_sub(job.started_ms)))
        }
        Ok(ChecksPoll::Done(results)) => checked(run, results),
        Ok(ChecksPoll::Lost(reason)) => lost(run, format!("job `{}`: {reason}", job.job)),
        Err(e) => run.sandbox_failed("poll-checks", e),
    }
}

/// Longest wait between two polls of running checks.
const MAX_POLL_MS: u64 = 60_000;

/// How long to wait before polling checks that have run `elapsed_ms`: a
/// sixth of that, between `poll_ms` and a minute, so a poll finds finished
/// checks at most about a sixth late (or `poll_ms`), and a 30-minute suite
/// costs about sixty polls (each a queue message on Cloudflare) where a
/// poll every second would cost 1,800.
pub(crate) fn poll_delay(poll_ms: u64, elapsed_ms: u64) -> u64 {
    (elapsed_ms / 6).clamp(poll_ms, MAX_POLL_MS.max(poll_ms))
}

/// The checks' results: on to review, to a repair, or the end.
fn checked(run: &Run<'_>, results: Vec<CheckResult>) -> Result<Acted, FoldError> {
    let r = run.r;
    let checks = &r.discovery.checks;
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
        // As the reference does: a person decides, and an approval buys one
        // more attempt (a repair from this failing output).
        let summary = format!(
            "Verification still fails after {attempt} attempt(s) (agent.maxAttempts {}); a person may approve another try",
            r.max_attempts
        );
        run.finish(facts, TerminalState::NeedsHuman, &summary, None)
    }
}

/// A lost job: counted as a sandbox error, and the next tick starts the
/// checks again (bounded by `max_sandbox_errors`).
fn lost(run: &Run<'_>, reason: String) -> Result<Acted, FoldError> {
    let tries = run.r.sandbox.errors + 1;
    let fact = Fact::SandboxError { operation: CHECKS_LOST.into(), reason: format!("the checks were lost: {reason}") };
    Acted::after(vec![fact], backoff(run.cx.limits, tries))
}

/// The job's name in the sandbox: unique per lease, attempt and seq, and
/// within the 64 bytes of `[A-Za-z0-9._-]` a job name may have (a lease id
/// holds the task id, up to 128 bytes, so it is digested).
pub(crate) fn job_name(lease_id: &str, attempt: u32, seq: u64) -> String {
    let digest = Sha256::digest(lease_id.as_bytes());
    let short = hex::encode(&digest[..8]);
    format!("checks-{short}-a{attempt}-s{seq}")
}

#[cfg(test)]
mod tests {
    use super::{job_name, poll_delay};

    #[test]
    fn polls_back_off_with_the_checks_age_up_to_a_minute() {
        assert_eq!(poll_delay(5_000, 0), 5_000);
        assert_eq!(poll_delay(5_000, 30_000), 5_000);
        assert_eq!(poll_delay(5_000, 60_000), 10_000);
        assert_eq!(poll_delay(5_000, 3_600_000), 60_000);
        assert_eq!(poll_delay(90_000, 0), 90_000, "a poll interval above a minute is kept");
        // A 30-minute suite: polls until it is done.
        let (mut at, mut polls) = (0, 0);
        while at < 1_800_000 {
            at += poll_delay(5_000, at);
            polls += 1;
        }
        assert!((40..=70).contains(&polls), "{polls} polls");
        let (mut at, mut polls) = (0, 0);
        while at < 1_800_000 {
            at += poll_delay(1_000, at);
            polls += 1;
        }
        assert!((50..=70).contains(&polls), "{polls} polls from a 1 s floor");
    }

    #[test]
    fn job_names_are_short_safe_and_distinct() {
        let long = format!("lease-{}", "t".repeat(128));
        for name in [job_name("lease-a", 1, 9), job_name(&long, u32::MAX, u64::MAX)] {
            assert!(name.len() <= 64, "{name}");
            assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)), "{name}");
        }
        assert_ne!(job_name("lease-a", 1, 9), job_name("lease-b", 1, 9));
        assert_ne!(job_name("lease-a", 1, 9), job_name("lease-a", 2, 9));
        assert_ne!(job_name("lease-a", 1, 9), job_name("lease-a", 1, 10));
    }
}
