//! A bug claim's witness, the pure half (`docs/witness.md`): whether a run
//! owes one, whether the model's file may be written, the pull request's
//! base rebuilt from the head's files and the diff the review read, and
//! whether a claim stays off the diff's lines. `act/witness.rs` does the
//! sandbox half.

use agent_zero_agent::policy::ReviewPolicy;
use agent_zero_contracts::{
    ChangeRisk, Finding, MAX_WITNESS_BYTES, ReviewLedger, Verdict, Witness, WitnessOutcome, WitnessRun,
    is_repository_relative_path,
};

use crate::resident::Resident;

/// Why a witness cannot be run, before anything touches the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Refused {
    /// Its path is not a new file inside the checkout.
    #[error("the witness path `{path}` {reason}")]
    Path { path: String, reason: &'static str },
    /// It is larger than [`MAX_WITNESS_BYTES`].
    #[error("the witness is {bytes} bytes, over the {MAX_WITNESS_BYTES}-byte limit of a witness")]
    TooLarge { bytes: usize },
}

/// Whether `finding` is a bug claim: a behaviour it says is wrong (a
/// `behavioral` or `high-impact` change), which a test can show.
pub(crate) fn is_bug_claim(finding: &Finding) -> bool {
    finding.claim.change_risk != ChangeRisk::Mechanical
}

/// Whether the run owes its finding a witness step now: witnesses are on
/// (`review.witness.command`), the run reads a pull request's diff, the
/// finding was accepted and is a bug claim (or came with a witness), no
/// witness was recorded yet, and nothing was written.
pub(crate) fn owed(resident: &Resident) -> bool {
    let Some(stimulus) = resident.stimulus.as_deref() else { return false };
    let attempt = &resident.attempt;
    let Some(finding) = attempt.finding.as_ref().filter(|f| f.verdict == Verdict::Accepted) else { return false };
    let brought = attempt.decision.as_ref().is_some_and(|d| !d.witness.is_empty());
    stimulus.policy.review.witness.enabled()
        && resident.discovery.review.is_some()
        && attempt.witness.as_ref().is_none_or(|w| w.outcome == WitnessOutcome::FailedOnHead)
        && resident.attempts() == 0
        && (brought || is_bug_claim(finding))
}

/// Whether an issue run owes its finding the witness's first run, before
/// the fix (`act/witness_fix.rs`): witnesses are on, the run is an issue's,
/// it is about to write its first change, the finding was accepted and is
/// a bug claim (or came with a witness), and no witness was recorded yet.
pub(crate) fn owed_before_fix(resident: &Resident) -> bool {
    let Some(stimulus) = resident.stimulus.as_deref() else { return false };
    let attempt = &resident.attempt;
    let Some(finding) = attempt.finding.as_ref().filter(|f| f.verdict == Verdict::Accepted) else { return false };
    let brought = attempt.decision.as_ref().is_some_and(|d| !d.witness.is_empty());
    stimulus.trigger == agent_zero_contracts::Trigger::Issue
        && stimulus.policy.review.witness.enabled()
        && attempt.witness.is_none()
        && attempt.applied.is_empty()
        && (brought || is_bug_claim(finding))
}

/// Whether an issue run owes its witness the second run, on the verified
/// fix: it failed before the fix, and the diff was not reviewed yet.
pub(crate) fn owed_after_fix(resident: &Resident) -> bool {
    let attempt = &resident.attempt;
    attempt.witness.as_ref().is_some_and(|w| w.outcome == WitnessOutcome::FailedBeforeFix) && !attempt.reviewed
}

/// Whether a run of `stimulus` may write and run a witness: witnesses are
/// on and the run reads a pull request's diff (a review, or review
/// feedback on a pull request).
pub(crate) fn may_run(stimulus: &crate::fact::Stimulus) -> bool {
    use agent_zero_contracts::Trigger;
    let on_a_pull_request = match stimulus.trigger {
        Trigger::Proactive => true,
        Trigger::Feedback => stimulus.input.pull_request.is_some(),
        Trigger::Issue => false,
    };
    stimulus.policy.review.witness.enabled() && on_a_pull_request
}

/// Checks the model's `witness` before it is written: a repository-relative
/// path (no `..`, nothing in `.git`), not one of the pull request's changed
/// files (the base is rebuilt over them), not an existing file unless the
/// policy allows it, and at most [`MAX_WITNESS_BYTES`].
pub(crate) fn check(
    witness: &Witness,
    files: &[String],
    changed: &[String],
    policy: &ReviewPolicy,
) -> Result<(), Refused> {
    let path = witness.path.as_str();
    let refuse = |reason| Err(Refused::Path { path: path.to_owned(), reason });
    if !is_repository_relative_path(path) || path.contains('\\') || path.ends_with('/') {
        return refuse("is not a repository-relative file path (no `..`, no `.git`, no absolute path)");
    }
    if path.split('/').any(|s| s.is_empty() || s == ".") {
        return refuse("has an empty or `.` segment");
    }
    if changed.iter().any(|c| c == path) {
        return refuse("is a file the pull request changes");
    }
    if !policy.witness.allow_overwrite && files.iter().any(|f| f == path) {
        return refuse("is an existing file (review.witness.allowOverwrite is off)");
    }
    if witness.content.len() > MAX_WITNESS_BYTES {
        return Err(Refused::TooLarge { bytes: witness.content.len() });
    }
    Ok(())
}

/// Why the base cannot be rebuilt from what the review read, if it cannot:
/// only a diff read whole (every changed file, against the base) holds the
/// base's lines.
pub(crate) fn base_unavailable(ledger: &ReviewLedger, diff: Option<&str>) -> Option<String> {
    if diff.is_none() {
        return Some("the pull request's diff was not read".into());
    }
    if let Some(since) = &ledger.since {
        return Some(format!("the review read only the changes since {since}, not the whole pull request"));
    }
    if !ledger.is_complete() {
        return Some("the review did not read the whole diff, so the base cannot be rebuilt from it".into());
    }
    None
}

/// The pull request's changed files as the diff text holds them: each path
/// with its hunks, in order.
pub(crate) fn patches(diff: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in diff.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            let rest = rest.trim_end_matches('\n');
            // `a/{path} b/{path}`: the path is the first half.
            let half = (rest.len().saturating_sub(3)) / 2;
            out.push((rest[..half].to_owned(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
        }
    }
    out
}

/// The base's version of a file from the head's (`None`: absent) and its
/// patch (`base...head` hunks): each hunk's right side, checked against the
/// head, replaced by its left side. `Ok(None)`: the file is absent at the
/// base (the pull request added it).
pub(crate) fn rebuild_base(head: Option<&str>, patch: &str) -> Result<Option<String>, String> {
    let head_lines: Vec<&str> = head.map(|h| h.split_inclusive('\n').collect()).unwrap_or_default();
    let mut base = String::new();
    let mut at = 0usize; // next head line to copy
    let mut added_file = false;
    let mut lines = patch.lines().peekable();
    while let Some(header) = lines.next() {
        let Some(((left_start, left_len), (right_start, right_len))) = hunk_header(header) else {
            return Err(format!("`{header}` is not a hunk header"));
        };
        added_file = left_start == 0 && left_len == 0;
        // `+c,0` shows no head line: its removed lines go after line c;
        // otherwise the hunk starts at line c.
        let start = if right_len == 0 { right_start } else { right_start.saturating_sub(1) } as usize;
        if start < at || start > head_lines.len() {
            return Err(format!("hunk `{header}` is outside the head's file"));
        }
        base.extend(head_lines[at..start].iter().copied());
        at = start;
        while let Some(line) = lines.peek().filter(|l| !l.starts_with("@@")) {
            let line = *line;
            lines.next();
            let no_newline = lines.peek().is_some_and(|n| n.starts_with('\\'));
            if no_newline {
                lines.next();
            }
            let (kind, text) = line.split_at(line.len().min(1));
            match kind {
                "+" | " " | "" => {
                    let got = head_lines.get(at).map(|l| l.trim_end_matches('\n'));
                    if got != Some(text) {
                        return Err(format!("the head does not hold line {} as the diff shows it", at + 1));
                    }
                    if kind != "+" {
                        base.push_str(head_lines[at]);
                    }
                    at += 1;
                }
                "-" => {
                    base.push_str(text);
                    if !no_newline {
                        base.push('\n');
                    }
                }
                _ => {}
            }
        }
    }
    base.extend(head_lines[at.min(head_lines.len())..].iter().copied());
    Ok((!(added_file && base.is_empty())).then_some(base))
}

/// `((a, b), (c, d))` of `@@ -a,b +c,d @@` (a length left out is 1).
fn hunk_header(header: &str) -> Option<((u32, u32), (u32, u32))> {
    let rest = header.strip_prefix("@@ -")?;
    let (left, rest) = rest.split_once(" +")?;
    let right = rest.split_once(' ').map_or(rest, |(r, _)| r);
    let range = |text: &str| -> Option<(u32, u32)> {
        match text.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((text.parse().ok()?, 1)),
        }
    };
    Some((range(left)?, range(right)?))
}

/// The record of a witness that never ran.
pub(crate) fn not_run(
    finding: &Finding,
    outcome: WitnessOutcome,
    reason: String,
    witness: Option<&Witness>,
) -> WitnessRun {
    WitnessRun {
        finding_id: finding.id.clone(),
        outcome,
        reason,
        path: witness.map(|w| w.path.clone()),
        sha256: witness.map(|w| digest(&w.content)),
        head: None,
        base: None,
        head_sha: None,
        base_sha: None,
        before: None,
        after: None,
        withheld: false,
    }
}

/// SHA-256 of `text`, lowercase hex.
pub(crate) fn digest(text: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// The witness as the evidence records it: with `withheld` set when
/// `review.requireWitness` keeps the claim off the diff's lines (a bug
/// claim whose witness did not reproduce it, or that came without one).
pub(crate) fn concluded(resident: &Resident) -> Option<WitnessRun> {
    let mut run = resident.attempt.witness.clone()?;
    run.withheld = withheld(resident);
    Some(run)
}

/// Whether `review.requireWitness` keeps the run's finding off the lines
/// (a review), or kept its verified fix from completing (an issue run).
pub(crate) fn withheld(resident: &Resident) -> bool {
    let Some(stimulus) = resident.stimulus.as_deref() else { return false };
    if stimulus.trigger == agent_zero_contracts::Trigger::Issue {
        return resident.attempt.reviewed && blocks_fix(resident);
    }
    unreproduced_bug_claim(resident)
}

/// The stop code of an issue run's verified fix whose witness did not
/// reproduce the bug, under `review.requireWitness`.
pub(crate) const WITNESS_NOT_REPRODUCED: &str = "witness-not-reproduced";

/// Whether `review.requireWitness` stops an issue run's verified fix for
/// a person: its bug claim's witness did not reproduce the bug (or it came
/// without one), and no person approved that stop.
pub(crate) fn blocks_fix(resident: &Resident) -> bool {
    let lifted = resident.approval.lifted.iter().any(|c| c == WITNESS_NOT_REPRODUCED);
    resident.stimulus.as_deref().is_some_and(|s| s.trigger == agent_zero_contracts::Trigger::Issue)
        && unreproduced_bug_claim(resident)
        && !lifted
}

/// `review.requireWitness` is on and the run's bug claim was not reproduced.
fn unreproduced_bug_claim(resident: &Resident) -> bool {
    let Some(stimulus) = resident.stimulus.as_deref() else { return false };
    let Some(finding) = resident.attempt.finding.as_ref() else { return false };
    let reproduced = resident.attempt.witness.as_ref().is_some_and(WitnessRun::reproduced);
    stimulus.policy.review.require_witness && is_bug_claim(finding) && !reproduced
}

/// Why an issue run waits at its review: `review.requireWitness` and a
/// witness that did not reproduce the bug.
pub(crate) fn fix_refusal(resident: &Resident) -> Option<agent_zero_contracts::Refusal> {
    if !blocks_fix(resident) {
        return None;
    }
    let why = resident.attempt.witness.as_ref().map_or("no witness was run", |w| w.reason.as_str());
    let message = format!(
        "the fix passed its checks, but review.requireWitness is on and its witness did not reproduce the bug: {why}"
    );
    Some(agent_zero_contracts::Refusal { code: WITNESS_NOT_REPRODUCED.into(), message })
}

#[cfg(test)]
#[path = "witness_tests.rs"]
mod tests;
