//! A witness for a bug claim: a small test the model writes that should
//! fail on a pull request's head and pass on its base (a review), or fail
//! before an issue's fix and pass after it (an issue run), and what running
//! it in the sandbox at both showed (`docs/witness.md`).
//!
//! The model supplies the file (path and contents) only; the command that
//! runs it is the repository policy's (`review.witness.command`).

use serde::{Deserialize, Serialize};

use crate::CheckResult;

/// The test file a model may attach to a bug claim. Untrusted: its path is
/// checked, its size bounded, and it is never pushed or published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Witness {
    /// Repository-relative path of a new file.
    pub path: String,
    /// The complete file.
    pub content: String,
}

/// Most bytes of a witness's contents.
pub const MAX_WITNESS_BYTES: usize = 16 * 1024;

/// How a witness behaved; only [`WitnessOutcome::Reproduced`] supports the
/// claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum WitnessOutcome {
    /// It failed on the head and passed on the base.
    Reproduced,
    /// It passed on the head: the claimed bug did not show.
    PassedOnHead,
    /// It failed on the base too: it does not tell the change apart.
    FailedOnBase,
    /// It was stopped at `review.witness.timeoutMs` on one of the commits.
    TimedOut,
    /// It could not be run (no witness command, the base could not be
    /// rebuilt, the sandbox failed).
    CouldNotRun,
    /// Its path or size was refused before anything ran.
    Rejected,
    /// The claim came without a witness.
    Absent,
    /// It failed on the head and has not run on the base (yet: it runs in
    /// the next tick; a run that ends before that keeps this outcome).
    FailedOnHead,
    /// An issue run's witness failed before the fix and has not run after
    /// it (yet: it runs once the fix is verified; a run that ends before
    /// that keeps this outcome).
    FailedBeforeFix,
    /// An issue run's witness passed before the fix: the bug did not show.
    PassedBeforeFix,
    /// An issue run's witness still failed after the verified fix.
    FailedAfterFix,
}

impl WitnessOutcome {
    /// The kebab-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Reproduced => "reproduced",
            Self::PassedOnHead => "passed-on-head",
            Self::FailedOnBase => "failed-on-base",
            Self::TimedOut => "timed-out",
            Self::CouldNotRun => "could-not-run",
            Self::Rejected => "rejected",
            Self::Absent => "absent",
            Self::FailedOnHead => "failed-on-head",
            Self::FailedBeforeFix => "failed-before-fix",
            Self::PassedBeforeFix => "passed-before-fix",
            Self::FailedAfterFix => "failed-after-fix",
        }
    }

    /// What it was, from its runs at the head and the base: reproduced
    /// only when it failed (ran to its end, exited non-zero) on the head
    /// and passed on the base.
    pub fn judge(head: &CheckResult, base: &CheckResult) -> Self {
        if head.timed_out || base.timed_out {
            Self::TimedOut
        } else if head.passed() {
            Self::PassedOnHead
        } else if !base.passed() {
            Self::FailedOnBase
        } else {
            Self::Reproduced
        }
    }

    /// What an issue run's witness was, from its runs before the fix and
    /// after it: reproduced only when it failed (ran to its end, exited
    /// non-zero) before and passed after.
    pub fn judge_fix(before: &CheckResult, after: &CheckResult) -> Self {
        match Self::judge(before, after) {
            Self::PassedOnHead => Self::PassedBeforeFix,
            Self::FailedOnBase => Self::FailedAfterFix,
            other => other,
        }
    }
}

impl std::fmt::Display for WitnessOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What running a claim's witness showed, as the evidence records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitnessRun {
    /// The finding the witness is for.
    pub finding_id: String,
    pub outcome: WitnessOutcome,
    /// Why, in a sentence (for every outcome).
    pub reason: String,
    /// The witness's path (absent when the claim had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// SHA-256 of its contents, lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Its run on the pull request's head, output bounded by
    /// `runner.maxOutputBytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<CheckResult>,
    /// Its run on the base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<CheckResult>,
    /// The commits it ran at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_sha: Option<String>,
    /// An issue run's: its run at the commit, before the fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<CheckResult>,
    /// An issue run's: its run on the verified fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<CheckResult>,
    /// True when `review.requireWitness` kept the claim off the diff's
    /// lines (a review), or kept the fix from completing (an issue run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub withheld: bool,
}

impl WitnessRun {
    /// Whether the claim was reproduced.
    pub fn reproduced(&self) -> bool {
        self.outcome == WitnessOutcome::Reproduced
    }

    /// Milliseconds the witness ran in the sandbox, at both commits.
    pub fn sandbox_ms(&self) -> u64 {
        self.head.iter().chain(&self.base).chain(&self.before).chain(&self.after).map(|r| r.duration_ms).sum()
    }

    /// Whether this is an issue run's witness (before and after a fix)
    /// rather than a review's (head and base).
    pub fn of_a_fix(&self) -> bool {
        matches!(
            self.outcome,
            WitnessOutcome::FailedBeforeFix | WitnessOutcome::PassedBeforeFix | WitnessOutcome::FailedAfterFix
        ) || self.before.is_some()
            || self.after.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(code: i32, timed_out: bool) -> CheckResult {
        CheckResult {
            command: vec!["python3".into(), "w.py".into()],
            exit_code: code,
            stdout: String::new(),
            stderr: String::new(),
            duration_ms: 7,
            truncated_bytes: 0,
            timed_out,
        }
    }

    #[test]
    fn reproduced_only_when_it_fails_on_head_and_passes_on_base() {
        assert_eq!(WitnessOutcome::judge(&ran(1, false), &ran(0, false)), WitnessOutcome::Reproduced);
        assert_eq!(WitnessOutcome::judge(&ran(0, false), &ran(0, false)), WitnessOutcome::PassedOnHead);
        assert_eq!(WitnessOutcome::judge(&ran(1, false), &ran(1, false)), WitnessOutcome::FailedOnBase);
        assert_eq!(WitnessOutcome::judge(&ran(-1, true), &ran(0, false)), WitnessOutcome::TimedOut);
        assert_eq!(WitnessOutcome::judge(&ran(1, false), &ran(-1, true)), WitnessOutcome::TimedOut);
    }

    #[test]
    fn a_fix_is_reproduced_only_when_it_fails_before_and_passes_after() {
        let judge = WitnessOutcome::judge_fix;
        assert_eq!(judge(&ran(1, false), &ran(0, false)), WitnessOutcome::Reproduced);
        assert_eq!(judge(&ran(0, false), &ran(0, false)), WitnessOutcome::PassedBeforeFix);
        assert_eq!(judge(&ran(1, false), &ran(1, false)), WitnessOutcome::FailedAfterFix);
        assert_eq!(judge(&ran(1, false), &ran(-1, true)), WitnessOutcome::TimedOut);
        assert_eq!(WitnessOutcome::FailedAfterFix.as_str(), "failed-after-fix");
    }

    #[test]
    fn a_run_reads_back_and_leaves_out_what_it_lacks() {
        let run = WitnessRun {
            finding_id: "f1".into(),
            outcome: WitnessOutcome::Absent,
            reason: "the claim came without a witness".into(),
            path: None,
            sha256: None,
            head: None,
            base: None,
            head_sha: None,
            base_sha: None,
            before: None,
            after: None,
            withheld: true,
        };
        let json = serde_json::to_value(&run).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"findingId": "f1", "outcome": "absent", "reason": "the claim came without a witness", "withheld": true})
        );
        assert_eq!(serde_json::from_value::<WitnessRun>(json).unwrap(), run);
        let full = WitnessRun { head: Some(ran(1, false)), base: Some(ran(0, false)), withheld: false, ..run };
        assert_eq!(full.sandbox_ms(), 14);
        assert_eq!(serde_json::from_value::<WitnessRun>(serde_json::to_value(&full).unwrap()).unwrap(), full);
    }
}
