//! Witness: run the model's test for its bug claim in the sandbox at the
//! pull request's head, then at its base, and record what it showed
//! ([`Fact::Witnessed`]) before planning (`docs/witness.md`).
//!
//! Two ticks, each one bounded command (`review.witness.timeoutMs`): the
//! first writes the witness, runs it on the head's checkout and removes it,
//! recording [`WitnessOutcome::FailedOnHead`] (or a final outcome when it
//! passed, timed out, or could not run); the second puts the base's
//! versions of the changed files in place (the head's with the diff's hunks
//! undone) with the witness, runs it, and puts the head back, witness
//! removed, so the checks and the published tree never see it. The command
//! is the policy's, the path its last argument; the model names the file
//! only.

use agent_zero_contracts::{CheckResult, ProposedChange, Witness, WitnessOutcome, WitnessRun};

use super::witness_run::{bounded, first, remove, run_alone};
use super::{Acted, Run};
use crate::fact::{Fact, LeaseRecord};
use crate::ports::{Workspace, WorkspaceError};
use crate::resident::FoldError;
use crate::store::TickStats;
use crate::witness::{base_unavailable, check, digest, not_run, patches, rebuild_base};

pub(super) async fn witness<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    workspace: &W,
    stats: &mut TickStats,
) -> Result<Acted, FoldError> {
    let r = run.r;
    let Some(finding) = r.attempt.finding.as_ref() else {
        return Acted::now(Vec::new());
    };
    let record = |witness: WitnessRun| Acted::now(vec![Fact::Witnessed { witness }]);
    let Some(witness) = r.attempt.decision.as_ref().and_then(|d| d.witness.first()) else {
        let reason = "the claim came without a witness".to_owned();
        return record(not_run(finding, WitnessOutcome::Absent, reason, None));
    };
    let policy = &run.stimulus.policy.review;
    let (ledger, diff) = (r.discovery.review.as_ref(), r.discovery.diff.as_deref());
    let changed: Vec<(String, String)> = diff.map(patches).unwrap_or_default();
    let changed_paths: Vec<String> = changed.iter().map(|(p, _)| p.clone()).collect();
    if let Err(refused) = check(witness, &r.discovery.files, &changed_paths, policy) {
        return record(not_run(finding, WitnessOutcome::Rejected, refused.to_string(), Some(witness)));
    }
    if let Some(reason) = ledger.and_then(|l| base_unavailable(l, diff)) {
        let reason = format!("could not run at the base: {reason}");
        return record(not_run(finding, WitnessOutcome::CouldNotRun, reason, Some(witness)));
    }
    let Some(earlier) = r.attempt.witness.as_ref() else {
        // The first tick: at the head, the checkout as leased.
        return on_head(run, lease, workspace, stats, witness).await;
    };
    // The second tick: the witness that failed on the head, as the decision holds it.
    if Some(digest(&witness.content)) != earlier.sha256 {
        let reason = "the decision's witness is not the one that ran on the head".to_owned();
        return record(WitnessRun { outcome: WitnessOutcome::CouldNotRun, reason, ..earlier.clone() });
    }
    // The head's changed files, as the checkout holds them.
    let mut wanted = changed_paths.clone();
    let overwrites = r.discovery.files.contains(&witness.path);
    if overwrites {
        wanted.push(witness.path.clone());
    }
    stats.sandbox_calls += 1;
    let read = match workspace.read_files(lease, &wanted).await {
        Ok(read) => read,
        Err(e) => return run.sandbox_failed("witness-read", e),
    };
    let head_of = |path: &str| read.iter().find(|(p, _)| p == path).and_then(|(_, c)| c.clone());
    let mut base = Vec::new();
    for (path, patch) in &changed {
        match rebuild_base(head_of(path).as_deref(), patch) {
            Ok(content) => base.push((path.clone(), content)),
            Err(why) => {
                let reason = format!("could not rebuild the base's `{path}`: {why}");
                return record(WitnessRun { outcome: WitnessOutcome::CouldNotRun, reason, ..earlier.clone() });
            }
        }
    }
    let original = overwrites.then(|| head_of(&witness.path)).flatten();
    let ran = run_base(run, lease, workspace, stats, witness, &base).await;
    let restored = restore(run, lease, workspace, stats, witness, original, &changed, &base, &head_of).await;
    let base_run = match (ran, restored) {
        (Ok(ran), Ok(())) => ran,
        // The checkout is the head's again: the witness could not run at
        // the base, and the run goes on without it.
        (Err(e), Ok(())) => {
            let reason = format!("could not run at the base in the sandbox: {e}");
            return record(WitnessRun { outcome: WitnessOutcome::CouldNotRun, reason, ..earlier.clone() });
        }
        // Where the checkout stands is unknown: retried (bounded), and a
        // retry that finds the base's lines instead of the head's records
        // that it could not run.
        (_, Err(e)) => return run.sandbox_failed("witness", e),
    };
    let Some(head) = earlier.head.as_ref() else { return Acted::now(Vec::new()) };
    let outcome = WitnessOutcome::judge(head, &base_run);
    let reason = reason(outcome, head, &base_run, policy.witness.timeout_ms);
    record(WitnessRun { outcome, reason, base: Some(bounded(base_run)), ..earlier.clone() })
}

/// The first tick: the witness written into the head's checkout, run, and
/// removed (or the file it replaced put back).
async fn on_head<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    workspace: &W,
    stats: &mut TickStats,
    witness: &Witness,
) -> Result<Acted, FoldError> {
    let Some(finding) = run.r.attempt.finding.as_ref() else { return Acted::now(Vec::new()) };
    let record = |witness: WitnessRun| Acted::now(vec![Fact::Witnessed { witness }]);
    let head = match run_alone(run, lease, workspace, stats, witness, "witness-head").await {
        Ok(Ok(head)) => bounded(head),
        Ok(Err(e)) => {
            let reason = format!("could not run in the sandbox: {e}");
            return record(not_run(finding, WitnessOutcome::CouldNotRun, reason, Some(witness)));
        }
        Err(e) => return run.sandbox_failed("witness", e),
    };
    let outcome = if head.timed_out {
        WitnessOutcome::TimedOut
    } else if head.passed() {
        WitnessOutcome::PassedOnHead
    } else {
        WitnessOutcome::FailedOnHead
    };
    let timeout_ms = run.stimulus.policy.review.witness.timeout_ms;
    let reason = match outcome {
        WitnessOutcome::FailedOnHead => format!(
            "the witness failed on the head (exit {}); it had not run on the base when the run ended",
            head.exit_code
        ),
        _ => reason(outcome, &head, &head, timeout_ms),
    };
    let pr = run.stimulus.input.pull_request.as_ref();
    record(WitnessRun {
        finding_id: finding.id.clone(),
        outcome,
        reason,
        path: Some(witness.path.clone()),
        sha256: Some(digest(&witness.content)),
        head: Some(head),
        base: None,
        head_sha: pr.map(|p| p.head_sha.clone()),
        base_sha: pr.and_then(|p| p.base_sha.clone()),
        before: None,
        after: None,
        withheld: false,
    })
}

/// Puts the base's versions of the changed files and the witness in
/// place and runs it.
async fn run_base<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    workspace: &W,
    stats: &mut TickStats,
    witness: &Witness,
    base: &[(String, Option<String>)],
) -> Result<CheckResult, WorkspaceError> {
    let key = &run.cx.key;
    let policy = &run.stimulus.policy.review.witness;
    let timeout = policy.timeout_ms.min(run.remaining_ms());
    let mut argv = policy.command.clone();
    argv.push(witness.path.clone());
    let (mut present, absent) = split(base);
    present.push(ProposedChange {
        path: witness.path.clone(),
        content: witness.content.clone(),
        reason: "the claim's witness (never published)".into(),
    });
    stats.sandbox_calls += 1;
    workspace.write_files(lease, &present, &format!("{key}:witness-base")).await?;
    if !absent.is_empty() {
        stats.sandbox_calls += 1;
        remove(workspace, lease, &absent, &format!("{key}:witness-base-rm")).await?;
    }
    stats.sandbox_calls += 1;
    first(workspace.run(lease, &[argv], timeout, &format!("{key}:witness-base-run")).await?)
}

/// Puts the head back: its versions of the changed files, none of the
/// files it lacks, and the witness gone (or the file it replaced back).
#[allow(clippy::too_many_arguments)]
async fn restore<W: Workspace>(
    run: &Run<'_>,
    lease: &LeaseRecord,
    workspace: &W,
    stats: &mut TickStats,
    witness: &Witness,
    original: Option<String>,
    changed: &[(String, String)],
    base: &[(String, Option<String>)],
    head_of: &impl Fn(&str) -> Option<String>,
) -> Result<(), WorkspaceError> {
    let key = &run.cx.key;
    let head: Vec<(String, Option<String>)> = changed
        .iter()
        .map(|(p, _)| (p.clone(), head_of(p)))
        .chain(std::iter::once((witness.path.clone(), original)))
        .collect();
    let (mut present, absent) = split(&head);
    // Only what the base step changed needs writing back.
    present.retain(|c| {
        base.iter().any(|(p, b)| *p == c.path && b.as_deref() != Some(c.content.as_str())) || c.path == witness.path
    });
    if !present.is_empty() {
        stats.sandbox_calls += 1;
        workspace.write_files(lease, &present, &format!("{key}:witness-restore")).await?;
    }
    if !absent.is_empty() {
        stats.sandbox_calls += 1;
        remove(workspace, lease, &absent, &format!("{key}:witness-restore-rm")).await?;
    }
    Ok(())
}

/// The files of `versions` that exist (as writes) and the paths that do not.
fn split(versions: &[(String, Option<String>)]) -> (Vec<ProposedChange>, Vec<String>) {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for (path, content) in versions {
        match content {
            Some(content) => present.push(ProposedChange {
                path: path.clone(),
                content: content.clone(),
                reason: "the witness's checkout (never published)".into(),
            }),
            None => absent.push(path.clone()),
        }
    }
    (present, absent)
}

/// Why, in a sentence.
fn reason(outcome: WitnessOutcome, head: &CheckResult, base: &CheckResult, timeout_ms: u64) -> String {
    match outcome {
        WitnessOutcome::Reproduced => {
            format!("the witness failed on the head (exit {}) and passed on the base", head.exit_code)
        }
        WitnessOutcome::PassedOnHead => "the witness passed on the head: the claimed bug did not show".into(),
        WitnessOutcome::FailedOnBase => {
            format!("the witness failed on the base too (exit {}): it does not tell the change apart", base.exit_code)
        }
        WitnessOutcome::TimedOut => {
            let at = if head.timed_out { "head" } else { "base" };
            format!("the witness was stopped on the {at} at review.witness.timeoutMs ({timeout_ms} ms)")
        }
        other => format!("the witness {other}"),
    }
}
